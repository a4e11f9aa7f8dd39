#pragma once
// Maps paths to handlers: health, readiness, the webhook and the admin API. Unknown paths get 404,
// known paths with the wrong method 405.

#include <boost/asio/awaitable.hpp>

#include <string>

#include "crcrd/admin/api.hpp"
#include "crcrd/http/message.hpp"
#include "crcrd/ingest/webhook.hpp"
#include "crcrd/store/writer.hpp"

namespace crcrd::app {

class Router {
  public:
    /// What a listener serves: everything (one listener), or, with admin.listen, the webhook
    /// on the public listener and the admin API, /metrics and /ui/ on the admin one. Both
    /// answer /healthz and /readyz.
    enum class Serves { everything, webhook, admin };

    Router(std::string webhook_path, ingest::WebhookHandler& webhook, admin::Api& api,
           store::Writer& writer, Serves serves = Serves::everything)
        : m_webhook_path(std::move(webhook_path)),
          m_webhook(webhook),
          m_api(api),
          m_writer(writer),
          m_serves(serves) {}

    /// Answers `req` and observes its latency (crcrd_http_request_duration_seconds).
    boost::asio::awaitable<http::Response> route(http::Request& req);

  private:
    boost::asio::awaitable<http::Response> dispatch(http::Request& req);
    /// A bounded label for the latency histogram: "webhook", a route pattern, or "other".
    std::string route_label(const http::Request& req) const;
    boost::asio::awaitable<http::Response> ready();

    std::string m_webhook_path;
    ingest::WebhookHandler& m_webhook;
    admin::Api& m_api;
    store::Writer& m_writer;
    Serves m_serves;
};

}  // namespace crcrd::app
