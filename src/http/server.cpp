#include "crcrd/http/server.hpp"

#include <openssl/ssl.h>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <nlohmann/json.hpp>

#include <spdlog/spdlog.h>
#include "http/request_parser.hpp"

#include <atomic>
#include <map>
#include <mutex>

namespace crcrd::http {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = beast::http;
namespace ssl = asio::ssl;
using tcp = asio::ip::tcp;
using asio::awaitable;

namespace {
constexpr auto k_tuple = asio::as_tuple(asio::use_awaitable);
/// A refused body up to this size is read and dropped so that the client sees the 413.
constexpr std::uint64_t k_max_drain = 16ULL * 1024 * 1024;

/// One connection as the drain sees it; touched only on the connection's own context.
struct Conn {
    beast::tcp_stream* lowest = nullptr;
    bool idle = false;
};
}  // namespace

struct Server::Impl {
    std::vector<asio::io_context*> contexts;
    asio::io_context& ioc;  // contexts[0]: the acceptor and the drain
    std::size_t next_context = 0;
    config::ServerConfig cfg;
    Handler handler;
    std::shared_ptr<ssl::context> tls;  // guarded by mu: SIGHUP may replace it
    tcp::acceptor acceptor;
    std::uint16_t bound_port = 0;
    std::atomic<std::size_t> active{0};
    std::atomic<bool> draining{false};
    std::mutex mu;
    std::map<std::uint64_t, std::pair<asio::any_io_executor, std::shared_ptr<Conn>>> conns;
    std::map<std::string, std::uint32_t> per_address;  // open connections by client address
    std::uint64_t next_id = 0;

