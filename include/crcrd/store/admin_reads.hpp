#pragma once
// The admin API's reads: runs, jobs, deliveries, outbox rows, test results, slots and recovery
// passes as typed rows, on a read-only connection per worker thread. Blocking: call from a
// worker, never from a network thread. Rows hold the columns as stored (JSON columns as raw
// text in the `*_json` fields); what to show is the admin module's business.

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "crcrd/core/result.hpp"
#include "crcrd/core/vocab.hpp"
#include "crcrd/store/bisections.hpp"
#include "crcrd/store/builds.hpp"
#include "crcrd/store/daily.hpp"
#include "crcrd/store/fwd.hpp"
#include "crcrd/store/trunk.hpp"

namespace crcrd::store {

/// One page of a newest-first list: at most `limit` rows with an id below `before_id`.
struct Page {
    int limit = 50;
    std::optional<std::int64_t> before_id;  // from the cursor
};

/// Filters of the run list; each one that is set must match exactly (`since` inclusive,
/// `until` exclusive, both compared as text with created_at).
struct RunQuery {
    std::optional<std::string> state, conclusion, sha, event, since, until;
    std::optional<std::int64_t> pr;
    Page page;
};

/// Filters of the outbox list; `delivery` is waiting | sent | dead | coalesced.
struct OutboxQuery {
    std::optional<std::string> delivery, sink;
    std::optional<std::int64_t> run_id;
    Page page;
};

/// Filters of the selection-miss list (docs/verdicts.md).
struct SelectionMissQuery {
    std::optional<std::int64_t> run_id;
    std::optional<std::string> test;
    Page page;
};

/// A row of `selection_misses`, `commits_json` as stored.
struct SelectionMissRow {
    std::int64_t id = 0, run_id = 0, previous_run_id = 0;
    std::string tier, test, commits_json, created_at;
};

/// A row of `runs` as the admin API shows it.
struct RunRow {
    std::int64_t id = 0;
    std::string event, sha;
    std::optional<std::int64_t> pr;
    std::optional<std::string> ref, base_sha, delivery_id;
    std::string state;
    std::optional<std::string> conclusion, reason;
    std::string created_at;
    std::optional<std::string> finished_at, selection_json, base_ref, head_repo;
};

/// A row of `jobs` (one attempt) as the admin API shows it.
struct JobRow {
    std::int64_t id = 0, run_id = 0;
    std::string tier, state;
    std::optional<std::string> conclusion, reason;
    std::int64_t attempt = 0;
    std::optional<std::string> slot, started_at, finished_at;
    std::optional<std::int64_t> exit_status;
    std::string tests_json;
    std::optional<std::string> metadata_json;
    std::int64_t timeout_ms = 0;
    std::optional<std::string> counts_json, evidence_json;
};

/// A row of `outbox`: a status, a file line or a callback.
struct OutboxRow {
    std::int64_t id = 0;
    std::string sink;
    std::int64_t run_id = 0;
    std::string sha, context, state, description;
    std::optional<std::string> target_url;
    std::string delivery;
    std::int64_t attempts = 0;
    std::optional<std::string> next_attempt_at, last_error;
    std::optional<std::int64_t> http_status;
    std::string created_at;
    std::optional<std::string> sent_at;
};

/// A row of `deliveries` without its body.
struct DeliveryRow {
    std::int64_t id = 0;
    std::optional<std::string> delivery_id;
    std::string received_at;
    std::optional<std::string> scheme, event;
    std::string verdict;
    std::int64_t http_status = 0;
    std::optional<std::string> reason;
    std::optional<std::int64_t> run_id;
    std::optional<std::string> crcr_delivery_id, run_ids_json;
};

/// A row of `test_results`; `rowid` is its page cursor.
struct TestResultRow {
    std::int64_t rowid = 0;
    std::string name, outcome;
    double duration_s = 0;
    std::optional<std::string> message;
};

/// A row of `slots`; `state` is the stored one (idle | busy | offline), `drained` apart.
struct SlotRow {
    std::string name, state;
    bool drained = false;
    std::optional<std::int64_t> job_id;
    std::optional<std::string> last_health_json;
};

/// A row of `recovery_passes` as the admin API lists it.
struct RecoveryPassItem {
    std::int64_t id = 0;
    std::string started_at, finished_at, since;
    std::int64_t listed = 0, failed = 0, redelivered = 0;
    std::string errors_json;
};

/// A run with its jobs and its statuses, all read from one snapshot.
struct RunDetail {
    RunRow run;
    std::vector<JobRow> jobs;
    std::vector<OutboxRow> statuses;
    std::optional<Bisection> bisection;  // of this run's regression (docs/verdicts.md)
    std::vector<BisectRun> bisect_runs;  // its runs
    std::optional<Bisection> bisecting;  // the bisection this bisect run serves
};

/// Where a job's log is: `job_found` false when there is no such job, `path` empty while the
/// job has no log yet.
struct JobLog {
    bool job_found = false;
    std::optional<std::string> path;
};

/// The admin API's read-only queries on this worker thread's connection. A storage failure is
/// an error value (code "storage", "storage_busy", ...), never an exception; no call writes.
/// What a lane has waiting (docs/reporting.md, "Observation").
struct LaneBacklog {
    std::int64_t waiting = 0;
    std::int64_t dead = 0;
    /// The creation time of the oldest waiting final state (a GitHub state other than pending, a
    /// `completed` callback, any report-file line), or "".
    std::string oldest_final;
};

class AdminReads {
  public:
    /// This thread's read-only connection to `db`: opened on first use, reopened when `db`
    /// changes, kept for the thread's life. Code "storage" when it cannot be opened. The value
    /// is only valid on the calling thread and while the thread does not open another `db`.
    static Result<AdminReads> for_this_thread(const std::filesystem::path& db);

