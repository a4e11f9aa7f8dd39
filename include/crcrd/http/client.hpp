#pragma once
// A small HTTPS client for crcrctl and crcrd's outbound calls (GitHub, the relay). It sets
// SNI, verifies the peer certificate and host name, and puts a deadline on the whole exchange.
// Blocking: call it from a CLI or a worker thread, never from a network thread.

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include "crcrd/core/result.hpp"
#include "crcrd/http/message.hpp"

namespace crcrd::http {

struct Url {
    bool tls = true;
    std::string host;
    std::uint16_t port = 443;
    std::string target = "/";  // path and query
};

/// Parses "https://host[:port][/path]" and "http://..." (IPv6 hosts in brackets).
Result<Url> parse_url(const std::string& url);

/// Whether two URLs have the same scheme, host and port (a credential sent to one may go to
/// the other).
bool same_origin(const std::string& a, const std::string& b);

/// The URL of a `Link` header's rel="next" (GitHub's pagination), if any.
std::optional<std::string> next_link(std::string_view link);

struct ClientOptions {
    std::optional<std::filesystem::path> ca_file;  // trusted PEM bundle; default: system store
    std::chrono::milliseconds timeout = std::chrono::seconds(30);
    std::uint64_t max_body_bytes = 16 * 1024 * 1024;
};

struct ClientResponse {
    int status = 0;
    Headers headers;
    std::string body;
    /// The request went twice: its first copy, on a kept connection, got no answer (the
    /// server may have acted on it), and this is the answer to the second, on a new one.
    bool resent = false;
    /// The connection this answer came on began by resuming an earlier TLS session with the
    /// origin (no certificate exchanged); false for plain http.
    bool resumed = false;
    std::optional<std::string_view> header(std::string_view name) const {
        return find_header(headers, name);
    }
};

/// Sends one request, on a connection kept from an earlier request to the same origin (and CA
/// file) when the server kept it open, else on a new one that resumes the origin's last TLS
/// session when it can (the server still decides; a full handshake verifies as usual). A kept
/// connection that fails before an answer is replaced once and the request sent again, so a
/// request may reach the server twice: the answer then says `resent`, and a refusal may be
/// the server's reply to a repeat of what it already did. Errors: "network" (resolve,
/// connect, TLS, peer verification, timeout, a connection closed without an answer) with the
/// reason, and then the request may or may not have reached the server; any HTTP status is
/// a success here.
Result<ClientResponse> send(const std::string& method, const std::string& url,
                            const Headers& headers, const std::string& body,
                            const ClientOptions& opts = {});

}  // namespace crcrd::http
