#include "crcrd/sched/jobs.hpp"

#include <algorithm>

#include "crcrd/core/time.hpp"
#include "crcrd/sched/attempt.hpp"
#include "crcrd/store/jobs.hpp"
#include "crcrd/store/runs.hpp"

namespace crcrd::sched {

std::string more_severe(const std::string& a, const std::string& b) {
    if (a.empty()) return b;
    if (b.empty()) return a;
    const auto& order = severity_order();
    auto ia = std::find(order.begin(), order.end(), a);
    auto ib = std::find(order.begin(), order.end(), b);
    return ia <= ib ? a : b;
}

std::vector<std::int64_t> startable_jobs(store::Db& db, int limit) { return store::JobsRepo(db).startable(limit); }

RunClass run_class(const std::vector<store::TierResult>& tiers, const std::string& last_tier,
                   const std::string& last_conclusion) {
    // The last attempt of each tier counts: a retried infra failure does not. The run says
    // which tier decided its class, and why.
    RunClass out;
    std::int64_t flaky_tests = 0;
    for (const auto& t : tiers) {
        flaky_tests += t.flaky_tests;
        if (out.conclusion.empty() || (more_severe(out.conclusion, t.conclusion) == t.conclusion && t.conclusion != out.conclusion)) {
            out.conclusion = t.conclusion;
            out.reason = t.tier + ": " + t.reason;
        }
    }
    if (out.conclusion.empty()) {
        out.conclusion = "cancelled";
        out.reason = last_tier + " ended " + last_conclusion;
    }
    if (out.conclusion == "passed") out.reason = "every selected tier passed";
    if (out.conclusion == "flaky") {
        out.reason = flaky_reason(flaky_tests);
    }
    return out;
}

std::optional<std::string> finish_job(store::Db& db, std::int64_t job_id, const std::string& conclusion,
                                      const std::string& reason, std::optional<int> exit_status) {
    const std::string now = now_rfc3339();
    store::JobsRepo jobs(db);
    auto done_attempt = jobs.complete(job_id, conclusion, reason, exit_status, now);
    if (!done_attempt) return std::nullopt;
    const auto& [run_id, tier] = *done_attempt;

    if (conclusion != "passed" && conclusion != "flaky") jobs.cancel_queued(run_id, tier + " ended " + conclusion, now);
    if (jobs.count_open(run_id) != 0) return std::nullopt;
    auto c = run_class(jobs.latest_completed(run_id), tier, conclusion);
    store::RunsRepo(db).complete(run_id, c.conclusion, c.reason, now);
    return c.conclusion;
}

std::optional<std::int64_t> retry_job(store::Db& db, std::int64_t job_id, const std::string& conclusion,
                                      const std::string& reason, std::optional<int> exit_status) {
    const std::string now = now_rfc3339();
    store::JobsRepo jobs(db);
    if (!jobs.complete(job_id, conclusion, reason + " (retried)", exit_status, now)) return std::nullopt;
    return jobs.insert_retry(job_id, now);
}

}  // namespace crcrd::sched
