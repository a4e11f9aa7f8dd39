#include "crcrd/http/client.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <openssl/ssl.h>

#include <regex>

namespace crcrd::http {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = beast::http;
namespace ssl = asio::ssl;
using tcp = asio::ip::tcp;

Result<Url> parse_url(const std::string& url) {
    static const std::regex k_url(R"(^(https?)://(\[[0-9a-fA-F:.]+\]|[^/:?#\[\]]+)(?::([0-9]{1,5}))?([/?].*)?$)");
    std::smatch m;
    if (!std::regex_match(url, m, k_url)) return make_error("bad_url", "'" + url + "' is not an http(s) URL");
    Url u;
    u.tls = m[1] == "https";
    u.host = m[2].str();
    if (u.host.front() == '[') u.host = u.host.substr(1, u.host.size() - 2);
    u.port = m[3].matched ? static_cast<std::uint16_t>(std::stoul(m[3].str())) : (u.tls ? 443 : 80);
    u.target = m[4].matched ? m[4].str() : "/";
    if (u.target.front() == '?') u.target = "/" + u.target;
    return u;
}

bool same_origin(const std::string& a, const std::string& b) {
    auto ua = parse_url(a), ub = parse_url(b);
    auto lower = [](std::string h) {
        for (char& c : h) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        return h;
    };
    return ua && ub && ua->tls == ub->tls && lower(ua->host) == lower(ub->host) && ua->port == ub->port;
}

std::optional<std::string> next_link(std::string_view link) {
    static const std::regex k_next(R"(<([^>]+)>;\s*rel="next")");
    std::match_results<std::string_view::const_iterator> m;
    if (std::regex_search(link.begin(), link.end(), m, k_next)) return m[1].str();
    return std::nullopt;
}

namespace {

constexpr auto k_tuple = asio::as_tuple(asio::use_awaitable);

bool is_ip(const std::string& host) {
    boost::system::error_code ec;
    asio::ip::make_address(host, ec);
    return !ec;
}

template <class Stream>
asio::awaitable<Result<ClientResponse>> exchange(Stream& stream, bhttp::request<bhttp::string_body>& req,
                                                 const ClientOptions& opts) {
    auto [wec, wn] = co_await bhttp::async_write(stream, req, k_tuple);
    if (wec) co_return make_error("network", "write failed: " + wec.message());
    beast::flat_buffer buffer;
    bhttp::response_parser<bhttp::string_body> parser;
    parser.body_limit(opts.max_body_bytes);
    parser.header_limit(64 * 1024);
    auto [rec, rn] = co_await bhttp::async_read(stream, buffer, parser, k_tuple);
    if (rec) co_return make_error("network", "read failed: " + rec.message());
    ClientResponse out;
    auto& res = parser.get();
    out.status = static_cast<int>(res.result_int());
    for (const auto& f : res) out.headers.emplace_back(std::string(f.name_string()), std::string(f.value()));
    out.body = std::move(res.body());
    co_return out;
}

asio::awaitable<Result<ClientResponse>> run(asio::io_context& ioc, const Url& u, bhttp::request<bhttp::string_body> req,
                                            const ClientOptions& opts) {
    tcp::resolver resolver(ioc);
    auto [rec, results] = co_await resolver.async_resolve(u.host, std::to_string(u.port), k_tuple);
    if (rec) co_return make_error("network", "cannot resolve " + u.host + ": " + rec.message());
    const auto deadline = opts.timeout;
    if (!u.tls) {
        beast::tcp_stream stream(ioc);
        stream.expires_after(deadline);
        auto [cec, ep] = co_await stream.async_connect(results, k_tuple);
        if (cec) co_return make_error("network", "cannot connect to " + u.host + ":" + std::to_string(u.port) + ": " + cec.message());
        co_return co_await exchange(stream, req, opts);
    }
    ssl::context ctx(ssl::context::tls_client);
    SSL_CTX_set_min_proto_version(ctx.native_handle(), TLS1_2_VERSION);
    boost::system::error_code ec;
    if (opts.ca_file) ctx.load_verify_file(opts.ca_file->string(), ec);
    else ctx.set_default_verify_paths(ec);
    if (ec) co_return make_error("network", "cannot load CA certificates: " + ec.message());
    ctx.set_verify_mode(ssl::verify_peer);
    beast::ssl_stream<beast::tcp_stream> stream(ioc, ctx);
    stream.set_verify_callback(ssl::host_name_verification(u.host));
    if (!is_ip(u.host) && !SSL_set_tlsext_host_name(stream.native_handle(), u.host.c_str())) {
        co_return make_error("network", "cannot set SNI for " + u.host);
    }
    auto& lowest = beast::get_lowest_layer(stream);
    lowest.expires_after(deadline);
    auto [cec, ep] = co_await lowest.async_connect(results, k_tuple);
    if (cec) co_return make_error("network", "cannot connect to " + u.host + ":" + std::to_string(u.port) + ": " + cec.message());
    boost::system::error_code nodelay_ec;
    lowest.socket().set_option(tcp::no_delay(true), nodelay_ec);
    auto [hec] = co_await stream.async_handshake(ssl::stream_base::client, k_tuple);
    if (hec) co_return make_error("network", "TLS handshake with " + u.host + " failed: " + hec.message());
    auto result = co_await exchange(stream, req, opts);
    lowest.expires_after(std::chrono::seconds(2));
    co_await stream.async_shutdown(k_tuple);
    co_return result;
}

}  // namespace

Result<ClientResponse> send(const std::string& method, const std::string& url, const Headers& headers,
                            const std::string& body, const ClientOptions& opts) {
    auto u = parse_url(url);
    if (!u) return u.error();
    bhttp::request<bhttp::string_body> req;
    req.method_string(method);
    req.target(u->target);
    req.version(11);
    bool default_port = u->port == (u->tls ? 443 : 80);
    std::string host = u->host.find(':') != std::string::npos ? "[" + u->host + "]" : u->host;
    req.set(bhttp::field::host, default_port ? host : host + ":" + std::to_string(u->port));
    req.set(bhttp::field::user_agent, "crcrd/" CRCRD_VERSION);
    for (const auto& [k, v] : headers) req.set(k, v);
    req.body() = body;
    req.keep_alive(false);
    req.prepare_payload();

    asio::io_context ioc;
    std::optional<Result<ClientResponse>> out;
    asio::co_spawn(
        ioc,
        [&]() -> asio::awaitable<void> { out = co_await run(ioc, *u, std::move(req), opts); },
        [&](std::exception_ptr e) {
            if (!e) return;
            try {
                std::rethrow_exception(e);
            } catch (const std::exception& ex) {
                out = make_error("network", ex.what());
            }
        });
    ioc.run();
    if (!out) return make_error("network", "request did not complete");
    return std::move(*out);
}

}  // namespace crcrd::http
