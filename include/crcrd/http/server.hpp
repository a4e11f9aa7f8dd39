#pragma once
// The HTTPS listener (docs/ingest.md, docs/security.md, STYLE.md "Async and networking"): one
// coroutine per connection, TLS 1.2+ with AEAD suites only, a handshake deadline, keep-alive, a
// deadline on every read and write, header/trailer and body limits that never throw, a cap on
// concurrent connections in total and per client address, and a bounded drain on shutdown.

#include <boost/asio/awaitable.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "crcrd/config/config.hpp"
#include "crcrd/core/result.hpp"
#include "crcrd/http/message.hpp"

namespace boost::asio {
class io_context;
}

namespace crcrd::http {

/// Answers one request. Runs on a network thread: it must not block (hand blocking work to
/// another thread and co_await it). Exceptions become a 500.
using Handler = std::function<boost::asio::awaitable<Response>(Request&)>;

/// Loads `tls` as the server would (certificate chain, key, and that they match): for
/// --check-config and SIGHUP. Errors name the file.
Status check_tls(const config::TlsConfig& tls);

class Server {
  public:
    /// `contexts[0]` accepts; connections are spread round-robin over all of them. Each
    /// context is meant to be run by exactly one thread (no locking inside Asio), so a
    /// connection never needs a strand.
    Server(std::vector<boost::asio::io_context*> contexts, config::ServerConfig cfg,
           Handler handler);
    ~Server();
    Server(const Server&) = delete;
    Server& operator=(const Server&) = delete;

    /// Loads the certificate (when TLS is configured), binds and starts accepting. Errors
    /// name the file or address.
    Status start();

    /// Loads a new certificate and key (SIGHUP): connections opened from now on use them,
    /// open ones keep theirs. On error the running certificate stays.
    Status reload_tls(const config::TlsConfig& tls);

    /// The bound port (useful with port 0).
    std::uint16_t port() const;
    /// "https://127.0.0.1:8443" (or http:// on a plain loopback listener).
    std::string url() const;

    /// Stops accepting, closes idle keep-alive connections, and lets requests in flight
    /// finish with "Connection: close". Calls `on_done` (on a network thread) when no
    /// connection is left or `deadline` passed, whichever comes first.
    void drain(std::chrono::milliseconds deadline, std::function<void(std::size_t left)> on_done);

    std::size_t active_connections() const;

    struct Impl;  // defined in server.cpp; public only so its coroutines can name it

  private:
    std::shared_ptr<Impl> m_impl;
};

}  // namespace crcrd::http
