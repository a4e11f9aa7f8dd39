#include "crcrd/sched/jobs.hpp"

#include "crcrd/core/time.hpp"
#include "crcrd/sched/attempt.hpp"
#include "crcrd/store/jobs.hpp"
#include "crcrd/store/runs.hpp"

namespace crcrd::sched {

std::optional<Conclusion> more_severe(std::optional<Conclusion> a, std::optional<Conclusion> b) {
    if (!a) return b;
    if (!b) return a;
    return severity(*a) <= severity(*b) ? a : b;
}

std::vector<std::int64_t> startable_jobs(store::Db& db, int limit) {
    return store::JobsRepo(db).startable(limit);
}

RunClass run_class(const std::vector<store::TierResult>& tiers, const std::string& last_tier,
                   Conclusion last_conclusion) {
    // The last attempt of each tier counts: a retried infra failure does not. The run says
    // which tier decided its class, and why: the first tier of the most severe class.
    std::optional<Conclusion> worst;
    RunClass out;
    std::int64_t flaky_tests = 0;
    for (const auto& t : tiers) {
        flaky_tests += t.flaky_tests;
        if (!worst || severity(t.conclusion) < severity(*worst)) {
            worst = t.conclusion;
            out.reason = t.tier + ": " + t.reason;
        }
    }
    if (!worst) {
        worst = Conclusion::cancelled;
        out.reason = last_tier + " ended " + std::string(to_string(last_conclusion));
    }
    out.conclusion = *worst;
    if (out.conclusion == Conclusion::passed) out.reason = "every selected tier passed";
    if (out.conclusion == Conclusion::flaky) {
        out.reason = flaky_reason(flaky_tests);
    }
    return out;
}

std::optional<Conclusion> finish_job(store::Db& db, std::int64_t job_id, Conclusion conclusion,
                                     const std::string& reason, std::optional<int> exit_status,
                                     SystemTime now) {
    store::JobsRepo jobs(db);
    auto done_attempt = jobs.complete(job_id, conclusion, reason, exit_status, now);
    if (!done_attempt) return std::nullopt;
    const auto& [run_id, tier] = *done_attempt;

    // A build that did not pass leaves nothing to test, even when its failure is the base's.
    if (!is_pass(conclusion) || (tier == k_build_stage && conclusion != Conclusion::passed))
        jobs.cancel_queued(run_id, tier + " ended " + std::string(to_string(conclusion)), now);
    if (jobs.count_open(run_id) != 0) return std::nullopt;
    auto c = run_class(jobs.latest_completed(run_id), tier, conclusion);
    store::RunsRepo(db).complete(run_id, c.conclusion, c.reason, now);
    return c.conclusion;
}

}  // namespace crcrd::sched
