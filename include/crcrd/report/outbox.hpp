#pragma once
// The outbox (docs/reporting.md): what crcrd must tell GitHub, the report file and the relay,
// written in the same transaction as the state change that caused it. Triggers mark a run
// "dirty" whenever a run or job changes state; sync_dirty(), run by the writer before every
// commit, turns each dirty run into the statuses it should show and appends a row for every
// context whose state or description changed.

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "crcrd/core/vocab.hpp"
#include "crcrd/store/fwd.hpp"

namespace crcrd::report {

struct OutboxSettings {
    std::string context_prefix = "crcr";
    bool github = false;    // report.github is configured
    bool file = false;      // report.file is configured
    bool callback = false;  // report.crcr_callback is configured
    /// report.target_url with "{run_id}" replaced; empty: no link.
    std::string target_url;
    // The relay callback (docs/reporting.md):
    std::string public_url;  // server.public_url, for the run and log links
    std::string workflow_name = "crcrd";
    std::string scheduled_event_type = "nightly";
    std::string upstream_repo = "pytorch/pytorch";
};

/// The relay's `workflow.conclusion` for a class (docs/verdicts.md): passed, flaky → success;
/// regression → failure; timeout → timed_out; cancelled → cancelled; the rest → neutral.
std::string relay_conclusion(Conclusion crcr_class);

/// What a relay callback is built from: the run as the relay dispatched it, and one attempt
/// of one tier.
struct CallbackRun {
    std::int64_t id = 0;
    RunEvent event = RunEvent::push;  // pull_request | push | schedule
    std::string sha;
    std::string delivery_id;  // client_payload.delivery_id; the SHA for a scheduled run
    nlohmann::json payload;   // the upstream payload, verbatim
};
struct CallbackJob {
    std::int64_t id = 0;
    std::string tier;
    std::int64_t attempt = 1;
    JobState state = JobState::running;
    std::optional<Conclusion> conclusion;  // once completed
    std::string reason, started_at, finished_at;
    nlohmann::json counts;  // {"passed", "failed", "skipped", "flaky"} or null
};

/// The body of one callback (docs/reporting.md): `in_progress` when `completed` is false.
/// The ids are strings as the relay's own reporter sends them; `check_run_id` is the job id,
/// the same in both callbacks of an attempt (HUD keys its row on it).
nlohmann::json callback_body(const CallbackRun& run, const CallbackJob& job, bool completed,
                             const OutboxSettings& s);

/// A GitHub status state and description for a class (docs/verdicts.md) (descriptions ≤ 140
/// characters).
struct StatusText {
    GithubState state = GithubState::pending;
    std::string description;
};
StatusText final_status(Conclusion conclusion, const std::string& reason);

/// Cuts `text` to at most `max` bytes on a UTF-8 boundary, ending with "…" when cut.
std::string shorten(const std::string& text, std::size_t max = 140);

/// Drains `status_dirty` into new outbox rows; how many it appended. Runs inside the writer's
/// transaction.
std::size_t sync_dirty(store::Db& db, const OutboxSettings& settings);

/// Holds the settings the writer's hook reads; replaced on SIGHUP.
class OutboxHook {
  public:
    explicit OutboxHook(OutboxSettings s)
        : m_settings(std::make_shared<const OutboxSettings>(std::move(s))) {}
    void set(OutboxSettings s) {
        std::lock_guard lk(m_mu);
        m_settings = std::make_shared<const OutboxSettings>(std::move(s));
    }
    void operator()(store::Db& db) {
        std::shared_ptr<const OutboxSettings> s;
        {
            std::lock_guard lk(m_mu);
            s = m_settings;
        }
        if (sync_dirty(db, *s) > 0) m_appended = true;
    }
    /// Whether a commit since the last call appended rows (the lanes have something new). Called
    /// after the commit, on the writer thread; a batch rolled back may leave it set, which only
    /// wakes the lanes once for nothing.
    bool take_appended() { return m_appended.exchange(false); }

  private:
    std::atomic<bool> m_appended = false;
    std::mutex m_mu;
    std::shared_ptr<const OutboxSettings> m_settings;
};

}  // namespace crcrd::report
