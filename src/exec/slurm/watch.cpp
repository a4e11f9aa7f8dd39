#include "crcrd/exec/slurm/watch.hpp"

namespace crcrd::exec::slurm {

namespace {

WatchAction act(WatchStep step) {
    return WatchAction{step, {}, false};
}

/// Before asking Slurm: a cancel to send, or the stop.
WatchAction before_look(WatchState& state, const Observation& seen, const WatchPolicy& policy) {
    if (seen.cancel_requested && !state.cancel_sent) {
        state.cancel_sent = true;
        return act(WatchStep::cancel);
    }
    if (seen.stopping && !state.cancel_sent) {
        // A job still waiting for its node may be cancelled at the stop (it has done nothing
        // yet); any other is left to run and adopted at the next start.
        const bool pending = state.last && phase_of(state.last->state) == Phase::waiting;
        if (policy.cancel_pending_on_stop && pending) {
            state.cancel_sent = true;
            return act(WatchStep::cancel);
        }
        return act(WatchStep::detach);
    }
    return act(WatchStep::look);
}

/// Slurm did not name the job (not found, or no answer).
WatchAction not_found(WatchState& state, const Observation& seen, const WatchPolicy& policy) {
    if (state.cancel_sent && seen.stopping && ++state.unanswered_at_stop >= policy.gone_after) {
        // The daemon stops and Slurm does not answer: the stop is not held up for it.
        return {
            WatchStep::give_up,
            "Slurm did not confirm the cancel of job " + state.id + " before the daemon stopped",
            true};
    }
    if (seen.unreachable) return act(WatchStep::wait);  // the controller decides later
    if (++state.unknown >= policy.gone_after) {
        return {WatchStep::give_up,
                "Slurm no longer knows job " + state.id +
                    " (neither the controller nor the completion record)",
                false};
    }
    return act(WatchStep::wait);
}

}  // namespace

WatchAction next(WatchState& state, const Observation& seen, const WatchPolicy& policy) {
    if (!seen.looked) return before_look(state, seen, policy);
    if (!seen.info) return not_found(state, seen, policy);
    const JobInfo& info = *seen.info;
    state.unknown = 0;
    state.last = info;
    const Phase phase = phase_of(info.state);
    if (phase == Phase::running) state.pending_since = seen.now;
    if (phase == Phase::waiting && info.state == "PENDING" && waits_for_device(info.reason) &&
        !state.cancel_sent && seen.now - state.pending_since > policy.device_wait) {
        return act(WatchStep::device_unavailable);
    }
    if (phase == Phase::preempted && !state.cancel_sent) {
        // Not the job's doing and not an attempt: the same attempt goes to Slurm again.
        if (++state.resubmits > policy.max_resubmits) {
            return {WatchStep::give_up,
                    "Slurm preempted job " + state.id + " " + std::to_string(policy.max_resubmits) +
                        " times",
                    false};
        }
        return act(WatchStep::resubmit);
    }
    if (phase == Phase::waiting || phase == Phase::running) return act(WatchStep::wait);
    return act(WatchStep::ended);
}

void follow(WatchState& state, std::string id, SteadyTime now) {
    state.id = std::move(id);
    state.last.reset();
    state.pending_since = now;
}

}  // namespace crcrd::exec::slurm