    Impl(std::vector<asio::io_context*> ctxs, config::ServerConfig c, Handler h)
        : contexts(std::move(ctxs)),
          ioc(*contexts.at(0)),
          cfg(std::move(c)),
          handler(std::move(h)),
          acceptor(ioc) {}
};

namespace {

bhttp::response<bhttp::string_body> to_beast(const Response& r, unsigned version, bool keep_alive) {
    bhttp::response<bhttp::string_body> res{static_cast<bhttp::status>(r.status), version};
    res.set(bhttp::field::server, "crcrd/" CRCRD_VERSION);
    res.set(bhttp::field::content_type, r.content_type);
    for (const auto& [k, v] : r.headers) res.set(k, v);
    res.body() = r.body;
    res.keep_alive(keep_alive);
    res.prepare_payload();
    return res;
}

Response error_response(int status, const char* code) {
    auto r = Response::error(status, code);
    r.close = true;
    return r;
}

template <class Stream>
awaitable<bool> write_response(Server::Impl& self, Stream& stream, beast::tcp_stream& lowest,
                               const Response& r, unsigned version, bool keep_alive) {
    auto msg = to_beast(r, version, keep_alive);
    lowest.expires_after(self.cfg.write_timeout);
    auto [ec, n] = co_await bhttp::async_write(stream, msg, k_tuple);
    co_return !ec;
}

const char* refusal_code(int status) {
    switch (status) {
        case 413:
            return "payload_too_large";
        case 431:
            return "headers_too_large";
        case 501:
            return "not_implemented";
        default:
            return "bad_request";
    }
}

int refusal_status(ParseRefusal r) {
    switch (r) {
        case ParseRefusal::payload_too_large:
            return 413;
        case ParseRefusal::headers_too_large:
            return 431;
        case ParseRefusal::bad_request:
            return 400;
        case ParseRefusal::not_implemented:
            return 501;
        case ParseRefusal::none:
            break;
    }
    return 0;
}

template <class Stream>
awaitable<void> serve_requests(Server::Impl& self, Stream& stream, beast::tcp_stream& lowest,
                               Conn& conn, const std::string& remote) {
    const ParserLimits limits{self.cfg.max_header_bytes, self.cfg.max_body_bytes};
    // Capped: what a client can make a connection hold is one header section (or one chunk
    // header, or one trailer) and one read, never more (docs/security.md).
    beast::flat_buffer buffer(read_buffer_limit(limits));
    for (;;) {
        if (self.draining) co_return;
        if (buffer.size() == 0) {
            // Idle keep-alive wait: the drain may cancel this read.
            conn.idle = true;
            lowest.expires_after(self.cfg.idle_timeout);
            auto [ec, n] = co_await stream.async_read_some(buffer.prepare(4096), k_tuple);
            conn.idle = false;
            if (ec) co_return;
            buffer.commit(n);
        }
        Request req;
        req.remote = remote;
        RequestParser parser(req, limits);
        // The body limit is applied after the header, so an oversized Content-Length still
        // reaches the handler as a request to record (and answer 413), not a parse error.
        parser.body_limit(boost::none);
        lowest.expires_after(self.cfg.header_timeout);
        auto [hec, hn] = co_await bhttp::async_read_header(stream, buffer, parser, k_tuple);
        std::optional<std::uint64_t> length;
        if (hec) {
            const int status = refusal_status(parser.refusal_for(hec));
            if (status == 0) co_return;
            // Unframeable (400, or a transfer coding it cannot undo, 501): answered and closed.
            if (!parser.has_request_line() || status == 400 || status == 501) {
                const Response refused = error_response(status, refusal_code(status));
                co_await write_response(self, stream, lowest, refused, parser.version(), false);
                co_return;
            }
            req.refused_status = status;  // the handler records it (the path is known)
        } else {
            parser.body_limit(self.cfg.max_body_bytes);
            if (auto cl = parser.content_length()) length = *cl;
            if (length && *length > self.cfg.max_body_bytes) {
                req.refused_status = 413;
            } else {
                auto expect = req.header("Expect");
                if (expect && beast::iequals(*expect, "100-continue")) {
                    lowest.expires_after(self.cfg.write_timeout);
                    static const char k_continue[] = "HTTP/1.1 100 Continue\r\n\r\n";
                    auto [wec, wn] = co_await asio::async_write(
                        stream, asio::buffer(k_continue, sizeof k_continue - 1), k_tuple);
                    if (wec) co_return;
                }
                lowest.expires_after(self.cfg.body_timeout);
                auto [bec, bn] = co_await bhttp::async_read(stream, buffer, parser, k_tuple);
                if (bec) {
                    const int status = refusal_status(parser.refusal_for(bec));
                    if (status == 0) co_return;
                    if (status == 400) {
                        const Response bad = error_response(400, "bad_request");
                        co_await write_response(self, stream, lowest, bad, parser.version(), false);
                        co_return;
                    }
                    req.refused_status = status;
                    req.body.clear();
                    length.reset();  // what is left of the body is not drained
                }
            }
        }
        const unsigned version = parser.version();
        const bool client_keep_alive = req.refused_status == 0 && parser.keep_alive();

        Response res;
        try {
            res = co_await self.handler(req);
        } catch (const std::exception& e) {
            spdlog::error("handler failed path={} error=\"{}\"", req.path.substr(0, 200), e.what());
            res = error_response(500, "internal");
        }
        if (res.drop) {
            // Nothing written, not even TLS's close_notify: the client sees the connection end.
            lowest.close();
            co_return;
        }
        bool keep = client_keep_alive && !res.close && !self.draining;
        if (!co_await write_response(self, stream, lowest, res, version, keep)) co_return;
        if (req.refused_status == 413 && length && *length <= k_max_drain) {
            // The client is usually still sending the body it was refused. Closing with unread
            // data makes the kernel reset the connection, and the client may lose the answer;
            // read and drop what it announced (bounded in size and time) before closing.
            std::uint64_t left = *length > buffer.size() ? *length - buffer.size() : 0;
            buffer.consume(buffer.size());
            lowest.expires_after(self.cfg.body_timeout);
            while (left > 0) {
                auto [dec, dn] =
                    co_await stream.async_read_some(buffer.prepare(64 * 1024), k_tuple);
                if (dec) break;
                buffer.consume(dn);
                left -= std::min<std::uint64_t>(left, dn);
            }
        }
        if (!keep) co_return;
    }
}

awaitable<void> session(std::shared_ptr<Server::Impl> self, tcp::socket socket,
                        std::string address) {
    std::string remote = address;
    {
        boost::system::error_code ec;
        auto ep = socket.remote_endpoint(ec);
        if (!ec) remote += ":" + std::to_string(ep.port());
    }
    auto conn = std::make_shared<Conn>();
    std::uint64_t id;
    std::shared_ptr<ssl::context> tls;
    {
        std::lock_guard lk(self->mu);
        id = self->next_id++;
        self->conns.emplace(id, std::make_pair(socket.get_executor(), conn));
        tls = self->tls;  // this connection keeps the certificate it started with
    }
    struct Unregister {
        Server::Impl& s;
        std::uint64_t id;
        Conn& c;
        std::string address;
        ~Unregister() {
            c.lowest = nullptr;
            std::lock_guard lk(s.mu);
            s.conns.erase(id);
            if (auto it = s.per_address.find(address);
                it != s.per_address.end() && --it->second == 0) {
                s.per_address.erase(it);
            }
        }
    } unregister{*self, id, *conn, std::move(address)};

    if (tls) {
        beast::ssl_stream<beast::tcp_stream> stream(std::move(socket), *tls);
        auto& lowest = beast::get_lowest_layer(stream);
        conn->lowest = &lowest;
        lowest.expires_after(self->cfg.handshake_timeout);
        auto [hec] = co_await stream.async_handshake(ssl::stream_base::server, k_tuple);
        if (hec) {
            spdlog::debug("tls handshake failed remote={} error=\"{}\"", remote, hec.message());
            co_return;
        }
        co_await serve_requests(*self, stream, lowest, *conn, remote);
        if (!lowest.socket().is_open()) co_return;  // an answer dropped (Response::drop)
        lowest.expires_after(std::chrono::seconds(2));
        co_await stream.async_shutdown(k_tuple);
    } else {
        beast::tcp_stream stream(std::move(socket));
        conn->lowest = &stream;
        co_await serve_requests(*self, stream, stream, *conn, remote);
        boost::system::error_code ec;
        stream.socket().shutdown(tcp::socket::shutdown_send, ec);
    }
}

/// Refused connections are logged at most once per 10 s (a flood must not become a log flood).
bool log_refusal_now() {
    static std::atomic<std::int64_t> last{0};
    const auto now = std::chrono::duration_cast<std::chrono::seconds>(
                         std::chrono::steady_clock::now().time_since_epoch())
                         .count();
    auto prev = last.load();
    return now - prev >= 10 && last.compare_exchange_strong(prev, now);
}

awaitable<void> accept_loop(std::shared_ptr<Server::Impl> self) {
    asio::steady_timer backoff(self->ioc);
    std::uint64_t refused = 0;
    for (;;) {
        asio::io_context& target = *self->contexts[self->next_context++ % self->contexts.size()];
        auto [ec, socket] = co_await self->acceptor.async_accept(target.get_executor(), k_tuple);
        if (ec) {
            if (ec == asio::error::operation_aborted || !self->acceptor.is_open()) co_return;
            spdlog::warn("accept failed error=\"{}\"", ec.message());
            backoff.expires_after(std::chrono::milliseconds(100));  // e.g. out of file descriptors
            co_await backoff.async_wait(k_tuple);
            continue;
        }
        boost::system::error_code addr_ec;
        const auto ep = socket.remote_endpoint(addr_ec);
        std::string address = addr_ec ? std::string("?") : ep.address().to_string();
        const char* why = nullptr;
        if (self->active.load() >= self->cfg.max_connections) {
            why = "server.max_connections";
        } else {
            std::lock_guard lk(self->mu);
            auto& n = self->per_address[address];
            if (n >= self->cfg.max_connections_per_ip)
                why = "server.max_connections_per_ip";
            else
                ++n;
        }
        if (why) {
            ++refused;
            if (log_refusal_now()) {
                spdlog::warn("connections refused: {} so far, last from {} ({} reached)", refused,
                             address, why);
            }
            boost::system::error_code ignored;
            socket.close(ignored);
            continue;
        }
        // Answers are small and written in pieces (TLS records): without TCP_NODELAY each
        // piece after the first waits for the peer's delayed ACK (tens of milliseconds).
        boost::system::error_code nodelay_ec;
        socket.set_option(tcp::no_delay(true), nodelay_ec);
        ++self->active;
        auto ex = socket.get_executor();
        asio::co_spawn(ex, session(self, std::move(socket), std::move(address)),
                       [self](std::exception_ptr e) {
                           --self->active;
                           if (e) {
                               try {
                                   std::rethrow_exception(e);
                               } catch (const std::exception& ex) {
                                   spdlog::error("connection failed error=\"{}\"", ex.what());
                               } catch (...) {
                                   spdlog::error("connection failed: unknown exception");
                               }
                           }
                       });
    }
}

/// A TLS context as docs/security.md asks: TLS 1.2 or newer, and in TLS 1.2 only AEAD suites
/// with forward secrecy (TLS 1.3's suites are all AEAD).
Result<std::shared_ptr<ssl::context>> make_tls_context(const config::TlsConfig& cfg) {
    auto ctx = std::make_shared<ssl::context>(ssl::context::tls_server);
    ctx->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                     ssl::context::no_sslv3 | ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1 |
                     ssl::context::single_dh_use);
    SSL_CTX_set_min_proto_version(ctx->native_handle(), TLS1_2_VERSION);
    SSL_CTX_set_cipher_list(ctx->native_handle(),
                            "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:"
                            "ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:"
                            "ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305");
    SSL_CTX_set_options(ctx->native_handle(),
                        SSL_OP_CIPHER_SERVER_PREFERENCE | SSL_OP_NO_RENEGOTIATION);
    boost::system::error_code ec;
    ctx->use_certificate_chain_file(cfg.cert.string(), ec);
    if (ec)
        return make_error(Errc::config, "server.tls.cert: cannot load " + cfg.cert.string() + ": " +
                                            ec.message());
    ctx->use_private_key_file(cfg.key.string(), ssl::context::pem, ec);
    if (ec)
        return make_error(Errc::config,
                          "server.tls.key: cannot load " + cfg.key.string() + ": " + ec.message());
    if (SSL_CTX_check_private_key(ctx->native_handle()) != 1) {
        return make_error(Errc::config, "server.tls.key: " + cfg.key.string() + " does not match " +
                                            cfg.cert.string());
    }
    return ctx;
}

}  // namespace

