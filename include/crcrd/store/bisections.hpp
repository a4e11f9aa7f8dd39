#pragma once
// Bisections of trunk regressions (docs/verdicts.md) and the followups a finished run leaves
// (the `followups` table a trigger fills). Every function runs on the writer's connection,
// inside a writer item; the rules (which commit next, what a result means) are in `sched`.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "crcrd/core/time.hpp"
#include "crcrd/core/vocab.hpp"
#include "crcrd/store/fwd.hpp"
#include "crcrd/store/json_text.hpp"

namespace crcrd::store {

struct Followup {
    std::int64_t run_id = 0;
    FollowupKind kind = FollowupKind::bisect;
};

/// A finished trunk run's first tier (by position) whose last attempt ended a regression, and
/// the tests that failed in it.
struct BisectSource {
    std::int64_t run_id = 0;
    RunEvent event = RunEvent::push;
    std::string sha, ref;
    std::string tier;
    std::vector<std::string> tests;
};

struct NewBisection {
    std::int64_t bad_run_id = 0;
    std::string tier;
    std::vector<std::string> tests;
    BisectionState state = BisectionState::running;
    std::string reason;
    std::optional<std::int64_t> good_run_id;
    std::optional<std::string> good_sha;
    std::string bad_sha;
    std::vector<std::string> commits;
    std::optional<std::string> culprit;
};

/// A stored bisection: what was inserted, and its id and times.
struct Bisection : NewBisection {
    std::int64_t id = 0;
    std::string created_at;
    std::optional<std::string> finished_at;
};

/// A run a bisection queued, and what became of it.
struct BisectRun {
    std::int64_t run_id = 0;
    std::string sha;
    RunState state = RunState::queued;
    std::optional<Conclusion> conclusion;
    bool had_jobs = false;  // false: planned with nothing to run (its tier left the rules)
};

class BisectionsRepo {
  public:
    explicit BisectionsRepo(Db& db) : m_db(db) {}

    /// Pending followups, oldest run first.
    std::vector<Followup> followups(int limit = 32);
    void done(const Followup& f);

    /// The run's bisectable failure: its build stage (position -1) that ended a regression, else
    /// the first tier that ended a regression with failed tests (nullopt: none did).
    std::optional<BisectSource> source(std::int64_t run_id);
    /// The newest earlier push or scheduled run on the same ref (among its 1,000 newest) whose
    /// same tier's last attempt passed (or was flaky): its id and SHA.
    std::optional<std::pair<std::int64_t, std::string>> good_run(const BisectSource& bad);

    std::int64_t insert(const NewBisection& b, SystemTime now);
    std::optional<Bisection> load(std::int64_t id);
    std::optional<Bisection> of_bad_run(std::int64_t run_id);
    /// The tests (JSON array) the run's `tier` ran, "[]" when it has no such job.
    std::string tier_tests_json(std::int64_t run_id, const std::string& tier);
    /// The run's ref ("" when it has none).
    std::string ref_of(std::int64_t run_id);
    /// A bisection still running for `tier` on `ref`: its id and bad run.
    std::optional<std::pair<std::int64_t, std::int64_t>> running_on(const std::string& ref,
                                                                    const std::string& tier);
    /// The bisection a bisect run serves.
    std::optional<std::int64_t> bisection_of(std::int64_t run_id);
    /// Its runs, oldest first.
    std::vector<BisectRun> runs(std::int64_t bisection_id);
    /// Queues a run of event `bisect` of the bisection's tier on `sha`, with `inputs_json`
    /// (the tier and the failing tests), in no concurrency group: nothing supersedes it.
    std::int64_t queue_run(const Bisection& b, const std::string& sha, const std::string& ref,
                           const JsonText& inputs, SystemTime now);
    /// Ends the bisection (found, budget_spent, inconclusive, cancelled, failed); the bad run's
    /// statuses are looked at again (its aggregate names the culprit).
    void finish(std::int64_t id, BisectionState state, const std::string& reason,
                const std::optional<std::string>& culprit, SystemTime now);
    void set_reason(std::int64_t id, const std::string& reason);
    /// The failing tests a bisect run's job runs only (its run's inputs); empty for any other job.
    std::vector<std::string> tests_for_job(std::int64_t job_id);
    /// The run's statuses are looked at again before the commit.
    void touch_statuses(std::int64_t run_id);

  private:
    /// The bisection whose `key` column (id or bad_run_id, both unique) is `value`.
    std::optional<Bisection> one(const char* key, std::int64_t value);

    Db& m_db;
};

}  // namespace crcrd::store
