#pragma once
// The seam between scheduling and execution (docs/architecture.md). The dispatcher (sched)
// decides which job starts, on which of the offered slots, stores everything and classifies;
// an Executor only offers slots and runs a job on one, returning what happened, raw. It knows
// nothing of the database or of classes: a new executor (Slurm, Kubernetes) is one folder that
// implements these calls. LocalExecutor runs processes on this host's slots; SlurmExecutor
// (exec/slurm/) hands each job to a Slurm cluster, and adopts what a previous daemon submitted.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "crcrd/core/time.hpp"
#include "crcrd/exec/junit.hpp"

namespace crcrd::exec {

/// One health check of a slot (docs/execution.md): whether it passed, when, and what the check
/// printed. Stored and served as {"ok", "at", "exit_status", "output"} (to_json()).
struct Health {
    bool ok = false;
    SystemTime at{};
    std::optional<int> exit_status;
    std::string output;
    nlohmann::json to_json() const {
        return {{"ok", ok},
                {"at", rfc3339(at)},
                {"exit_status", exit_status ? nlohmann::json(*exit_status) : nlohmann::json()},
                {"output", output}};
    }
};

/// Every executor's CPU build slots (docs/build.md): build-1 ... build-<build.slots>.
inline constexpr const char* k_build_slot_prefix = "build-";

/// A slot the executor can run jobs on, with the labels a job's tier may require.
struct SlotOffer {
    std::string name;
    std::vector<std::string> labels;
    bool build = false;  // a CPU build slot (docs/build.md): only build jobs, no device
};

/// A build job's own (docs/build.md): the key it builds, the empty folder it fills
/// (CRCR_BUILD_OUT) and the nearest ready build of an ancestor (CRCR_BUILD_NEAREST).
struct BuildSpec {
    std::string key;
    std::filesystem::path out;
    std::optional<std::filesystem::path> nearest;
    /// Ready builds of the same backend, newest first (upstream SHA, folder): the dispatcher
    /// picks `nearest` among them, the first whose SHA is an ancestor of the job's.
    std::vector<std::pair<std::string, std::filesystem::path>> nearest_candidates;
    /// The build this one is compared with when it fails (docs/build.md): the base's SHA and
    /// its key under the same recipe.
    std::optional<std::string> base_sha;
    std::optional<std::string> base_key;
    /// The attempt is a base check (docs/build.md): it builds the base of the run's failed
    /// build; its own class decides the key's row, its end the run's build job.
    bool base_check = false;
};

struct JobToRun {
    std::int64_t job_id = 0;
    std::int64_t run_id = 0;
    int attempt = 1;
    std::string tier;
    std::string sha;
    std::optional<std::int64_t> pr;
    std::vector<std::string> tests;
    std::vector<std::string> labels;
    std::chrono::milliseconds timeout{std::chrono::hours(1)};
    std::string slot;  // the leased slot
    /// A rerun of a failed tier (docs/execution.md): the tests that failed in the previous attempt,
    /// given to the command as CRCR_RERUN_FILE. Empty: not a rerun, or execution.rerun is `tier`.
    std::vector<std::string> rerun_tests;
    /// Set for a run's build job: it runs build.command on a build slot instead of the tier's.
    std::optional<BuildSpec> build;
    /// A tier of a run with a build stage: the published build (CRCR_BUILD_DIR, read-only).
    std::optional<std::filesystem::path> build_dir;
};

/// An attempt has started: the process group of its command on this host (local), or the id
/// of the job a scheduler runs it as (Slurm's job id). The dispatcher stores both.
struct Started {
    std::int64_t pgid = 0;
    std::string external_id;
};

/// The dispatcher's side of an attempt, called by the executor on its worker thread.
struct AttemptHooks {
    /// Asked right before anything starts (the command, a Slurm submission): whether the job
    /// is still to run, moving it from leased to running in the same decision. False (it was
    /// cancelled since its lease): the executor starts nothing and returns `not_started`.
    std::function<bool()> may_start;
    /// Called once the command started (again if it moves, as a Slurm job resubmitted after
    /// a preemption does), with where it runs.
    std::function<void(const Started&)> on_running;
};

/// What one attempt left behind, before any classification.
struct RawOutcome {
    /// may_start said no: nothing ran and nothing is to be recorded of this attempt.
    bool not_started = false;
    /// The slot failed its health check before the command started: the job did not run and
    /// goes back to the queue; the slot goes offline. `health` holds the check.
    bool slot_unhealthy = false;
    /// crcrd could not run the command (no such slot, workspace, account, start): why.
    std::optional<std::string> not_run;
    std::optional<int> exit_code;
    std::optional<int> signal;
    bool timed_out = false;
    bool stalled = false;
    bool cancelled = false;  // stopped because `cancel` was set (not by a timeout)
    std::vector<TestResult> results;
    std::optional<std::string> junit_error;  // malformed or refused JUnit output
    std::string log_path;
    std::string log_text;  // the kept log (head and tail), for the classifier
    nlohmann::json metadata =
        nlohmann::json::object();  // the attempt's metadata (docs/execution.md)
    std::optional<Health> health;  // the health check that ran before, if any
    /// After a stall or a timeout (docs/execution.md): the slot's state once its devices were
    /// released (or not, within card_release_timeout), as a health record; not ok takes the slot
    /// offline.
    std::optional<Health> health_after;
    /// The cluster ended the attempt for a reason of its own (a node failed, out of memory, a
    /// cancel nobody here asked for): infra_error, retried, with this reason.
    std::optional<std::string> infra_failure;
    /// No device became free in time where the executor waits for one itself (a Slurm job
    /// still pending for resources after `device_wait`): device_unavailable, with this reason.
    std::optional<std::string> device_unavailable;
    /// The daemon stops and the attempt goes on outside it (Slurm): nothing is recorded, the
    /// job stays running in the database for the next start to adopt.
    bool detached = false;
    /// The executor's own record of the attempt (Slurm: job id, state, reason, node, exit
    /// code), kept in the evidence as "executor".
    nlohmann::json external = nullptr;
};

struct ExecutorSettings;

class Executor {
  public:
    virtual ~Executor() = default;
    /// The configuration's settings, at start and at each reload; takes effect for the next
    /// attempt. Never blocks.
    virtual void set_settings(std::shared_ptr<const ExecutorSettings> settings) = 0;
    /// The slots this executor offers now (they change on reload). Never blocks.
    virtual std::vector<SlotOffer> slots() const = 0;
    /// Runs `job` on `job.slot` to its end on the calling (worker) thread: the slot's health
    /// check and the workspace first, then `hooks.may_start()` right before the command (or
    /// its submission) starts, then `hooks.on_running`. `cancel` asks it to stop (a command
    /// already started is stopped at the next look). Never throws for anything a test does.
    virtual RawOutcome run(const JobToRun& job, const std::atomic<bool>& cancel,
                           const AttemptHooks& hooks) = 0;
    /// Blocking: the slot's health check now.
    virtual Health check_health(const std::string& slot) = 0;
    /// Ends whatever attempt `job_id` of a previous daemon left running; how many processes.
    virtual int abandon(std::int64_t job_id) = 0;

