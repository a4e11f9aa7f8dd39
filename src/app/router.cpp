#include "app/router.hpp"

#include <boost/asio/use_awaitable.hpp>
#include <chrono>
#include <nlohmann/json.hpp>

#include "crcrd/core/time.hpp"

namespace crcrd::app {

using nlohmann::json;

namespace {
http::Response method_not_allowed(const char* allow) {
    auto r = http::Response::error(405, "method_not_allowed");
    r.headers.emplace_back("Allow", allow);
    return r;
}
}  // namespace

boost::asio::awaitable<http::Response> Router::route(http::Request& req) {
    const auto start = std::chrono::steady_clock::now();
    auto res = co_await dispatch(req);
    m_api.metrics_registry().observe_request(
        route_label(req), req.method,
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    co_return res;
}

std::string Router::route_label(const http::Request& req) const {
    if (req.path == m_webhook_path && m_serves != Serves::admin) return "webhook";
    if (req.path == "/healthz" || req.path == "/readyz") return req.path;
    return admin::Api::route_label(req.path);
}

boost::asio::awaitable<http::Response> Router::dispatch(http::Request& req) {
    if (req.path == m_webhook_path && m_serves != Serves::admin)
        co_return co_await m_webhook.handle(req);
    if (req.refused_status != 0) {
        // Refused by the server (413, 431): only the webhook keeps a row of it.
        auto r = http::Response::error(req.refused_status, req.refused_status == 413
                                                               ? "payload_too_large"
                                                               : "headers_too_large");
        r.close = true;
        co_return r;
    }
    if (admin::Api::owns(req.path) && m_serves != Serves::webhook)
        co_return co_await m_api.handle(req);
    if (req.path == "/healthz") {
        if (req.method != "GET" && req.method != "HEAD") co_return method_not_allowed("GET, HEAD");
        co_return http::Response::json(200, {{"status", "ok"}});
    }
    if (req.path == "/readyz") {
        if (req.method != "GET" && req.method != "HEAD") co_return method_not_allowed("GET, HEAD");
        co_return co_await ready();
    }
    co_return http::Response::error(404, "not_found", "no route for " + req.path.substr(0, 200));
}

boost::asio::awaitable<http::Response> Router::ready() {
    // The writer's real state, without writing anything (docs/operations.md): the last commit
    // failing (a full disk, an I/O error) or a full queue make the daemon not ready.
    if (auto err = m_writer.last_commit_error()) {
        auto r = http::Response::json(
            503, {{"status", "unavailable"}, {"detail", "the last commit failed: " + *err}});
        r.headers.emplace_back("Retry-After", "5");
        co_return r;
    }
    if (m_writer.overloaded()) {
        auto r = http::Response::json(
            503, {{"status", "unavailable"}, {"detail", "the write queue is full"}});
        r.headers.emplace_back("Retry-After", "5");
        co_return r;
    }
    co_return http::Response::json(200, {{"status", "ready"}});
}

}  // namespace crcrd::app