Status check_tls(const config::TlsConfig& tls) {
    auto ctx = make_tls_context(tls);
    if (!ctx) return ctx.error();
    return Ok{};
}

Server::Server(std::vector<asio::io_context*> contexts, config::ServerConfig cfg, Handler handler)
    : m_impl(std::make_shared<Impl>(std::move(contexts), std::move(cfg), std::move(handler))) {}

Server::~Server() {
    boost::system::error_code ec;
    m_impl->acceptor.close(ec);
}

Status Server::start() {
    auto& s = *m_impl;
    if (s.cfg.tls) {
        auto ctx = make_tls_context(*s.cfg.tls);
        if (!ctx) return ctx.error();
        s.tls = std::move(*ctx);
    }
    boost::system::error_code ec;
    std::string host = s.cfg.host == "localhost" ? "127.0.0.1" : s.cfg.host;
    auto addr = asio::ip::make_address(host, ec);
    if (ec)
        return make_error(Errc::config, "server.listen: '" + s.cfg.host + "' is not an IP address");
    tcp::endpoint ep(addr, s.cfg.port);
    s.acceptor.open(ep.protocol(), ec);
    if (!ec) s.acceptor.set_option(asio::socket_base::reuse_address(true), ec);
    if (!ec) s.acceptor.bind(ep, ec);
    if (!ec) s.acceptor.listen(asio::socket_base::max_listen_connections, ec);
    if (ec)
        return make_error(Errc::listen, "cannot listen on " + host + ":" +
                                            std::to_string(s.cfg.port) + ": " + ec.message());
    s.bound_port = s.acceptor.local_endpoint().port();
    asio::co_spawn(s.acceptor.get_executor(), accept_loop(m_impl), asio::detached);
    return Ok{};
}

