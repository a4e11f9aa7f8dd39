#pragma once
// The planner turns a queued run into jobs: it resolves the run's changed paths
// (docs/selection.md), decides the tiers (docs/selection.md), stores the explanation on the run
// (docs/selection.md) and creates one queued job per selected tier. A run with nothing selected
// completes at once as passed. It works on its own thread (git and HTTPS block) and writes through
// the Writer.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <thread>
#include <vector>

#include "crcrd/core/worker_loop.hpp"
#include "crcrd/sched/followups.hpp"
#include "crcrd/sched/full_matrix.hpp"
#include "crcrd/select/changed_paths.hpp"
#include "crcrd/select/rules.hpp"
#include "crcrd/select/selection.hpp"
#include "crcrd/store/runs.hpp"
#include "crcrd/store/writer.hpp"

namespace crcrd::sched {

/// The queued jobs of a selection: one per selected tier, at the tier's position in the rules
/// file, with its tests, its timeout (an hour for a tier the rules no longer have) and its
/// labels; with `build_timeout` (a build stage, docs/build.md) and any tier selected, first the
/// build job (tier `build`, position -1, that timeout). Pure.
std::vector<store::PlannedJob> plan_jobs(
    const select::Selection& sel, const select::Rules& rules,
    std::optional<std::chrono::milliseconds> build_timeout = std::nullopt);

/// What SIGHUP may replace for the planner.
struct PlannerConfig {
    std::shared_ptr<const select::Rules> rules;
    select::SourceSettings sources;
    config::BisectConfig bisect;
    std::optional<std::chrono::milliseconds> build_timeout;  // build.timeout, with a build stage
};

class Planner {
  public:
    Planner(store::Writer& writer, std::filesystem::path db_path,
            std::shared_ptr<const PlannerConfig> cfg);
    ~Planner();
    Planner(const Planner&) = delete;
    Planner& operator=(const Planner&) = delete;

    /// Starts the thread; it plans whatever is queued, then waits for notify() (or a
    /// periodic look every few seconds, for runs stored while it was busy and for the
    /// full matrix schedule).
    void start();
    /// New runs were stored.
    void notify();
    /// A commit left work for follow_up() (bisection, the selection-miss audit). Follow-ups
    /// are also looked at on start and every five seconds (their retries back off).
    void notify_followups();
    /// Called after plans are committed (their jobs are queued), so the dispatcher can lease
    /// slots at once: on the writer's thread, once per committed plan. Set before start().
    void on_planned(std::function<void()> fn) { m_on_planned = std::move(fn); }
    void set_config(std::shared_ptr<const PlannerConfig> cfg);
    /// The writer's before-commit hook: plans, inside the writer's transaction, the runs that
    /// transaction stored whose changed paths need no look-up (select::needs_lookup()), so
    /// that a run and its jobs are one commit, not two (issue 16: webhook to first job). The
    /// others are left to the planner's thread. Writer thread only.
    void plan_with_commit(store::Db& db);
    /// The writer's after-commit hook: logs what plan_with_commit() planned and wakes the
    /// dispatcher for its jobs. Writer thread only.
    void committed();
    /// Finishes the run in hand, waits for the plans submitted to be committed, and stops.
    /// Idempotent.
    void stop();

    /// Handles what finished runs left (bisection, the selection-miss audit) once, on the
    /// calling thread; returns how many. (Public for tests.)
    std::size_t follow_up();

  private:
    /// One pass of the planner's loop; how long it may wait for the next.
    std::optional<std::chrono::steady_clock::duration> pass();
    std::shared_ptr<const PlannerConfig> config() const;
    /// Decides the unplanned runs that are not in flight and submits their plans to the
    /// writer without waiting for the commit; returns how many were submitted.
    std::size_t submit_pending();
    /// Starts the look-up of `run`'s changed paths on the look-up pool; an invalid future when
    /// the pool has no thread to spare (the run is then looked up on the planner's thread).
    std::shared_future<select::ChangedPaths> start_lookup(const select::RunRef& run,
                                                          const select::SourceSettings& sources,
                                                          std::int64_t id);
    /// Submits run `id`'s plan to the writer (in flight until its commit); false, and the run
    /// is left for the next wake-up, when the writer is overloaded.
    bool submit_plan(std::int64_t id, std::function<void(store::Db&)> work,
                     std::shared_ptr<bool> stored, std::string summary);
    /// Until every plan submitted was committed (or failed).
    void wait_in_flight();

    store::Writer& m_writer;
    std::filesystem::path m_db_path;
    mutable std::mutex m_mu;
    std::shared_ptr<const PlannerConfig> m_cfg;
    store::UnplannedReader m_reader;  // the planner thread's (or the test's) own
    /// Changed paths that need the GitHub API: looked up this many runs ahead, on m_lookups.
    static constexpr std::size_t k_lookups = 8;
    class LookupPool;
    std::unique_ptr<LookupPool> m_lookups;
    bool m_followups_due = true;
    static constexpr std::chrono::seconds k_followup_look{5};
    std::chrono::steady_clock::time_point m_followups_looked;
    FullMatrixTrigger m_full_matrix;
    Followups m_followups;
    std::function<void()> m_on_planned;
    // Runs whose plan is with the writer, not committed yet: the next batch leaves them out,
    // so that a burst's runs are decided while the previous batch is being committed.
    std::set<std::int64_t> m_in_flight;
    std::condition_variable m_drained;
    std::set<std::int64_t> m_failed;  // not retried before the next wake-up
    // The writer thread's: the highest run id committed before the transaction in hand (set
    // by start()), the one that transaction will have committed, and its plans.
    std::optional<std::int64_t> m_seen_run;
    std::optional<std::int64_t> m_seen_pending;
    std::atomic<bool> m_started{false};  // plan_with_commit() plans nothing before start()
    std::vector<std::string> m_planned_with_commit;
    core::WorkerLoop m_loop{"planner", [this] { return pass(); },
                            core::WorkerLoop::Options{k_followup_look, false}};
};

}  // namespace crcrd::sched
