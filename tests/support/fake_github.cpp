#include "support/fake_github.hpp"

#include <boost/asio/io_context.hpp>

#include <thread>

#include "crcrd/http/server.hpp"
#include "support/certs.hpp"

namespace crcrd {

struct FakeGithub::Impl {
    boost::asio::io_context ioc{1};
    std::unique_ptr<http::Server> server;
    std::thread thread;
    mutable std::mutex mu;
    std::vector<http::Request> seen;
    Handler handler;
};

FakeGithub::FakeGithub(Handler handler, std::uint64_t max_body_bytes,
                       std::chrono::milliseconds idle_timeout)
    : m_impl(std::make_unique<Impl>()) {
    m_impl->handler = std::move(handler);
    config::ServerConfig cfg;
    cfg.host = "127.0.0.1";
    cfg.port = 0;
    cfg.max_body_bytes = max_body_bytes;
    cfg.idle_timeout = idle_timeout;
    cfg.tls = config::TlsConfig{test_certs().cert, test_certs().key};
    auto* impl = m_impl.get();
    m_impl->server = std::make_unique<http::Server>(
        std::vector<boost::asio::io_context*>{&m_impl->ioc}, cfg,
        [impl](http::Request& req) -> boost::asio::awaitable<http::Response> {
            {
                std::lock_guard lk(impl->mu);
                impl->seen.push_back(req);
            }
            co_return impl->handler(req);
        });
    auto s = m_impl->server->start();
    if (!s) throw std::runtime_error(s.error().message);
    m_impl->thread = std::thread([impl] { impl->ioc.run(); });
}

FakeGithub::~FakeGithub() {
    m_impl->ioc.stop();
    if (m_impl->thread.joinable()) m_impl->thread.join();
}

std::string FakeGithub::url() const {
    return "https://127.0.0.1:" + std::to_string(m_impl->server->port());
}

std::vector<http::Request> FakeGithub::requests() const {
    std::lock_guard lk(m_impl->mu);
    return m_impl->seen;
}

}  // namespace crcrd
