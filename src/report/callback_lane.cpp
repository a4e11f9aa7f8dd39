// The relay callback lane (docs/reporting.md, "The relay callback"): callbacks in id order, a
// `completed` after its `in_progress`, within the relay's per-repository budget; or, with
// `report.crcr_callback.file`, the same bodies as lines of a file.
#include <spdlog/spdlog.h>

#include <atomic>
#include <memory>

#include <nlohmann/json.hpp>

#include "crcrd/http/client.hpp"
#include "crcrd/report/relay_token.hpp"
#include "report/lane.hpp"

namespace crcrd::report {

namespace {

using nlohmann::json;

class CallbackLane final : public Lane {
  public:
    explicit CallbackLane(LaneDeps deps)
        : Lane(Sink::callback, store::LaneOrder::fifo, 1, std::move(deps)) {}
    ~CallbackLane() override { stop(); }

  protected:
    bool configured(const SenderSettings& s) const override { return s.callback.has_value(); }
    void settings_changed(const SenderSettings& s) override {
        m_token.store(s.callback ? std::make_shared<RelayToken>(*s.callback) : nullptr);
    }
    std::vector<BudgetWindow> budget_of(const SenderSettings& s) const override {
        return s.callback && !s.callback->file ? s.callback_budget : std::vector<BudgetWindow>{};
    }
    Outcome deliver(store::OutboxQueue& queue, const Row& row, const SenderSettings& s) override;
    LinesFile lines_file(const SenderSettings& s) const override {
        return {s.callback ? s.callback->file : std::nullopt, "report.crcr_callback.file"};
    }

  private:
    Outcome post(const Row& row, const SenderSettings& s);
    /// What the relay's answer `r` to `row` means.
    Outcome answer(const Row& row, const http::ClientResponse& r, RelayToken& relay_token);

    std::atomic<std::shared_ptr<RelayToken>> m_token;  // replaced on SIGHUP
};

Lane::Outcome CallbackLane::deliver(store::OutboxQueue& queue, const Row& row,
                                    const SenderSettings& s) {
    if (!s.callback)
        return {Outcome::dead, std::nullopt, "report.crcr_callback is no longer configured",
                std::nullopt};
    // The relay accepts a `completed` only after its `in_progress`: it waits for it.
    if (row.state == "completed") {
        const std::string pair = row.context.substr(0, row.context.rfind('/')) + "/in_progress";
        const std::optional<OutboxDelivery> state =
            or_throw(queue.first_callback_delivery(row.run_id, pair));
        if (state == OutboxDelivery::waiting)
            return {Outcome::later, std::nullopt, "", std::nullopt};
        if (state == OutboxDelivery::dead) {
            return {Outcome::dead, std::nullopt,
                    "its in_progress callback was not accepted, so the relay would refuse it",
                    std::nullopt};
        }
    }
    if (s.callback->file) {
        gather(row.body.value_or("{}"));
        return {Outcome::sent, std::nullopt, "", std::nullopt};
    }
    return post(row, s);
}

Lane::Outcome CallbackLane::post(const Row& row, const SenderSettings& s) {
    const std::shared_ptr<RelayToken> relay_token = m_token.load();
    if (!relay_token) return {Outcome::retry, std::nullopt, "no token yet", std::nullopt};
    auto token = relay_token->token();
    if (!token) return {Outcome::retry, std::nullopt, token.error().message, std::nullopt};
    if (!begin_request(row, s)) return {Outcome::later, std::nullopt, "", std::nullopt};
    http::ClientOptions opts;
    opts.timeout = s.timeout;
    opts.ca_file = s.callback->ca_file;
    auto r =
        http::send("POST", s.callback->url,
                   {{"Content-Type", "application/json"}, {"Authorization", "Bearer " + *token}},
                   row.body.value_or("{}"), opts);
    end_request(row, r && r->resent);
    if (!r) return {Outcome::retry, std::nullopt, r.error().message, std::nullopt};
    return answer(row, *r, *relay_token);
}

Lane::Outcome CallbackLane::answer(const Row& row, const http::ClientResponse& r,
                                   RelayToken& relay_token) {
    const int code = r.status;
    std::string detail = r.body.substr(0, 300);
    if (auto j = json::parse(r.body, nullptr, false);
        j.is_object() && j.contains("detail") && j["detail"].is_string()) {
        detail = j["detail"].get<std::string>().substr(0, 300);
    }
    if (code >= 200 && code < 300) {
        if (auto j = json::parse(r.body, nullptr, false);
            j.is_object() && j.value("status", "") == "ignored") {
            spdlog::warn(
                "run_id={} relay callback {} accepted but ignored: this repository is below level "
                "L2 in the relay's allow-list",
                row.run_id, row.context);
        }
        return {Outcome::sent, code, "", std::nullopt};
    }
    const std::string msg = "HTTP " + std::to_string(code) + ": " + detail;
    // The relay answers a callback it already recorded with this 400. When an earlier request
    // for this row may have been acted on (its answer lost, a 5xx, or a crash before it was
    // stored: `tried` counts requests before they are made, `refused` those answered 4xx, which
    // the relay did not store), or this one went twice, it means delivered.
    if (code == 400 && (row.tried > row.refused || r.resent) &&
        detail.find("invalid state transition") != std::string::npos) {
        return {Outcome::sent, code,
                "already recorded by the relay (an earlier answer was lost): " + detail,
                std::nullopt};
    }
    // The relay writes its dispatch record after dispatching: a very fast first callback can
    // come before it. A few retries cover that race; an expired record (3 days) stays dead.
    if (code == 400 && row.attempts < 3 &&
        detail.find("no matching dispatch record") != std::string::npos) {
        return {Outcome::retry, code, msg, std::nullopt};
    }
    if (code == 401) {
        relay_token.invalidate();  // an OIDC token expires in minutes: mint a new one
        return {Outcome::retry, code, msg + " (a new token is taken for the next attempt)",
                std::nullopt};
    }
    if (code == 429) {
        // The relay's limit is per repository per 60 s, counts refused requests too, and sends
        // no Retry-After: the lane pauses a minute unless it says otherwise.
        const auto after = header_int(r, "retry-after").value_or(60);
        return {Outcome::wait, code, msg,
                clock().now() + std::chrono::seconds(std::max<std::int64_t>(after, 1))};
    }
    if (code >= 500) return {Outcome::retry, code, msg, std::nullopt};
    return {Outcome::dead, code, msg, std::nullopt};
}

}  // namespace

std::unique_ptr<Lane> make_callback_lane(LaneDeps deps) {
    return std::make_unique<CallbackLane>(std::move(deps));
}

}  // namespace crcrd::report
