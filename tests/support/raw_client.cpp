#include "support/raw_client.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace crcrd {

namespace {
std::string ssl_error_text() {
    char buf[256];
    unsigned long e = ERR_get_error();
    if (e == 0) return "no OpenSSL error";
    ERR_error_string_n(e, buf, sizeof buf);
    return buf;
}
}  // namespace

std::unique_ptr<RawConnection> RawConnection::open(std::uint16_t port, const RawOptions& opts,
                                                   std::string* error) {
    // A peer that closes first must be an error to read, not a SIGPIPE that ends the test.
    static const bool ignore_sigpipe = [] { return ::signal(SIGPIPE, SIG_IGN) != SIG_ERR; }();
    (void)ignore_sigpipe;
    std::unique_ptr<RawConnection> c(new RawConnection());
    c->m_opts = opts;
    c->m_fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(c->m_fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
        if (error) *error = std::string("connect: ") + std::strerror(errno);
        return nullptr;
    }
    timeval tv{static_cast<time_t>(opts.timeout.count() / 1000),
               static_cast<suseconds_t>((opts.timeout.count() % 1000) * 1000)};
    ::setsockopt(c->m_fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    ::setsockopt(c->m_fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    int one = 1;
    ::setsockopt(c->m_fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (!opts.tls || !opts.handshake) return c;
    SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
    c->m_ctx = ctx;
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
    if (!opts.ca_file.empty()) SSL_CTX_load_verify_locations(ctx, opts.ca_file.c_str(), nullptr);
    if (opts.tls12_only) SSL_CTX_set_max_proto_version(ctx, TLS1_2_VERSION);
    if (!opts.cipher_list.empty() && SSL_CTX_set_cipher_list(ctx, opts.cipher_list.c_str()) != 1) {
        if (error) *error = "cipher list refused by OpenSSL: " + ssl_error_text();
        return nullptr;
    }
    SSL* ssl = SSL_new(ctx);
    c->m_ssl = ssl;
    SSL_set_fd(ssl, c->m_fd);
    SSL_set_tlsext_host_name(ssl, "localhost");
    if (SSL_connect(ssl) != 1) {
        if (error) *error = "handshake: " + ssl_error_text();
        return nullptr;
    }
    return c;
}

RawConnection::~RawConnection() {
    if (m_ssl) SSL_free(static_cast<SSL*>(m_ssl));
    if (m_ctx) SSL_CTX_free(static_cast<SSL_CTX*>(m_ctx));
    if (m_fd >= 0) ::close(m_fd);
}

bool RawConnection::send(std::string_view bytes) {
    while (!bytes.empty()) {
        long n = m_ssl ? SSL_write(static_cast<SSL*>(m_ssl), bytes.data(),
                                   static_cast<int>(std::min<std::size_t>(bytes.size(), 1 << 20)))
                       : ::send(m_fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
        if (n <= 0) return false;
        bytes.remove_prefix(static_cast<std::size_t>(n));
    }
    return true;
}

long RawConnection::read_some(char* buf, std::size_t n) {
    if (m_ssl) return SSL_read(static_cast<SSL*>(m_ssl), buf, static_cast<int>(n));
    return ::recv(m_fd, buf, n, 0);
}

std::string RawConnection::read_response() {
    std::string in;
    char buf[16384];
    for (;;) {
        auto end = in.find("\r\n\r\n");
        if (end != std::string::npos) {
            std::size_t length = 0;
            auto cl = in.find("Content-Length: ");
            if (cl == std::string::npos) cl = in.find("content-length: ");
            if (cl != std::string::npos && cl < end) length = std::stoul(in.substr(cl + 16));
            if (in.size() >= end + 4 + length) return in.substr(0, end + 4 + length);
        }
        long n = read_some(buf, sizeof buf);
        if (n <= 0) return in;
        in.append(buf, static_cast<std::size_t>(n));
    }
}

bool RawConnection::wait_closed() {
    char buf[4096];
    const auto deadline = std::chrono::steady_clock::now() + m_opts.timeout;
    while (std::chrono::steady_clock::now() < deadline) {
        long n = read_some(buf, sizeof buf);
        if (n == 0) return true;
        if (n < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK) return false;  // SO_RCVTIMEO passed
            return true;  // reset, or a TLS alert then close
        }
    }
    return false;
}

std::string RawConnection::cipher() const {
    return m_ssl ? SSL_get_cipher_name(static_cast<SSL*>(m_ssl)) : "";
}

std::string RawConnection::peer_subject() const {
    if (!m_ssl) return "";
    X509* cert = SSL_get1_peer_certificate(static_cast<SSL*>(m_ssl));
    if (!cert) return "";
    char buf[512];
    X509_NAME_oneline(X509_get_subject_name(cert), buf, sizeof buf);
    X509_free(cert);
    return buf;
}

int status_of(std::string_view response) {
    if (response.size() < 12 || response.substr(0, 5) != "HTTP/") return 0;
    return std::atoi(std::string(response.substr(9, 3)).c_str());
}

}  // namespace crcrd
