#pragma once
// Delivers the outbox (docs/reporting.md, "Lanes and budget"): one lane per sink (GitHub
// statuses, relay callbacks, the report file), each a thread with its own order, pacing,
// request budget, back-off, pause and dead letters, so that a wait of one never delays another.

#include <chrono>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "crcrd/config/config.hpp"
#include "crcrd/core/clock.hpp"
#include "crcrd/core/time.hpp"
#include "crcrd/core/vocab.hpp"
#include "crcrd/report/budget.hpp"
#include "crcrd/store/fwd.hpp"

namespace crcrd::store {
class Writer;
}

namespace crcrd::report {

struct SenderSettings {
    std::optional<config::GithubReportConfig> github;
    std::optional<std::filesystem::path> file;
    std::optional<config::CrcrCallbackConfig> callback;
    std::chrono::milliseconds retry_initial{std::chrono::seconds(2)};
    std::chrono::milliseconds retry_max{std::chrono::minutes(10)};
    std::chrono::milliseconds timeout{std::chrono::seconds(30)};
    std::chrono::milliseconds min_interval{std::chrono::seconds(1)};  // between POSTs to GitHub
    std::vector<BudgetWindow> github_budget;                          // report.github.budget
    std::vector<BudgetWindow> callback_budget;                        // report.crcr_callback.budget
};
SenderSettings sender_settings(const config::ReportConfig& r);

/// What one lane is doing, as GET /api/v1/outbox and /metrics show it.
struct LaneState {
    Sink sink = Sink::github;
    bool configured = false;
    std::optional<SystemTime> paused_until;  // a rate-limit answer's pause
    std::optional<SystemTime> next_send_at;  // when the lane looks next (rows waiting or not)
    bool budget_spent = false;               // the next request waits for the budget
    std::vector<RequestBudget::Left> budget;
    /// Rows the budget's shares held back at the last look (report::may_take; they stay waiting,
    /// and a pending one is replaced by its context's next state).
    std::int64_t held_back = 0;
    std::int64_t requests = 0;  // requests made since the start
    std::string last_error;     // of the last attempt that failed; "" after a success
};

/// The lanes' states as GET /api/v1/outbox shows them ("lanes", docs/reporting.md).
nlohmann::json lanes_json(const std::vector<LaneState>& lanes);

class Lane;

class Sender {
  public:
    /// `clock`: the time the lanes' decisions read (rows due, back-off, pauses, budgets).
    Sender(store::Writer& writer, std::filesystem::path db_path, SenderSettings settings,
           const core::Clock& clock = core::system_clock());
    ~Sender();
    /// Starts every lane's thread.
    void start();
    /// Something new may be waiting.
    void notify();
    /// Stops every lane (a request in flight ends first, within report.timeout).
    void stop();
    /// SIGHUP: new endpoints, credentials and budgets for the rows still waiting.
    void set_settings(SenderSettings settings);
    /// Each lane's state, GitHub's first, then the callbacks', then the file's.
    std::vector<LaneState> lanes() const;

  private:
    std::vector<std::unique_ptr<Lane>> m_lanes;
};

}  // namespace crcrd::report
