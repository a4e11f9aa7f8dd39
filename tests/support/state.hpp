#pragma once
// What the daemon stored, read the way a black-box test checks it: runs, jobs, test results,
// slots, the outbox, the delivery log and a few bookkeeping tables of a TestDaemon's SQLite
// file. Every SQL text of the integration tests is in state.cpp, so that a schema change is
// fixed there once and not in the tests.
//
// Reads open a fresh read-only connection each time (as TestDaemon::scalar does), so a test
// may poll them in eventually(). Per table: `<table>_row(d, key)` is one row (an exception when
// there is none), `<table>_rows(d, filter)` the rows a filter picks and `count_<table>(d,
// filter)` how many there are. A filter field left unset matches anything; the set ones must
// all match, e.g. count_jobs(d, {.run = run, .state = "queued"}). A column that may be NULL
// reads as "" (text), null (JSON) or nullopt (numbers).
//
// The writes at the end arrange a state no API can (a crash's leftovers, a failing disk, rows
// an audit would have written); each is named for the situation it makes.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "support/daemon.hpp"

namespace crcrd {

// ---- runs

struct RunRow {
    std::int64_t id = 0;
    std::string event;
    std::string sha;
    std::optional<std::int64_t> pr;
    std::string ref;        // "" when unset
    std::string base_sha;   // "" when unset
    std::string head_repo;  // "" when unset
    std::string delivery_id;
    std::string state;
    std::string conclusion;    // "" while unset
    std::string reason;        // "" when unset
    nlohmann::json selection;  // the planner's explanation; null until planned
    std::string finished_at;   // "" while open
};

struct RunFilter {
    std::optional<std::int64_t> id = {};
    std::optional<std::string> event = {};
    std::optional<std::string> sha = {};
    std::optional<std::string> state = {};
    std::optional<std::string> conclusion = {};
    std::optional<std::string> reason = {};
    std::optional<std::string> delivery_id = {};
    std::optional<bool> planned = {};  // has (or has not) its selection yet
};

RunRow run_row(const TestDaemon& d, std::int64_t id);
/// By id.
std::vector<RunRow> run_rows(const TestDaemon& d, const RunFilter& f = {});
std::int64_t count_runs(const TestDaemon& d, const RunFilter& f = {});
/// "state/conclusion" of run `id`, e.g. "completed/passed" ("queued/" while it has none).
std::string run_state(const TestDaemon& d, std::int64_t id);
/// "state/conclusion: reason", e.g. "cancelled/cancelled: superseded by <sha>".
std::string run_summary(const TestDaemon& d, std::int64_t id);

// ---- jobs (one row per attempt of a tier)

struct JobRow {
    std::int64_t id = 0;
    std::int64_t run_id = 0;
    std::string tier;
    std::int64_t position = 0;  // the tier's place in the rules file
    std::int64_t attempt = 0;
    std::string state;
    std::string conclusion;  // "" while unset
    std::string reason;      // "" when unset
    std::string sha;         // the SHA this attempt ran on when not its run's (a base check)
    std::string tests;       // the JSON text of the tests it was given
    std::int64_t timeout_ms = 0;
    nlohmann::json metadata;  // null when unset
    nlohmann::json evidence;  // null when unset
    std::string log_path;     // "" when it has no log
    std::string started_at;   // "" when it never started
    std::string external_id;  // another executor's id (Slurm's); "" when unset
    std::optional<std::int64_t> pgid;
    std::string slot;         // the slot it leased; "" when none (a build from the cache)
    std::string finished_at;  // "" while open
    std::string build_key;    // a build job's key; "" otherwise
    std::string created_at;
    bool base_check = false;  // an attempt on the PR's base (jobs.base_check set)
};

struct JobFilter {
    std::optional<std::int64_t> id = {};
    std::optional<std::int64_t> run = {};
    std::optional<std::string> tier = {};
    std::optional<int> attempt = {};
    std::optional<std::string> state = {};
    std::optional<std::string> conclusion = {};
    std::optional<std::string> reason = {};
};

JobRow job_row(const TestDaemon& d, std::int64_t id);
/// In run order: by run, the tier's position, attempt.
std::vector<JobRow> job_rows(const TestDaemon& d, const JobFilter& f = {});
std::int64_t count_jobs(const TestDaemon& d, const JobFilter& f = {});
/// The first job the filter picks (in job_rows' order; the first attempt when several); an
/// exception when there is none.
JobRow first_job(const TestDaemon& d, const JobFilter& f);
/// The newest job the filter picks (highest id); an exception when there is none.
JobRow last_job(const TestDaemon& d, const JobFilter& f);
/// "tier:state:conclusion:attempt" of each job of run `run`, in run order, space-separated,
/// e.g. "import:completed:passed:1 smoke:cancelled:cancelled:1".
std::string jobs_of(const TestDaemon& d, std::int64_t run);

// ---- test results (of the jobs a JobFilter picks)

struct TestResultRow {
    std::int64_t job_id = 0;
    std::string name;
    std::string outcome;
};

/// By job, then name.
std::vector<TestResultRow> test_result_rows(const TestDaemon& d, const JobFilter& jobs = {});
std::int64_t count_test_results(const TestDaemon& d, const JobFilter& jobs = {});
/// "name=outcome" of each result, by name, space-separated, e.g. "ci::a=passed ci::b=flaky".
std::string test_outcomes(const TestDaemon& d, const JobFilter& jobs);

// ---- runner slots

struct SlotRow {
    std::string name;
    std::string state;  // idle, busy or offline (draining is `drained`)
    bool drained = false;
    nlohmann::json last_health;  // {ok, at, exit_status, output}; null before the first check
};

SlotRow slot_row(const TestDaemon& d, const std::string& name);
/// By name.
std::vector<SlotRow> slot_rows(const TestDaemon& d);

// ---- builds (docs/build.md)

struct BuildRowT {
    std::int64_t id = 0;
    std::string key;
    std::string state;  // queued, running, ready, failed, evicted
    std::string upstream_sha;
    std::int64_t attempts = 0;
    std::optional<std::int64_t> size_bytes;
    std::string reason;
};

/// Every build, by id.
std::vector<BuildRowT> build_rows(const TestDaemon& d);

// ---- the outbox: statuses and callbacks, and how their sending went

struct OutboxRow {
    std::int64_t id = 0;
    std::int64_t run_id = 0;
    std::string sink;  // github, file or callback
    std::string context;
    std::string state;  // the status's (success, failure, ...) or the callback's
    std::string description;
    std::string delivery;  // waiting, sent, dead or coalesced
    std::int64_t attempts = 0;
    std::optional<std::int64_t> http_status;
    std::string last_error;       // "" when none
    std::string next_attempt_at;  // "" when none
    std::string created_at;
};

struct OutboxFilter {
    std::optional<std::int64_t> id = {};
    std::optional<std::int64_t> run = {};
    std::optional<std::string> sink = {};
    std::optional<std::string> context = {};
    std::optional<std::string> state = {};
    std::optional<std::string> delivery = {};
    std::optional<std::int64_t> http_status = {};
    std::optional<std::int64_t> min_attempts = {};  // at least this many attempts
};

OutboxRow outbox_row(const TestDaemon& d, std::int64_t id);
/// By id (the order of sending).
std::vector<OutboxRow> outbox_rows(const TestDaemon& d, const OutboxFilter& f = {});
std::int64_t count_outbox(const TestDaemon& d, const OutboxFilter& f = {});
/// The newest row the filter picks, if any (e.g. the last status of a context).
std::optional<OutboxRow> last_outbox_row(const TestDaemon& d, const OutboxFilter& f);

// ---- the delivery log

struct DeliveryRow {
    std::int64_t id = 0;
    std::string delivery_id;       // the transport's id; "" when none came
    std::string crcr_delivery_id;  // "" when none
    std::string verdict;           // queued, duplicate, ignored, cancelled, pong or rejected
    std::int64_t http_status = 0;
    std::string reason;  // "" when none
    std::optional<std::int64_t> run_id;
    std::optional<std::string> body;  // the stored (zstd-compressed) request body
    std::optional<std::int64_t> body_size;
};

struct DeliveryFilter {
    std::optional<std::string> delivery_id = {};
    std::optional<std::string> crcr_delivery_id = {};
    std::optional<std::string> verdict = {};
    std::optional<std::int64_t> http_status = {};
    std::optional<bool> has_body = {};  // its body is (or is not) stored
    std::optional<bool> has_run = {};   // it names (or does not name) a stored run
};

/// By id.
std::vector<DeliveryRow> delivery_rows(const TestDaemon& d, const DeliveryFilter& f = {});
std::int64_t count_deliveries(const TestDaemon& d, const DeliveryFilter& f = {});

// ---- bookkeeping

/// When the full matrix is due next (the stored value), unset before the first start.
std::optional<std::string> full_matrix_next(const TestDaemon& d);
/// How many keys the daemon's meta table holds.
std::int64_t count_meta(const TestDaemon& d);
std::int64_t count_selection_misses(const TestDaemon& d);
/// Follow-ups a finished run left for the planner's thread, of kind bisect, bisect_step or audit.
std::int64_t count_followups(const TestDaemon& d, const std::string& kind);
std::int64_t count_recovery_passes(const TestDaemon& d);

// ---- arranging a state no API makes (a writable connection; the daemon may be stopped)

/// Moves the full matrix's next time to `epoch_seconds` (as if the daemon was down over it).
void set_full_matrix_next(const TestDaemon& d, std::int64_t epoch_seconds);
/// While `fail` holds, every write that ends a job fails (as on a full disk).
void fail_job_outcome_writes(const TestDaemon& d, bool fail);
/// Slot `name` busy with a lease that lapsed long ago, with no job (as a lost worker leaves it).
void lapse_slot_lease(const TestDaemon& d, const std::string& name);
/// Forgets the Slurm ids of every job (as if the daemon died between sbatch and storing it).
void forget_external_ids(const TestDaemon& d);
/// Deletes the delivery log's rows of `verdict` (as the pruner does).
void delete_deliveries(const TestDaemon& d, const std::string& verdict);
/// Moves run `run` and its jobs `days` days into the past (their created, started and finished
/// times), as a run of another day would have them (the daemon's clock cannot be set); the
/// daily roll-ups are left as they were (POST /api/v1/stats/rebuild makes them again).
void move_run_days(const TestDaemon& d, std::int64_t run, int days);
/// `n` completed pull_request runs: run i has SHA printf("%040x", i), PR i, conclusion
/// regression when i % 7 == 0 (passed otherwise), reason "generated", and was created on day
/// 1 + i % 28 of November 2026.
void insert_generated_runs(const TestDaemon& d, int n);

/// A finished run as the full matrix or a push leaves it, for the audit's rows.
struct SeedRun {
    std::string event;
    std::string sha;
    std::string ref;
    std::string state;
    std::string conclusion;
    std::string created_at;
};
/// Returns its id.
std::int64_t insert_run(const TestDaemon& d, const SeedRun& run);

/// A selection miss as the audit records it (`commits` is its JSON text).
struct SeedSelectionMiss {
    std::int64_t run_id = 0;
    std::int64_t previous_run_id = 0;
    std::string tier;
    std::string test;
    std::string commits;
    std::string created_at;
};
/// Returns its id.
std::int64_t insert_selection_miss(const TestDaemon& d, const SeedSelectionMiss& miss);

/// Another process's exclusive write lock on the database (as a backup or a stuck tool holds
/// it), from construction until release() or destruction.
class DatabaseWriteLock {
  public:
    explicit DatabaseWriteLock(const TestDaemon& d);
    ~DatabaseWriteLock();
    DatabaseWriteLock(const DatabaseWriteLock&) = delete;
    DatabaseWriteLock& operator=(const DatabaseWriteLock&) = delete;
    void release();

  private:
    struct Connection;
    std::unique_ptr<Connection> m_conn;
};

}  // namespace crcrd
