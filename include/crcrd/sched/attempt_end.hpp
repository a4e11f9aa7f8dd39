#pragma once
// The store side of an attempt's end; the rules are sched/attempt.hpp's plan_end().
// read_attempt_facts() reads everything the rules look at in one go, apply_end() makes the plan
// so; end_attempt() does both around plan_end(). Each runs inside one writer item.

#include <chrono>
#include <cstdint>
#include <optional>

#include "crcrd/core/time.hpp"
#include "crcrd/exec/executor.hpp"
#include "crcrd/sched/attempt.hpp"
#include "crcrd/store/fwd.hpp"

namespace crcrd::sched {

/// The configuration an attempt's end is decided under.
struct EndPolicy {
    RetryPolicy retry;
    /// classify.base_check lookup: how far back a base-branch run counts; unset: off.
    std::optional<std::chrono::milliseconds> base_window;
    bool run_on_base = false;      // classify.base_check run
    bool daemon_stopping = false;  // the attempt ended because the daemon stops
    SystemTime now{};              // when it ends (the dispatcher's clock)
};

/// The facts of attempt `job` for plan_end(): its results (stored already, `carried` of them
/// carried over from earlier attempts), the tier's earlier attempts, a base check's tests, and
/// for a PR's regression the failures found on its base.
AttemptFacts read_attempt_facts(store::Db& db, const exec::JobToRun& job, AttemptOrigin origin,
                                Judged judged, std::int64_t carried, const EndPolicy& policy);

/// Makes `plan` so for attempt `job_id`: flaky marks and evidence first, then the attempt
/// completes and is retried or checked on the base, or the tier ends (finish_job: later tiers
/// cancelled unless it passed, the run completed when nothing of it is left). False, and
/// nothing happens, when the attempt had already ended (cancelled while it ran).
bool apply_end(store::Db& db, std::int64_t job_id, const EndPlan& plan, SystemTime now);

/// Ends attempt `job`: read_attempt_facts, plan_end, apply_end. The plan it applied, or
/// nullopt when the attempt had already ended.
std::optional<EndPlan> end_attempt(store::Db& db, const exec::JobToRun& job, AttemptOrigin origin,
                                   Judged judged, const EndPolicy& policy,
                                   std::int64_t carried = 0);

}  // namespace crcrd::sched