Status Server::reload_tls(const config::TlsConfig& tls) {
    if (!m_impl->cfg.tls)
        return make_error(Errc::config, "server.tls: the listener was started without TLS");
    auto ctx = make_tls_context(tls);
    if (!ctx) return ctx.error();
    std::lock_guard lk(m_impl->mu);
    m_impl->tls = std::move(*ctx);
    return Ok{};
}

std::uint16_t Server::port() const {
    return m_impl->bound_port;
}

std::string Server::url() const {
    std::string host = m_impl->cfg.host.find(':') != std::string::npos
                           ? "[" + m_impl->cfg.host + "]"
                           : m_impl->cfg.host;
    return std::string(m_impl->cfg.tls ? "https://" : "http://") + host + ":" +
           std::to_string(port());
}

std::size_t Server::active_connections() const {
    return m_impl->active.load();
}

void Server::drain(std::chrono::milliseconds deadline, std::function<void(std::size_t)> on_done) {
    auto self = m_impl;
    self->draining = true;
    asio::post(self->acceptor.get_executor(), [self] {
        boost::system::error_code ec;
        self->acceptor.close(ec);
    });
    {
        std::lock_guard lk(self->mu);
        for (auto& [id, entry] : self->conns) {
            asio::post(entry.first, [conn = entry.second] {
                if (conn->lowest && conn->idle) conn->lowest->cancel();
            });
        }
    }
    asio::co_spawn(
        self->ioc,
        [self, deadline, on_done]() -> awaitable<void> {
            asio::steady_timer t(self->ioc);
            auto until = std::chrono::steady_clock::now() + deadline;
            while (self->active.load() > 0 && std::chrono::steady_clock::now() < until) {
                t.expires_after(std::chrono::milliseconds(20));
                co_await t.async_wait(k_tuple);
            }
            on_done(self->active.load());
        },
        asio::detached);
}

}  // namespace crcrd::http
