#include "crcrd/http/client.hpp"

#include <openssl/ssl.h>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>

#include <spdlog/spdlog.h>

#include <map>
#include <memory>
#include <mutex>
#include <regex>
#include <utility>

namespace crcrd::http {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = beast::http;
namespace ssl = asio::ssl;
using tcp = asio::ip::tcp;

Result<Url> parse_url(const std::string& url) {
    static const std::regex k_url(
        R"(^(https?)://(\[[0-9a-fA-F:.]+\]|[^/:?#\[\]]+)(?::([0-9]{1,5}))?([/?].*)?$)");
    std::smatch m;
    if (!std::regex_match(url, m, k_url))
        return make_error(Errc::bad_url, "'" + url + "' is not an http(s) URL");
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
    return ua && ub && ua->tls == ub->tls && lower(ua->host) == lower(ub->host) &&
           ua->port == ub->port;
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

/// One connection to an origin, on its own io_context: used by one thread at a time, kept
/// open between requests when the server allows it (keep-alive), so that outbound calls to
/// the GitHub API and the relay do not load the CA store and shake hands again every time.
struct Conn {
    asio::io_context ioc;
    std::unique_ptr<ssl::context> ctx;
    std::unique_ptr<beast::ssl_stream<beast::tcp_stream>> tls;
    std::unique_ptr<beast::tcp_stream> plain;
    std::chrono::steady_clock::time_point idle_since;
    beast::tcp_stream& lowest() { return tls ? beast::get_lowest_layer(*tls) : *plain; }
};

/// Idle connections by origin (scheme, host, port and CA file): at most k_idle_per_origin
/// each, none older than k_idle_max (servers close idle connections: GitHub after about a
/// minute).
constexpr std::size_t k_idle_per_origin = 8;  // the planner looks up eight runs at a time
constexpr auto k_idle_max = std::chrono::seconds(20);
std::mutex g_pool_mu;
std::map<std::string, std::vector<std::unique_ptr<Conn>>> g_pool;

std::unique_ptr<Conn> take_idle(const std::string& origin) {
    std::lock_guard lk(g_pool_mu);
    auto it = g_pool.find(origin);
    if (it == g_pool.end()) return nullptr;
    auto& v = it->second;
    while (!v.empty()) {
        auto c = std::move(v.back());
        v.pop_back();
        if (std::chrono::steady_clock::now() - c->idle_since < k_idle_max) return c;
    }
    return nullptr;
}

void put_idle(const std::string& origin, std::unique_ptr<Conn> c) {
    c->idle_since = std::chrono::steady_clock::now();
    std::lock_guard lk(g_pool_mu);
    auto& v = g_pool[origin];
    if (v.size() < k_idle_per_origin) v.push_back(std::move(c));
}

/// The newest resumable TLS session by origin (the pool's key: the CA file is part of it), so
/// that a new connection resumes it instead of a full handshake. Each entry holds one
/// reference. Never destroyed: OpenSSL's own clean-up at exit may run before static destructors.
std::mutex g_sessions_mu;
std::map<std::string, SSL_SESSION*>& sessions() {
    static auto* by_origin = new std::map<std::string, SSL_SESSION*>;
    return *by_origin;
}

/// Offers `origin`'s last session, if any, for the handshake `ssl` is about to make.
void offer_session(SSL* ssl, const std::string& origin) {
    std::lock_guard lk(g_sessions_mu);
    auto it = sessions().find(origin);
    if (it != sessions().end()) SSL_set_session(ssl, it->second);  // takes its own reference
}

/// Keeps `ssl`'s session for `origin` in place of the one before, if it can be resumed. Called
/// after an exchange, not after the handshake: TLS 1.3 tickets come after the handshake and
/// are read with the answer.
void remember_session(SSL* ssl, const std::string& origin) {
    SSL_SESSION* s = SSL_get1_session(ssl);
    if (!s) return;
    if (SSL_SESSION_is_resumable(s) != 1) {
        SSL_SESSION_free(s);
        return;
    }
    SSL_SESSION* old = nullptr;
    {
        std::lock_guard lk(g_sessions_mu);
        old = std::exchange(sessions()[origin], s);
    }
    if (old) SSL_SESSION_free(old);
}

/// Drops `origin`'s session: a handshake failed, and the session offered may be the cause.
void forget_session(const std::string& origin) {
    SSL_SESSION* old = nullptr;
    {
        std::lock_guard lk(g_sessions_mu);
        auto it = sessions().find(origin);
        if (it == sessions().end()) return;
        old = it->second;
        sessions().erase(it);
    }
    SSL_SESSION_free(old);
}

struct Exchanged {
    Result<ClientResponse> result;
    bool reusable = false;  // the answer was whole and the server keeps the connection open
};

template <class Stream>
asio::awaitable<Exchanged> exchange(Stream& stream, bhttp::request<bhttp::string_body>& req,
                                    const ClientOptions& opts) {
    auto [wec, wn] = co_await bhttp::async_write(stream, req, k_tuple);
    if (wec) co_return Exchanged{make_error(Errc::network, "write failed: " + wec.message())};
    beast::flat_buffer buffer;
    bhttp::response_parser<bhttp::string_body> parser;
    parser.body_limit(opts.max_body_bytes);
    parser.header_limit(64 * 1024);
    auto [rec, rn] = co_await bhttp::async_read(stream, buffer, parser, k_tuple);
    if (rec) co_return Exchanged{make_error(Errc::network, "read failed: " + rec.message())};
    ClientResponse out;
    auto& res = parser.get();
    out.status = static_cast<int>(res.result_int());
    for (const auto& f : res)
        out.headers.emplace_back(std::string(f.name_string()), std::string(f.value()));
    const bool keep = res.keep_alive() && buffer.size() == 0;
    out.body = std::move(res.body());
    co_return Exchanged{std::move(out), keep};
}

/// A new connection to `u` on `c`: resolved, connected, and for https verified (the CA file
/// or the system store, the host name, SNI), offering `origin`'s last TLS session.
asio::awaitable<Status> connect(Conn& c, const Url& u, const ClientOptions& opts,
                                const std::string& origin) {
    tcp::resolver resolver(c.ioc);
    auto [rec, results] = co_await resolver.async_resolve(u.host, std::to_string(u.port), k_tuple);
    if (rec) co_return make_error(Errc::network, "cannot resolve " + u.host + ": " + rec.message());
    if (!u.tls) {
        c.plain = std::make_unique<beast::tcp_stream>(c.ioc);
    } else {
        c.ctx = std::make_unique<ssl::context>(ssl::context::tls_client);
        SSL_CTX_set_min_proto_version(c.ctx->native_handle(), TLS1_2_VERSION);
        boost::system::error_code ec;
        if (opts.ca_file)
            c.ctx->load_verify_file(opts.ca_file->string(), ec);
        else
            c.ctx->set_default_verify_paths(ec);
        if (ec) co_return make_error(Errc::network, "cannot load CA certificates: " + ec.message());
        c.ctx->set_verify_mode(ssl::verify_peer);
        c.tls = std::make_unique<beast::ssl_stream<beast::tcp_stream>>(c.ioc, *c.ctx);
        c.tls->set_verify_callback(ssl::host_name_verification(u.host));
        if (!is_ip(u.host) && !SSL_set_tlsext_host_name(c.tls->native_handle(), u.host.c_str())) {
            co_return make_error(Errc::network, "cannot set SNI for " + u.host);
        }
        offer_session(c.tls->native_handle(), origin);
    }
    auto& lowest = c.lowest();
    lowest.expires_after(opts.timeout);
    auto [cec, ep] = co_await lowest.async_connect(results, k_tuple);
    if (cec)
        co_return make_error(Errc::network, "cannot connect to " + u.host + ":" +
                                                std::to_string(u.port) + ": " + cec.message());
    boost::system::error_code nodelay_ec;
    lowest.socket().set_option(tcp::no_delay(true), nodelay_ec);
    if (c.tls) {
        auto [hec] = co_await c.tls->async_handshake(ssl::stream_base::client, k_tuple);
        if (hec) {
            forget_session(origin);
            co_return make_error(Errc::network,
                                 "TLS handshake with " + u.host + " failed: " + hec.message());
        }
    }
    co_return Ok{};
}

template <class T>
asio::awaitable<void> store_into(std::optional<T>& out, asio::awaitable<T> work) {
    out.emplace(co_await std::move(work));
}

/// Runs `work` on `c`'s io_context to its end in this thread; `on_exception` if it threw.
template <class T>
T run_on(Conn& c, asio::awaitable<T> work, T on_exception) {
    std::optional<T> out;
    c.ioc.restart();
    asio::co_spawn(c.ioc, store_into(out, std::move(work)), [](std::exception_ptr e) {
        if (!e) return;
        try {
            std::rethrow_exception(e);
        } catch (const std::exception& ex) {
            spdlog::debug("http client: {}", ex.what());
        }
    });
    c.ioc.run();
    return out ? std::move(*out) : std::move(on_exception);
}

/// A TLS close_notify, at most two seconds, for a connection that is not kept.
asio::awaitable<Status> shut_down(Conn& c) {
    c.lowest().expires_after(std::chrono::seconds(2));
    co_await c.tls->async_shutdown(k_tuple);
    co_return Ok{};
}

}  // namespace

Result<ClientResponse> send(const std::string& method, const std::string& url,
                            const Headers& headers, const std::string& body,
                            const ClientOptions& opts) {
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
    req.keep_alive(true);
    req.prepare_payload();

    const std::string origin = std::string(u->tls ? "https://" : "http://") + u->host + ":" +
                               std::to_string(u->port) + " " +
                               (opts.ca_file ? opts.ca_file->string() : std::string());
    // A kept connection the server has closed meanwhile fails before any answer: the request
    // goes again once, on a new connection (the calls made with this client, GitHub statuses,
    // its reads and the relay's callbacks, may be repeated). The same failure may be an answer
    // lost after the server acted on the first copy: the answer to the second says `resent`.
    for (int attempt = 0; attempt < 2; ++attempt) {
        auto conn = attempt == 0 ? take_idle(origin) : nullptr;
        const bool reused = conn != nullptr;
        if (!conn) {
            conn = std::make_unique<Conn>();
            Status s = run_on<Status>(*conn, connect(*conn, *u, opts, origin),
                                      make_error(Errc::network, "connect did not complete"));
            if (!s) return s.error();
        }
        conn->lowest().expires_after(opts.timeout);
        Exchanged x = conn->tls
                          ? run_on<Exchanged>(
                                *conn, exchange(*conn->tls, req, opts),
                                Exchanged{make_error(Errc::network, "request did not complete")})
                          : run_on<Exchanged>(
                                *conn, exchange(*conn->plain, req, opts),
                                Exchanged{make_error(Errc::network, "request did not complete")});
        if (!x.result && reused) continue;
        if (x.result) {
            x.result->resent = attempt > 0;
            if (conn->tls) {
                x.result->resumed = SSL_session_reused(conn->tls->native_handle()) == 1;
                remember_session(conn->tls->native_handle(), origin);
            }
        }
        if (x.result && x.reusable) {
            conn->lowest().expires_never();
            put_idle(origin, std::move(conn));
        } else if (conn->tls) {
            (void)run_on<Status>(*conn, shut_down(*conn), Ok{});
        }
        return std::move(x.result);
    }
    return make_error(Errc::network, "request did not complete");
}

}  // namespace crcrd::http