    /// At start-up, for a job a previous daemon left running: the id under which the attempt
    /// still exists outside the daemon (`external_id` as stored, or found by the job's id when
    /// the daemon died before storing it), so that adopt() collects it. nullopt: nothing to
    /// adopt (the local executor: its processes died with their init), the job is abandoned.
    virtual std::optional<std::string> adoptable(std::int64_t job_id,
                                                 const std::optional<std::string>& external_id) {
        (void)job_id;
        (void)external_id;
        return std::nullopt;
    }
    /// Watches an attempt a previous daemon started (an id adoptable() returned) to its end,
    /// like run() without starting anything (`hooks.may_start` is not asked).
    virtual RawOutcome adopt(const JobToRun& job, const std::string& external_id,
                             const std::atomic<bool>& cancel, const AttemptHooks& hooks) {
        (void)job;
        (void)external_id;
        (void)cancel;
        (void)hooks;
        RawOutcome o;
        o.not_run = "this executor cannot adopt an attempt";
        return o;
    }
    /// The daemon stops. True: attempts go on without it (run() returns `detached` soon) and
    /// the dispatcher must not cancel them. False (local): the dispatcher cancels them.
    virtual bool detach_on_stop() { return false; }
    /// What the cluster behind the executor says of its nodes, for /api/v1/runners and
    /// crcrctl's runners table (null: no cluster): {"title", "columns": [{"field", "header"}],
    /// "rows": [{field: value}], "error"} and fields of its own. Blocking, bounded.
    virtual nlohmann::json cluster() { return nullptr; }
};

}  // namespace crcrd::exec
