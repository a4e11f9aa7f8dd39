#pragma once
// Maps paths to handlers: health, readiness and the webhook. Unknown paths get 404, known
// paths with the wrong method 405.

#include <boost/asio/awaitable.hpp>

#include <string>

#include "crcrd/http/message.hpp"
#include "crcrd/ingest/webhook.hpp"
#include "crcrd/store/writer.hpp"

namespace crcrd::app {

class Router {
public:
    Router(std::string webhook_path, ingest::WebhookHandler& webhook, store::Writer& writer)
        : m_webhook_path(std::move(webhook_path)), m_webhook(webhook), m_writer(writer) {}

    boost::asio::awaitable<http::Response> route(http::Request& req);

private:
    boost::asio::awaitable<http::Response> ready();

    std::string m_webhook_path;
    ingest::WebhookHandler& m_webhook;
    store::Writer& m_writer;
};

}  // namespace crcrd::app
