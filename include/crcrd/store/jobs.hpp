#pragma once
// The `jobs` table (one row per attempt of a tier of a run) and the test results of each
// attempt. Every function runs on the writer's connection, inside a writer item (a failure
// fails the item); none decides anything: the rules are in `sched`.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "crcrd/core/time.hpp"
#include "crcrd/core/vocab.hpp"
#include "crcrd/store/fwd.hpp"
#include "crcrd/store/json_text.hpp"

namespace crcrd::store {

/// What a worker needs to run a job, with its run's SHA and PR.
struct JobForRun {
    std::int64_t job_id = 0;
    std::int64_t run_id = 0;
    int attempt = 1;
    std::string tier;
    std::string sha;
    std::optional<std::int64_t> pr;
    std::vector<std::string> tests;
    std::vector<std::string> labels;
    std::int64_t timeout_ms = 0;
};

/// The latest completed attempt of a tier, for the run's class.
struct TierResult {
    std::string tier;
    Conclusion conclusion = Conclusion::passed;
    std::string reason;
    std::int64_t flaky_tests = 0;
};

/// An attempt left leased or running, and its process group if it had started.
struct OpenAttempt {
    std::int64_t id = 0;
    std::optional<std::int64_t> pgid;
    std::optional<std::string> external_id;  // where an executor runs it outside the daemon
    std::optional<std::string> slot;
};

/// A test that also failed before on a PR's base (docs/verdicts.md): where.
struct BaseFailure {
    std::string test;
    std::int64_t run_id = 0;
    std::string sha;
    bool on_base_sha = false;  // that run is on the PR's base SHA (not a newer branch commit)
};

/// One test of an attempt.
struct TestRow {
    std::string name;
    TestOutcome outcome = TestOutcome::passed;
    double duration_s = 0;
    std::string message;
};

/// Which earlier attempts of a tier to count: those that ended infra_error or
/// device_unavailable, or those that ended regression.
enum class EarlierOf { infra, regression };

class JobsRepo {
  public:
    explicit JobsRepo(Db& db) noexcept : m_db(db) {}

