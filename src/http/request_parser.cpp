#include "http/request_parser.hpp"

#include <boost/asio/buffer.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/http/error.hpp>

#include <algorithm>
#include <vector>

namespace crcrd::http {

namespace bhttp = boost::beast::http;
using boost::system::error_code;

RequestParser::RequestParser(Request& out, ParserLimits limits) : m_out(out), m_limits(limits) {
    header_limit(
        static_cast<std::uint32_t>(std::min<std::uint64_t>(limits.max_header_bytes, UINT32_MAX)));
}

ParseRefusal transfer_coding_refusal(std::string_view value) {
    // The codings, comma-separated, each trimmed of spaces and tabs (parameters included: a
    // coding with parameters is not chunked).
    std::vector<std::string_view> codings;
    while (true) {
        const auto comma = value.find(',');
        auto item = value.substr(0, comma);
        while (!item.empty() && (item.front() == ' ' || item.front() == '\t'))
            item.remove_prefix(1);
        while (!item.empty() && (item.back() == ' ' || item.back() == '\t')) item.remove_suffix(1);
        if (!item.empty()) codings.push_back(item);
        if (comma == std::string_view::npos) break;
        value.remove_prefix(comma + 1);
    }
    auto chunked = [](std::string_view c) { return boost::beast::iequals(c, "chunked"); };
    const auto count = std::count_if(codings.begin(), codings.end(), chunked);
    if (codings.empty() || !chunked(codings.back()) || count != 1) return ParseRefusal::bad_request;
    return codings.size() == 1 ? ParseRefusal::none : ParseRefusal::not_implemented;
}

ParseRefusal RequestParser::refusal_for(const error_code& ec) const {
    if (!ec) return ParseRefusal::none;
    if (m_refusal != ParseRefusal::none) return m_refusal;
    if (ec == bhttp::error::header_limit || ec == bhttp::error::buffer_overflow)
        return ParseRefusal::headers_too_large;
    if (ec == bhttp::error::body_limit) return ParseRefusal::payload_too_large;
    // end_of_stream, partial_message and transport errors: the client went away or stalled.
    if (ec == bhttp::error::end_of_stream || ec == bhttp::error::partial_message ||
        ec == bhttp::error::need_more) {
        return ParseRefusal::none;
    }
    if (ec.category() == bhttp::make_error_code(bhttp::error::bad_version).category())
        return ParseRefusal::bad_request;
    return ParseRefusal::none;
}

void RequestParser::on_request_impl(bhttp::verb, boost::beast::string_view method_str,
                                    boost::beast::string_view target, int version, error_code&) {
    m_out.method.assign(method_str);
    m_out.target.assign(target);
    const auto q = m_out.target.find('?');
    m_out.path = m_out.target.substr(0, q);
    m_out.query = q == std::string::npos ? std::string() : m_out.target.substr(q + 1);
    m_version = version >= 11 ? 11 : 10;
    m_has_request_line = true;
}

void RequestParser::on_response_impl(int, boost::beast::string_view, int, error_code& ec) {
    ec = bhttp::error::bad_version;
}

void RequestParser::on_field_impl(bhttp::field field, boost::beast::string_view name,
                                  boost::beast::string_view value, error_code& ec) {
    if (!m_header_done) {
        // The header section as a whole is bounded by header_limit, so one field is too.
        m_out.headers.emplace_back(std::string(name), std::string(value));
        if (field == bhttp::field::transfer_encoding) {
            m_transfer_encoding = m_transfer_encoding
                                      ? *m_transfer_encoding + ", " + std::string(value)
                                      : std::string(value);
        }
        return;
    }
    // A trailer field: counted, never kept (nothing in crcrd reads trailers).
    m_framing_bytes += name.size() + value.size() + 4;
    if (m_framing_bytes > m_limits.max_header_bytes) ec = bhttp::error::header_limit;
}

void RequestParser::on_header_impl(error_code& ec) {
    m_header_done = true;
    // Beast reads a body as chunked only when chunked is the last coding, and as empty
    // otherwise: a coding it would ignore is refused before the body is read.
    if (m_transfer_encoding) {
        m_refusal = transfer_coding_refusal(*m_transfer_encoding);
        if (m_refusal != ParseRefusal::none) ec = bhttp::error::bad_transfer_encoding;
    }
}

void RequestParser::on_body_init_impl(const boost::optional<std::uint64_t>& content_length,
                                      error_code&) {
    if (content_length)
        m_out.body.reserve(
            static_cast<std::size_t>(std::min(*content_length, m_limits.max_body_bytes)));
}

std::size_t RequestParser::on_body_impl(boost::beast::string_view body, error_code&) {
    m_out.body.append(body);
    return body.size();
}

void RequestParser::on_chunk_header_impl(std::uint64_t, boost::beast::string_view extensions,
                                         error_code& ec) {
    m_framing_bytes += extensions.size();
    if (m_framing_bytes > m_limits.max_header_bytes) ec = bhttp::error::header_limit;
}

std::size_t RequestParser::on_chunk_body_impl(std::uint64_t, boost::beast::string_view body,
                                              error_code&) {
    m_out.body.append(body);
    return body.size();
}

void RequestParser::on_finish_impl(error_code&) {}

std::size_t read_buffer_limit(const ParserLimits& limits) {
    return static_cast<std::size_t>(limits.max_header_bytes) + 64 * 1024;
}

ParsedRequest parse_request(std::string_view bytes, ParserLimits limits) {
    ParsedRequest out;
    RequestParser parser(out.request, limits);
    parser.eager(true);
    parser.body_limit(
        boost::none);  // as the server: an announced length is judged after the header
    const std::size_t window = read_buffer_limit(limits);
    std::size_t used = 0;
    bool body_checked = false;
    while (!parser.is_done()) {
        if (parser.is_header_done() && !body_checked) {
            body_checked = true;
            if (auto len = parser.content_length(); len && *len > limits.max_body_bytes) {
                out.refusal = ParseRefusal::payload_too_large;
                break;
            }
            parser.body_limit(limits.max_body_bytes);
        }
        // The server never holds more unparsed bytes than its read buffer.
        const std::size_t avail = std::min(bytes.size() - used, window);
        error_code ec;
        const std::size_t n = parser.put(boost::asio::buffer(bytes.data() + used, avail), ec);
        used += n;
        if (ec == bhttp::error::need_more) {
            if (n > 0) continue;
            // No progress: either a unit of framing larger than the read buffer, or the end.
            out.refusal =
                avail == window ? ParseRefusal::headers_too_large : ParseRefusal::bad_request;
            break;
        }
        if (ec) {
            auto r = parser.refusal_for(ec);
            out.refusal = r == ParseRefusal::none ? ParseRefusal::bad_request : r;
            break;
        }
        if (n == 0 && !parser.is_done()) {
            // No progress and no error: the input ended inside a body (Beast asks for more by
            // consuming nothing). Found by the fuzzer: this loop used to spin forever.
            out.refusal = ParseRefusal::bad_request;
            break;
        }
    }
    out.consumed = used;
    return out;
}

}  // namespace crcrd::http
