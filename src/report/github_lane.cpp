// The GitHub lane (docs/reporting.md, "GitHub statuses"): commit statuses in priority order
// within the request budget, at least `report.min_interval` apart.
#include <spdlog/spdlog.h>

#include <atomic>
#include <memory>

#include <nlohmann/json.hpp>

#include "crcrd/github/auth.hpp"
#include "crcrd/github/client.hpp"
#include "report/lane.hpp"

namespace crcrd::report {

namespace {

using nlohmann::json;

// GitHub keeps at most this many statuses per SHA and context.
constexpr std::int64_t k_github_status_limit = 1000;

std::string github_message(const std::string& body) {
    auto j = json::parse(body, nullptr, false);
    if (j.is_object() && j.contains("message") && j["message"].is_string()) {
        std::string m = j["message"];
        if (j.contains("errors")) m += " " + j["errors"].dump();
        return m.substr(0, 1000);
    }
    return body.substr(0, 300);
}

class GithubLane final : public Lane {
  public:
    explicit GithubLane(LaneDeps deps) : Lane(Sink::github, store::LaneOrder::priority, 1, deps) {}
    ~GithubLane() override { stop(); }

  protected:
    bool configured(const SenderSettings& s) const override { return s.github.has_value(); }
    void settings_changed(const SenderSettings& s) override {
        m_auth.store(s.github ? std::make_shared<github::Auth>(*s.github, s.timeout) : nullptr);
    }
    std::vector<BudgetWindow> budget_of(const SenderSettings& s) const override {
        return s.github_budget;
    }
    std::chrono::milliseconds floor_of(const SenderSettings& s) const override {
        return s.min_interval;
    }
    bool hold_back(const Row& row, const RequestBudget& b, SystemTime now) override {
        return !may_take(static_cast<StatusPriority>(row.priority), b, now);
    }
    Outcome deliver(store::OutboxQueue& queue, const Row& row, const SenderSettings& s) override;

  private:
    /// What GitHub's answer `r` to `row` means.
    Outcome answer(const Row& row, const http::ClientResponse& r, const SenderSettings& s,
                   github::Auth& auth);

    std::atomic<std::shared_ptr<github::Auth>> m_auth;  // replaced on SIGHUP
};

Lane::Outcome GithubLane::deliver(store::OutboxQueue& queue, const Row& row,
                                  const SenderSettings& s) {
    if (!s.github)
        return {Outcome::dead, std::nullopt, "report.github is no longer configured", std::nullopt};
    const auto sent = or_throw(queue.github_sent_count(row.sha, row.context));
    if (sent >= k_github_status_limit ||
        (sent == k_github_status_limit - 1 && row.state == "pending")) {
        return {Outcome::dead, std::nullopt,
                "GitHub keeps at most 1000 statuses per SHA and context; " + std::to_string(sent) +
                    " were sent (the last one is kept for a final state)",
                std::nullopt};
    }
    const std::shared_ptr<github::Auth> auth = m_auth.load();
    if (!auth) return {Outcome::retry, std::nullopt, "no credentials yet", std::nullopt};
    auto token = auth->token();
    if (!token) return {Outcome::retry, std::nullopt, token.error().message, std::nullopt};
    if (!begin_request(row, s)) return {Outcome::later, std::nullopt, "", std::nullopt};
    github::Client client(s.github->api_url, *token, s.github->ca_file, s.timeout);
    json body = {{"state", row.state},
                 {"context", row.context},
                 {"description", row.description},
                 {"target_url", row.target_url ? json(*row.target_url) : json(nullptr)}};
    auto r = client.post("/repos/" + s.github->repo + "/statuses/" + row.sha, body.dump());
    end_request(row, r && r->resent);
    if (!r) return {Outcome::retry, std::nullopt, r.error().message, std::nullopt};
    return answer(row, *r, s, *auth);
}

Lane::Outcome GithubLane::answer(const Row& row, const http::ClientResponse& r,
                                 const SenderSettings& s, github::Auth& auth) {
    const int code = r.status;
    if (code == 200 || code == 201) return {Outcome::sent, code, "", std::nullopt};
    std::string msg = "HTTP " + std::to_string(code) + ": " + github_message(r.body);
    if (code >= 500) return {Outcome::retry, code, msg, std::nullopt};
    if (code == 403 || code == 429) {
        const auto now = clock().now();
        if (auto after = header_int(r, "retry-after")) {
            return {Outcome::wait, code, msg,
                    now + std::chrono::seconds(std::max<std::int64_t>(*after, 1))};
        }
        auto remaining = r.header("x-ratelimit-remaining");
        if (remaining && *remaining == "0") {
            auto reset = header_int(r, "x-ratelimit-reset");
            auto until = reset ? SystemTime(std::chrono::seconds(*reset)) + std::chrono::seconds(1)
                               : now + std::chrono::minutes(1);
            return {Outcome::wait, code, msg, std::max(until, now + std::chrono::seconds(1))};
        }
        // A secondary rate limit without either header: at least a minute, GitHub says.
        if (code == 429 || msg.find("rate limit") != std::string::npos) {
            const auto pause = std::max<std::chrono::milliseconds>(
                std::chrono::minutes(1),
                s.retry_initial * (std::int64_t{1} << std::min<std::int64_t>(row.attempts, 6)));
            return {Outcome::wait, code, msg, now + pause};
        }
    }
    if (code == 401 || code == 403) {
        // A revoked, expired or rotated credential (403 here is not a rate limit): never a
        // dead letter, or GitHub would show `pending` forever (docs/reporting.md). Retried with
        // the 5xx back-off; the token file is read again, an App's installation token fetched
        // again.
        if (s.github->app_id) auth.invalidate();
        return {Outcome::retry, code,
                msg + " (credentials rejected; read again before the next attempt)", std::nullopt};
    }
    return {Outcome::dead, code, msg, std::nullopt};
}

}  // namespace

std::unique_ptr<Lane> make_github_lane(LaneDeps deps) {
    return std::make_unique<GithubLane>(std::move(deps));
}

}  // namespace crcrd::report