    /// Queued jobs that may start now: of a queued or running run, each earlier tier's latest
    /// attempt passed, flaky or pre_existing, nothing of the run leased or running, the run's
    /// earliest queued job. At most `limit`, oldest runs first.
    std::vector<std::int64_t> startable(int limit);
    /// The job and its run's SHA and PR; nullopt when there is no such job.
    std::optional<JobForRun> load(std::int64_t job_id);
    /// Completes an open attempt with `conclusion`; its run and tier, or nullopt when it had
    /// already ended.
    std::optional<std::pair<std::int64_t, std::string>> complete(std::int64_t job_id,
                                                                 Conclusion conclusion,
                                                                 const std::string& reason,
                                                                 std::optional<int> exit_status,
                                                                 SystemTime now);
    /// Cancels the queued jobs of run `run_id` with `reason`.
    void cancel_queued(std::int64_t run_id, const std::string& reason, SystemTime now);
    /// Cancels every queued, leased or running job of each run in `run_ids` with `reason`.
    void cancel_open(const std::vector<std::int64_t>& run_ids, const std::string& reason,
                     SystemTime now);
    /// How many jobs of the run are queued, leased or running.
    std::int64_t count_open(std::int64_t run_id);
    /// The latest completed attempt of each tier of the run, in tier order.
    std::vector<TierResult> latest_completed(std::int64_t run_id);
    /// Queues attempt + 1 of the job's tier; the new job's id.
    std::int64_t insert_retry(std::int64_t job_id, SystemTime now);
    /// When the job became startable: the end of its run's previous tier, or its creation (RFC
    /// 3339).
    std::string waiting_since(std::int64_t job_id);
    /// Completed earlier attempts of the job's tier in its run of the given kind.
    std::int64_t earlier_attempts(std::int64_t job_id, EarlierOf which);
    /// Marks `tests` (passed in attempt `job_id`) flaky and sets the attempt's flaky count to
    /// `flaky_count`, its passed and skipped counts to what is left.
    void mark_flaky(std::int64_t job_id, const std::vector<std::string>& tests,
                    std::int64_t flaky_count);
    /// The tests that failed in the latest earlier attempt of the job's tier that ended
    /// regression, by name; nullopt when no earlier attempt did.
    std::optional<std::vector<std::string>> failed_in_latest_regression(std::int64_t job_id);
    /// Jobs left leased or running.
    std::vector<OpenAttempt> left_open();
    /// A job that ran and passed the same tier with the same test list on the same SHA as
    /// `job_id`, finished at or after `since` (docs/verdicts.md): {run id, job id}. A reused job
    /// never counts (it points to the one that ran).
    std::optional<std::pair<std::int64_t, std::int64_t>> reusable(std::int64_t job_id,
                                                                  SystemTime since);
    /// Marks a job reused: its evidence names the job that ran.
    void mark_reused(std::int64_t job_id, std::int64_t from_run, std::int64_t from_job);
    /// The tests attempt `job_id` failed, by name.
    std::vector<std::string> failed_tests(std::int64_t job_id);
    /// The tests attempt `job_id` passed, by name.
    std::vector<std::string> passed_tests(std::int64_t job_id);
    /// Queues the base check of a PR tier's attempt (docs/verdicts.md, base_check: run): the next
    /// attempt of the tier, on `base_sha`, of only `tests` (the failing tests no earlier run
    /// answered for).
    std::int64_t insert_base_check(std::int64_t job_id, const std::string& base_sha,
                                   const std::vector<std::string>& tests, SystemTime now);
    /// The failing tests a base-check attempt checks; empty for any other attempt.
    std::vector<std::string> base_check_tests(std::int64_t job_id);
    /// The failures the tier's last attempt on the PR found on the base (its evidence's
    /// `pre_existing`), for a base check that follows it.
    std::vector<BaseFailure> pre_existing_evidence_before(std::int64_t job_id);
    /// The base SHA of the job's run (a PR's), if it has one.
    std::optional<std::string> base_sha(std::int64_t job_id);
    /// Of `tests` (failed by PR job `job_id`), those that failed in the last attempt of a tier
    /// that ended a regression, of another run on the PR's base SHA, or of a push or scheduled
    /// run on its base branch that ended at or after `since` (docs/verdicts.md lookup); each with
    /// that run (one on the base SHA first, else the newest). Empty for a job of any other event.
    std::vector<BaseFailure> failed_on_base(std::int64_t job_id,
                                            const std::vector<std::string>& tests,
                                            SystemTime since);
    /// After a rerun attempt's results are stored: the passed and skipped tests of the tier's
    /// earlier attempts that this one did not run are carried into its results and counts.
    std::int64_t carry_earlier_results(std::int64_t job_id);
    /// Sets `key` of the job's evidence to `value_json`.
    void add_evidence(std::int64_t job_id, const std::string& key, const JsonText& value);
    /// For a rerun of a tier whose previous attempt ended `regression`: the tests that failed
    /// there, by name (JUnit classname::name). Empty for any other job.
    std::vector<std::string> failed_in_rerun_source(std::int64_t job_id);
    /// The job holds slot `slot` now.
    void mark_leased(std::int64_t job_id, const std::string& slot);
    /// The job's state; nullopt when there is no such job.
    std::optional<JobState> state(std::int64_t job_id);
    /// A leased job goes back to the queue (no thread to run it).
    void requeue_leased(std::int64_t job_id);
    /// A leased job is about to start: leased -> running (started_at = `now`), in one
    /// statement. False, and nothing changes, when it is no longer leased (cancelled since).
    bool claim_start(std::int64_t job_id, SystemTime now);
    /// A leased job's command started in process group `pgid` (0: none here) or as
    /// `external_id` elsewhere (a Slurm job); again when it moves (resubmitted, adopted).
    void mark_running(std::int64_t job_id, std::int64_t pgid, const std::string& external_id,
                      SystemTime now);
    /// A leased or running job goes back to the queue (its slot failed the health check).
    void requeue_open(std::int64_t job_id);
    /// Stores an attempt's test results and its metadata, log path, counts and evidence (JSON
    /// texts).
    void record_results(std::int64_t job_id, const std::vector<TestRow>& tests,
                        const JsonText& metadata, const std::string& log_path,
                        const JsonText& counts, const JsonText& evidence);

  private:
    Db& m_db;
};

}  // namespace crcrd::store