    /// Runs matching `q`, newest (highest id) first, at most `q.page.limit`.
    Result<std::vector<RunRow>> runs(const RunQuery& q);
    /// Run `id`, its jobs (by position, then attempt) and the newest status of each (sink,
    /// context) except callbacks (by sink, then the context's first status), read from one
    /// snapshot. Empty when there is no such run.
    Result<std::optional<RunDetail>> run_detail(std::int64_t id);
    /// Deliveries, newest first, of one verdict when `verdict` is set.
    Result<std::vector<DeliveryRow>> deliveries(const std::optional<std::string>& verdict,
                                                const Page& p);
    /// Outbox rows matching `q`, newest first.
    Result<std::vector<OutboxRow>> outbox(const OutboxQuery& q);
    /// What `sink`'s lane has waiting: counts of open work, and its oldest waiting final state.
    Result<LaneBacklog> outbox_backlog(Sink sink);
    /// Job (attempt) `id`; empty when there is none.
    Result<std::optional<JobRow>> job(std::int64_t id);
    /// Where job `id`'s log is (see JobLog).
    Result<JobLog> job_log(std::int64_t id);
    /// Job `job_id`'s test results, newest (highest rowid) first, of one outcome when set.
    Result<std::vector<TestResultRow>> tests(std::int64_t job_id,
                                             const std::optional<std::string>& outcome,
                                             const Page& p);
    /// Every slot, by name.
    Result<std::vector<SlotRow>> slots();
    /// The newest `limit` recovery passes, newest first.
    Result<std::vector<RecoveryPassItem>> recovery_passes(int limit);
    /// The recovery watermark; empty when none was ever stored.
    Result<std::optional<std::string>> recovery_watermark();
    /// Selection misses matching `q`, newest (highest id) first (in selection_misses.cpp).
    Result<std::vector<SelectionMissRow>> selection_misses(const SelectionMissQuery& q);
    /// Builds matching `q` (docs/build.md), newest (highest id) first, at most `q.limit`, with
    /// their runs and open jobs (in build_reads.cpp).
    Result<std::vector<BuildRow>> builds(const BuildsQuery& q);
    /// Build `id`; empty when there is none (in build_reads.cpp).
    Result<std::optional<BuildRow>> build(std::int64_t id);
    /// Trunk health (trunk.hpp, in trunk_reads.cpp): a page of the grid.
    Result<TrunkPage> trunk(const TrunkQuery& q);
    /// `tier`'s last attempt in each of `ref`'s push and scheduled runs with an id up to `from`
    /// that ran it, newest first, at most `limit`: fewer only when there are no more, however
    /// many attempts a run has.
    Result<std::vector<TierOutcome>> tier_outcomes(const std::string& ref, const std::string& tier,
                                                   std::int64_t from, int limit);
    /// Test `name`'s results (every attempt's, base checks left out) with a job id below
    /// `before_job` when set, newest first, at most `limit`.
    Result<std::vector<TestHistoryRow>> test_results_of(const std::string& name,
                                                        std::optional<std::int64_t> before_job,
                                                        int limit);
    /// The tests among the newest `results` flaky results, by their newest one, newest first.
    Result<std::vector<FlakyName>> recent_flaky(int results);
    /// The bisections whose bad run is one of `run_ids`, newest bad run first.
    Result<std::vector<Bisection>> bisections_of_runs(const std::vector<std::int64_t>& run_ids);
    /// Test `name`'s last `runs` (run, tier) results from the flaky list's roll-up (migration
    /// 23, kept for the tests that ever had a flaky result; empty for the others), newest first.
    Result<FlakyWindow> flaky_window(const std::string& name, int runs);
    /// The daily roll-ups (daily.hpp) of the days from `since` ("YYYY-MM-DD") on (in daily.cpp).
    Result<DailyRollups> daily(const std::string& since);

  private:
    explicit AdminReads(Db& db) : m_db(&db) {}
    Db* m_db;
};

}  // namespace crcrd::store
