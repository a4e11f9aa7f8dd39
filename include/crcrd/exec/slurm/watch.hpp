#pragma once
// What crcrd does next with a Slurm job it follows (docs/execution.md, "Slurm"): a pure state
// machine. SlurmExecutor::watch is its thin poller: it observes (the cancel flag, the stop,
// squeue/scontrol and the completion record), calls next(), and carries the action out
// (scancel, a pause, a resubmission). The tests feed it tables of observations.

#include <chrono>
#include <optional>
#include <string>

#include "crcrd/exec/slurm/slurm_cli.hpp"

namespace crcrd::exec::slurm {

using SteadyTime = std::chrono::steady_clock::time_point;

/// What the poller knows of the Slurm job between looks.
struct WatchState {
    std::string id;               // the Slurm job id followed now
    bool cancel_sent = false;     // scancel was sent for it
    int unknown = 0;              // looks in a row that found the job nowhere
    int unanswered_at_stop = 0;   // looks without an answer after a cancel, while stopping
    int resubmits = 0;            // times it was submitted again after a preemption
    std::optional<JobInfo> last;  // what the last look that found it said
    SteadyTime pending_since{};   // since when it waits without running
};

/// One observation. `looked` false: before asking Slurm (only the flags are known); true:
/// `info` is what Slurm said (nullopt: not found, or `unreachable` when the controller did not
/// answer).
struct Observation {
    SteadyTime now{};
    bool cancel_requested = false;  // the attempt's cancel flag
    bool stopping = false;          // the daemon stops (Slurm jobs are left to run)
    bool looked = false;
    std::optional<JobInfo> info;
    bool unreachable = false;
};

struct WatchPolicy {
    bool cancel_pending_on_stop = false;                // execution.slurm.cancel_pending_on_stop
    std::chrono::steady_clock::duration device_wait{};  // execution.device_wait
    int gone_after = 10;     // looks in a row without the job before it counts as lost
    int max_resubmits = 10;  // preemptions before the attempt ends infra_error
};

enum class WatchStep {
    look,                // ask Slurm now (call next() again with what it said)
    cancel,              // send scancel, then look again at once
    wait,                // pause `execution.slurm.poll_interval` (a short one once cancelled)
    detach,              // leave the job running; the next daemon adopts it
    resubmit,            // preempted: submit the same attempt again (or take over a resubmission)
    device_unavailable,  // cancel it and end the attempt device_unavailable with `reason`
    give_up,             // end the attempt infra_error with `reason` (`cancelled` if asked)
    ended,               // Slurm ended it: the node's result and `state.last` decide the outcome
};

struct WatchAction {
    WatchStep step = WatchStep::look;
    std::string reason;      // device_unavailable, give_up
    bool cancelled = false;  // give_up: the attempt counts as cancelled
};

/// The next action for `state` after `seen`; updates `state` (counters, the last look, the
/// pending time, `cancel_sent` when it returns cancel). Pure.
WatchAction next(WatchState& state, const Observation& seen, const WatchPolicy& policy);

/// After the poller resubmitted (or took over) as job `id`: the state follows that job.
void follow(WatchState& state, std::string id, SteadyTime now);

}  // namespace crcrd::exec::slurm
