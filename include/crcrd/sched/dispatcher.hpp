#pragma once
// The dispatcher: starts jobs whose turn has come (tier order) on a free slot the Executor
// offers whose labels cover the tier's, holds the lease, ends jobs that waited longer than
// `execution.device_wait` for a slot as device_unavailable, rechecks offline slots, cancels the
// processes of cancelled jobs, classifies each raw outcome and records it (the rules of
// sched/attempt.hpp: retries, flaky reruns). At start-up it ends what a previous daemon left
// leased or running ("daemon restarted"). It owns the slots' rows; the Executor never sees the
// database.

#include <atomic>
#include <condition_variable>
#include <filesystem>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "crcrd/classify/classify.hpp"
#include "crcrd/core/clock.hpp"
#include "crcrd/core/worker_loop.hpp"
#include "crcrd/exec/executor.hpp"
#include "crcrd/sched/attempt.hpp"
#include "crcrd/sched/build_stage.hpp"
#include "crcrd/store/writer.hpp"

namespace crcrd::sched {

struct DispatcherSettings {
    std::chrono::milliseconds device_wait{std::chrono::minutes(30)};
    std::chrono::milliseconds health_interval{std::chrono::seconds(30)};
    std::chrono::milliseconds lease_ttl{std::chrono::seconds(60)};
    RetryPolicy retry;
    bool rerun_failed_tests = true;  // execution.rerun: failed_tests (CRCR_RERUN_FILE)
    std::chrono::milliseconds reuse_window{
        0};  // selection.reuse_window (docs/verdicts.md); 0: never reuse
    /// classify.base_check lookup (docs/verdicts.md): how far back a base-branch run counts; unset:
    /// off.
    std::optional<std::chrono::milliseconds> base_window = std::chrono::hours(24);
    /// classify.base_check run: failing tests no earlier run answered for are run on the base.
    bool base_check_run = false;
    std::shared_ptr<const classify::Patterns> patterns = std::make_shared<classify::Patterns>();
    /// `build:` (docs/build.md): each run's build job before its tiers; unset, none.
    std::optional<BuildStageSettings> build;
};

class Dispatcher {
  public:
    /// `clock`: the time its decisions read (leases, device_wait, rechecks, attempts' ends).
    Dispatcher(store::Writer& writer, std::filesystem::path db_path, exec::Executor& executor,
               DispatcherSettings settings, const core::Clock& clock = core::system_clock());
    ~Dispatcher();

    /// Takes new settings (on reload); jobs already running keep the patterns they started with.
    void set_settings(DispatcherSettings settings);
    /// Blocking write: makes the slots table match the executor's offer (new slots idle; gone
    /// ones deleted unless busy). Call before recover() and after the executor's reload.
    Status sync_slots();
    /// sync_slots() without waiting (from a network thread, on reload); a failure is logged.
    void resync_slots();
    /// Takes over what a previous daemon left leased or running: an attempt the executor can
    /// adopt (a Slurm job) keeps running and is watched from start() on; any other has its
    /// stray processes killed and ends infra_error "daemon restarted", retried if attempts
    /// remain. Other busy slots are freed. Call once before start().
    Status recover();
    void start();
    void notify();
    /// Stops starting jobs, ends the running ones (SIGTERM, grace, SIGKILL) and records them,
    /// or, when the executor detaches (Slurm), leaves them running for the next start; joins
    /// every thread.
    void stop();

  private:
    /// One pass of the dispatcher's loop; how long it may wait for the next.
    std::optional<std::chrono::steady_clock::duration> pass();
    /// What one pass decided in its transaction, for the part that starts threads.
    struct Decided {
        std::vector<exec::JobToRun> started;  // leased: a worker each
        std::vector<std::int64_t> cancelled;  // running here, cancelled meanwhile
        std::vector<std::string> due;         // offline slots due for their recheck
        std::optional<SystemTime> next_recheck;
        bool reused = false;  // a job was reused: its run's next tier may start now
    };
    void dispatch_once();
    /// Under m_mu: raises the cancelled jobs' flags, starts a worker per leased job (one that
    /// gets no thread is requeued) and per recheck due, and sets when the next recheck is.
    void act_on(const Decided& d, std::chrono::milliseconds health_interval);
    /// Runs `job` (or, with `adopt`, watches the attempt a previous daemon started as that id).
    void work(exec::JobToRun job, std::shared_ptr<std::atomic<bool>> cancel,
              std::optional<std::string> adopt = {});
    void recheck(const std::string& slot);
    /// Runs `fn` on a new worker thread; no exception escapes it. Finished workers are joined
    /// here first, so their number stays that of the jobs and rechecks in flight. False when
    /// the system refuses a thread (the caller puts the job or slot back). Under m_mu.
    bool spawn_worker(std::function<void()> fn);
    DispatcherSettings settings();
    /// The names of the slots the executor offers now (what sync_slots() writes).
    std::vector<std::string> offered_slot_names() const;
    /// The build key's inputs but the SHA (the backend's HEAD, the command's hash), read at
    /// most once a second; nullopt without a build stage.
    std::optional<exec::BuildKeyInputs> build_recipe(const DispatcherSettings& cfg);

    struct Worker {
        std::thread thread;
        std::shared_ptr<std::atomic<bool>> done;
    };
    store::Writer& m_writer;
    std::filesystem::path m_db_path;
    exec::Executor& m_executor;
    DispatcherSettings m_settings;
    const core::Clock& m_clock;
    std::mutex m_mu;
    std::map<std::int64_t, std::shared_ptr<std::atomic<bool>>> m_running;  // job id -> cancel flag
    std::map<std::string, bool> m_rechecking;
    std::chrono::steady_clock::time_point m_next_recheck =
        std::chrono::steady_clock::time_point::max();
    std::list<Worker> m_workers;
    std::optional<exec::BuildKeyInputs> m_recipe;  // the dispatcher's thread only
    std::chrono::steady_clock::time_point m_recipe_at{};
    std::vector<std::pair<exec::JobToRun, std::string>> m_adopted;  // from recover(), for start()
    core::WorkerLoop m_loop{"dispatcher", [this] { return pass(); }};
};

}  // namespace crcrd::sched
