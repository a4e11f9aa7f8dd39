#pragma once
// The request parser of the server (docs/ingest.md, docs/security.md): Beast's HTTP/1 grammar, but
// every field, the body and the chunked framing go straight into an http::Request under
// crcrd's own limits. Nothing in it throws: an oversized field, chunk extension or trailer is
// an error code (Beast's own fields container throws std::length_error for a field over
// 64 KiB, which is how a single trailer used to end the daemon).
//
// Private to src/http: the server and the fuzz target use it.

#include <boost/beast/http/basic_parser.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "crcrd/http/message.hpp"

namespace crcrd::http {

/// What a request that could not be read is answered with.
enum class ParseRefusal {
    none,
    bad_request,        // 400: not HTTP
    payload_too_large,  // 413: body over max_body_bytes
    headers_too_large,  // 431: request line, header section, one field, chunk extensions or trailer
                        // too long
    not_implemented,    // 501: a transfer coding other than chunked
};

/// What a request's Transfer-Encoding (its lines joined with ", ") calls for (RFC 9112 6.1,
/// 6.3): none for "chunked" alone (any case); bad_request when chunked is not the last
/// coding, is missing or comes twice (the body's length is unknown); not_implemented when
/// chunked is last but another coding comes before it (only chunked is implemented).
ParseRefusal transfer_coding_refusal(std::string_view value);

struct ParserLimits {
    std::uint64_t max_header_bytes = 16 * 1024;
    std::uint64_t max_body_bytes = 1024 * 1024;
};

class RequestParser final : public boost::beast::http::basic_parser<true> {
  public:
    /// Fills `out` (method, target, path, query, headers, body). `out` must outlive the parser.
    RequestParser(Request& out, ParserLimits limits);

    /// The HTTP version as 10 or 11 (valid once the request line was read).
    unsigned version() const { return m_version; }
    /// Whether the request line was read (method and target are known).
    bool has_request_line() const { return m_has_request_line; }

    /// The answer an error of this parser (or of reading into it) calls for; `none` for an
    /// error that is only a closed or stalled connection.
    ParseRefusal refusal_for(const boost::system::error_code& ec) const;

  private:
    void on_request_impl(boost::beast::http::verb method, boost::beast::string_view method_str,
                         boost::beast::string_view target, int version,
                         boost::system::error_code& ec) override;
    void on_response_impl(int code, boost::beast::string_view reason, int version,
                          boost::system::error_code& ec) override;
    void on_field_impl(boost::beast::http::field name, boost::beast::string_view name_string,
                       boost::beast::string_view value, boost::system::error_code& ec) override;
    void on_header_impl(boost::system::error_code& ec) override;
    void on_body_init_impl(const boost::optional<std::uint64_t>& content_length,
                           boost::system::error_code& ec) override;
    std::size_t on_body_impl(boost::beast::string_view body,
                             boost::system::error_code& ec) override;
    void on_chunk_header_impl(std::uint64_t size, boost::beast::string_view extensions,
                              boost::system::error_code& ec) override;
    std::size_t on_chunk_body_impl(std::uint64_t remain, boost::beast::string_view body,
                                   boost::system::error_code& ec) override;
    void on_finish_impl(boost::system::error_code& ec) override;

    Request& m_out;
    ParserLimits m_limits;
    unsigned m_version = 11;
    bool m_has_request_line = false;
    bool m_header_done = false;
    std::uint64_t m_framing_bytes = 0;  // chunk extensions and trailer fields, together
    std::optional<std::string> m_transfer_encoding;  // every Transfer-Encoding line, joined
    ParseRefusal m_refusal = ParseRefusal::none;     // decided by this parser, not Beast
};

/// Parses one complete request from `bytes` as the server would read it from a connection
/// (no network): the request, or the refusal the server would answer. `consumed` is set to
/// the bytes the request used (a pipelined request may follow). A request that is not
/// complete in `bytes` is `bad_request`.
struct ParsedRequest {
    Request request;
    ParseRefusal refusal = ParseRefusal::none;
    std::size_t consumed = 0;
};
ParsedRequest parse_request(std::string_view bytes, ParserLimits limits);

/// The size the server's read buffer is capped at: room for the whole header section plus
/// one read. It bounds the memory a connection can make the daemon hold for unparsed framing.
std::size_t read_buffer_limit(const ParserLimits& limits);

}  // namespace crcrd::http
