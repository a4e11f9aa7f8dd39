#pragma once
// The build stage's decisions (docs/build.md): a run's build job, at position -1 before every
// tier, builds its key once on a CPU build slot, waits on the job that builds it, or passes at
// once from the cache; a tier starts only after its run's build passed, and gets the published
// build. The dispatcher calls these; the file work is exec/build.hpp's.

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "crcrd/config/config.hpp"
#include "crcrd/core/time.hpp"
#include "crcrd/exec/build.hpp"
#include "crcrd/exec/executor.hpp"
#include "crcrd/sched/attempt.hpp"
#include "crcrd/store/fwd.hpp"

namespace crcrd::sched {

/// What the dispatcher needs of the configuration for the build stage.
struct BuildStageSettings {
    config::BuildConfig build;
    std::map<std::string, std::string> env;  // execution.env (build.key_env reads it)
    std::optional<std::filesystem::path> backend_dir;
    std::uint64_t min_free_bytes = 0;  // execution.min_free_bytes, kept free by eviction
    config::UpstreamConfig upstream;   // for CRCR_BUILD_NEAREST's ancestry
};

/// What a startable build job does now.
struct BuildStep {
    enum class Kind {
        passed,  // a cache hit: the job passed (finish_job was called)
        wait,    // another job builds its key
        lease,   // it builds: lease a build slot and run `spec`
        known,   // a base check whose base's build is known: its attempt ends as `known`
    } kind = Kind::wait;
    exec::BuildSpec spec;
    Judged known;
};

/// For startable build job `job` (in the dispatcher's transaction): its key from `recipe` and
/// the job's SHA, claimed in the builds table. A ready key whose folder is gone is evicted and
/// built again. A base check (the attempt on the base of a failed build) whose base is in the
/// cache, or failed as a regression already, is `known`: passed, or that regression.
BuildStep step_build_job(store::Db& db, const BuildStageSettings& s,
                         const exec::BuildKeyInputs& recipe, const exec::JobToRun& job,
                         SystemTime now);

/// The builder's attempt ended and was judged (on the worker's thread, before it is stored):
/// a failed build command without an infra signature is a `regression` ("the build failed"),
/// and a passing build is published, its refusal (a link out of the folder, a fifo) making it
/// `infra_error` with the reason. The published size, when it was.
std::optional<std::int64_t> finish_build_attempt(const BuildStageSettings& s,
                                                 const exec::JobToRun& job,
                                                 const exec::RawOutcome& raw, Judged& judged);

/// In the outcome's transaction, after end_attempt: the build row follows its builder. Passed:
/// ready (with `size`). Retried (`plan.next` retry): stays queued for the next attempt. Ended
/// otherwise: failed, and every job waiting on the key ends with the same class (a base check
/// waiting on it asks again, and finds it failed); a cancelled builder hands the key to the
/// next job that asks. The class is the plan's, but a base check's own (`judged`): its plan
/// speaks of the run's build, its key is the base's.
void settle_build(store::Db& db, const exec::JobToRun& job, const std::optional<EndPlan>& plan,
                  const Judged& judged, std::optional<std::int64_t> size, SystemTime now);

/// The ready builds to remove so that the cache holds at most `build.cache_max_bytes` and its
/// file system keeps `min_free_bytes` free (least recently used first; never one a queued or
/// running job needs); marked evicted here, their folders removed by the caller after the
/// commit.
std::vector<std::string> choose_evictions(store::Db& db, const BuildStageSettings& s,
                                          SystemTime now);

/// At start-up, for a job adopted from the previous daemon (its Slurm job goes on): when it is
/// a build job, its spec again (the key it claimed, its partial folder, its base), so that its
/// end is published and settled as if this daemon had started it. True when it was.
bool resume_build(store::Db& db, const BuildStageSettings& s, const exec::BuildKeyInputs& recipe,
                  exec::JobToRun& job);

/// At start-up: partial folders removed, builds left running requeued, ready builds whose
/// folder is gone evicted; the builds of `adopted` jobs (resume_build()) go on running, their
/// partial folders kept.
void recover_builds(store::Db& db, const BuildStageSettings& s, SystemTime now,
                    const std::vector<exec::JobToRun>& adopted = {});

/// On the worker's thread, before the build runs: its output folder made, and
/// `spec.nearest` the first candidate whose SHA is an ancestor of the job's (git, blocking).
Status prepare_build_attempt(const BuildStageSettings& s, exec::JobToRun& job);

/// For a tier of a run with a build stage: the published build's folder.
std::optional<std::filesystem::path> run_build_dir(store::Db& db, const BuildStageSettings& s,
                                                   std::int64_t run_id);

}  // namespace crcrd::sched
