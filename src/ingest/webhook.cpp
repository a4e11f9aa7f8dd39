#include "crcrd/ingest/webhook.hpp"

#include <spdlog/spdlog.h>
#include <boost/asio/use_awaitable.hpp>
#include <nlohmann/json.hpp>

#include <chrono>

#include "crcrd/core/compress.hpp"
#include "crcrd/core/time.hpp"
#include "crcrd/ingest/event.hpp"
#include "crcrd/ingest/trust.hpp"
#include "crcrd/store/async.hpp"
#include "crcrd/store/deliveries.hpp"

namespace crcrd::ingest {

using nlohmann::json;
using store::Verdict;

WebhookHandler::WebhookHandler(std::shared_ptr<const Policy> policy, store::Writer& writer)
    : m_policy(std::move(policy)), m_writer(writer) {}

void WebhookHandler::set_policy(std::shared_ptr<const Policy> policy) {
    std::lock_guard lk(m_mu);
    m_policy = std::move(policy);
}

std::shared_ptr<const Policy> WebhookHandler::policy() const {
    std::lock_guard lk(m_mu);
    return m_policy;
}

boost::asio::awaitable<http::Response> WebhookHandler::handle(http::Request& req) {
    const auto pol = policy();
    auto evaluated = evaluate(req, *pol,
                              std::chrono::duration_cast<std::chrono::seconds>(
                                  std::chrono::system_clock::now().time_since_epoch())
                                  .count());
    auto d = evaluated.delivery;
    http::Response res = std::move(evaluated.rejection);
    std::optional<Event> event = std::move(evaluated.event);

    // The operation is made in its own statement: g++ 12 can destroy temporaries of a
    // co_await full-expression twice, so none with a destructor may live in one.
    auto write = store::async_write<store::Outcome>(
        m_writer, [d](store::Db& db) { return store::record_delivery(db, *d); },
        boost::asio::use_awaitable);
    auto [err, outcome] = co_await std::move(write);

    if (err) {
        spdlog::error("delivery id={} scheme={} event={} storage failed code={} error=\"{}\"",
                      d->delivery_id, d->scheme, d->event, to_string(err->code), err->message);
        if (d->intended != Verdict::rejected) {
            res = http::Response::error(503, "unavailable");
            res.headers.emplace_back(
                "Retry-After",
                std::to_string(
                    std::chrono::duration_cast<std::chrono::seconds>(pol->retry_after).count()));
        }
        co_return res;
    }
    switch (outcome.verdict) {
        case Verdict::queued: {
            json body = {{"status", "queued"},
                         {"run_id", *outcome.run_id},
                         {"sha", event->sha},
                         {"delivery_id", d->delivery_id}};
            if (!outcome.superseded.empty()) body["superseded"] = outcome.superseded;
            res = http::Response::json(202, body);
        } break;
        case Verdict::duplicate:
            res = http::Response::json(
                200, {{"status", "duplicate"},
                      {"run_id", outcome.run_id ? json(*outcome.run_id) : json(nullptr)}});
            break;
        case Verdict::ignored:
            res = http::Response::json(200, {{"status", "ignored"}, {"reason", d->reason}});
            break;
        case Verdict::cancelled:
            res =
                http::Response::json(200, {{"status", "cancelled"}, {"run_ids", outcome.run_ids}});
            if (outcome.run_id) {
                res = http::Response::json(200, {{"status", "cancelled"},
                                                 {"run_ids", outcome.run_ids},
                                                 {"post_merge_run_id", *outcome.run_id},
                                                 {"sha", d->run->sha}});
            }
            break;
        case Verdict::pong:
            res = http::Response::json(200, {{"status", "pong"}});
            break;
        case Verdict::rejected:
            break;  // `res` already holds the rejection
    }
    if (outcome.verdict == Verdict::rejected &&
        !m_rejects.admit(http::address_of(req.remote), res.status))
        co_return res;
    auto level = outcome.verdict == Verdict::rejected ? spdlog::level::warn : spdlog::level::info;
    spdlog::log(level,
                "delivery id={} crcr_id={} scheme={} event={} verdict={} status={} run_id={} "
                "sha={} reason=\"{}\"",
                d->delivery_id, d->crcr_delivery_id.value_or("-"), d->scheme, d->event,
                store::to_string(outcome.verdict), res.status,
                outcome.run_id ? std::to_string(*outcome.run_id) : "-", event ? event->sha : "-",
                d->reason);
    co_return res;
}

void WebhookHandler::flush_reject_log() {
    for (const auto& line : m_rejects.flush()) spdlog::warn("{}", line);
}

}  // namespace crcrd::ingest
