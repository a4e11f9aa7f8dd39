#include "crcrd/sched/attempt_end.hpp"

#include "crcrd/core/time.hpp"
#include "crcrd/sched/jobs.hpp"
#include "crcrd/store/builds.hpp"
#include "crcrd/store/jobs.hpp"

namespace crcrd::sched {

namespace {

/// What the builds table says of the base's build `key`.
BaseBuild base_build(store::Db& db, const std::string& sha, const std::string& key) {
    BaseBuild b;
    b.sha = sha;
    const auto row = store::BuildsRepo(db).get(key);
    if (!row) return b;
    if (row->fails_to_build()) {
        b.said = BaseBuild::Said::fails;
        b.build_id = row->id;
    } else if ((row->state == BuildState::ready || row->state == BuildState::evicted) &&
               !row->conclusion) {
        b.said = BaseBuild::Said::builds;
    }
    return b;
}

}  // namespace

AttemptFacts read_attempt_facts(store::Db& db, const exec::JobToRun& job, AttemptOrigin origin,
                                Judged judged, std::int64_t carried, const EndPolicy& policy) {
    store::JobsRepo jobs(db);
    AttemptFacts f;
    f.origin = origin;
    f.judged = std::move(judged);
    f.daemon_stopping = policy.daemon_stopping;
    f.run_id = job.run_id;
    f.sha = job.sha;
    f.carried = carried;
    f.build = job.tier == k_build_stage;
    f.failed = jobs.failed_tests(job.job_id);
    f.passed = jobs.passed_tests(job.job_id);
    f.infra_before = jobs.earlier_attempts(job.job_id, store::EarlierOf::infra);
    f.regressions_before = jobs.earlier_attempts(job.job_id, store::EarlierOf::regression);
    if (f.judged.conclusion == Conclusion::passed)
        f.failed_in_last_regression = jobs.failed_in_latest_regression(job.job_id);
    f.checked = jobs.base_check_tests(job.job_id);
    if (!f.checked.empty()) f.found_before = jobs.pre_existing_evidence_before(job.job_id);
    f.pr = job.pr.has_value();
    f.retry = policy.retry;
    f.lookup_base = policy.base_window.has_value();
    f.run_on_base = policy.run_on_base;
    if (f.judged.conclusion == Conclusion::regression && f.build && policy.base_window &&
        job.build && job.build->base_key && !job.build->base_check)
        f.base_build = base_build(db, *job.build->base_sha, *job.build->base_key);
    if (f.judged.conclusion == Conclusion::regression && f.pr && policy.base_window &&
        !f.failed.empty()) {
        const auto since = policy.now - *policy.base_window;
        f.found_on_base = jobs.failed_on_base(job.job_id, f.failed, since);
        f.base_sha = jobs.base_sha(job.job_id);
    }
    return f;
}

bool apply_end(store::Db& db, std::int64_t job_id, const EndPlan& plan, SystemTime at) {
    store::JobsRepo jobs(db);
    // An attempt that already ended (cancelled while it ran, by whoever cancelled it) keeps
    // what it ended with.
    const auto state = jobs.state(job_id);
    if (!state ||
        (*state != JobState::queued && *state != JobState::leased && *state != JobState::running))
        return false;
    if (plan.flaky_count > 0) jobs.mark_flaky(job_id, plan.flaky, plan.flaky_count);
    for (const auto& [key, value] : plan.evidence)
        jobs.add_evidence(job_id, key, store::JsonText(value));
    const SystemTime now = at;
    switch (plan.next) {
        case EndPlan::Next::retry:
            if (jobs.complete(job_id, plan.conclusion, plan.reason, plan.exit_status, now))
                jobs.insert_retry(job_id, now);
            break;
        case EndPlan::Next::check_on_base:
            if (jobs.complete(job_id, plan.conclusion, plan.reason, plan.exit_status, now)) {
                jobs.insert_base_check(job_id, plan.base_sha, plan.check_tests, now);
            }
            break;
        case EndPlan::Next::finish:
            finish_job(db, job_id, plan.conclusion, plan.reason, plan.exit_status, at);
            break;
    }
    return true;
}

std::optional<EndPlan> end_attempt(store::Db& db, const exec::JobToRun& job, AttemptOrigin origin,
                                   Judged judged, const EndPolicy& policy, std::int64_t carried) {
    const auto plan =
        plan_end(read_attempt_facts(db, job, origin, std::move(judged), carried, policy));
    if (!apply_end(db, job.job_id, plan, policy.now)) return std::nullopt;
    return plan;
}

}  // namespace crcrd::sched
