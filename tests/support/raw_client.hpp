#pragma once
// A blocking client that sends exactly the bytes a test gives, over TCP or TLS (OpenSSL), for
// hostile-input tests: malformed framing, oversized fields, slow handshakes, chosen ciphers.

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace crcrd {

struct RawOptions {
    bool tls = true;
    std::filesystem::path ca_file;  // trusted CA (TLS)
    std::string cipher_list;        // TLS 1.2 suites to offer; empty: OpenSSL's default
    bool tls12_only = false;        // offer TLS 1.2 and nothing newer
    bool handshake = true;          // false: connect only (no TLS handshake yet)
    std::chrono::milliseconds timeout{10'000};
};

class RawConnection {
  public:
    /// Connects to 127.0.0.1:`port` (and completes the TLS handshake unless asked not to).
    /// nullopt with `error` set when that fails.
    static std::unique_ptr<RawConnection> open(std::uint16_t port, const RawOptions& opts,
                                               std::string* error = nullptr);
    ~RawConnection();

    /// Sends all of `bytes`; false when the connection broke.
    bool send(std::string_view bytes);
    /// One HTTP response (header and a Content-Length body), or what arrived before the peer
    /// closed or the timeout passed.
    std::string read_response();
    /// Waits until the peer closes (true) or the timeout passes (false).
    bool wait_closed();
    /// The cipher negotiated ("" without TLS).
    std::string cipher() const;
    /// The server certificate's subject, one line ("" without TLS).
    std::string peer_subject() const;

  private:
    RawConnection() = default;
    long read_some(char* buf, std::size_t n);
    int m_fd = -1;
    void* m_ctx = nullptr;  // SSL_CTX*
    void* m_ssl = nullptr;  // SSL*
    RawOptions m_opts;
};

/// The status code of an HTTP response text, 0 when there is none.
int status_of(std::string_view response);

}  // namespace crcrd
