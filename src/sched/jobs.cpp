#include "crcrd/sched/jobs.hpp"

#include <algorithm>

#include "crcrd/core/time.hpp"

namespace crcrd::sched {

std::string more_severe(const std::string& a, const std::string& b) {
    if (a.empty()) return b;
    if (b.empty()) return a;
    const auto& order = severity_order();
    auto ia = std::find(order.begin(), order.end(), a);
    auto ib = std::find(order.begin(), order.end(), b);
    return ia <= ib ? a : b;
}

std::vector<std::int64_t> startable_jobs(store::Db& db, int limit) {
    auto& st = db.cached(
        "SELECT j.id FROM jobs j JOIN runs r ON r.id = j.run_id "
        "WHERE j.state = 'queued' AND r.state IN ('queued','running') "
        // every earlier tier's latest attempt passed
        "AND NOT EXISTS (SELECT 1 FROM jobs e WHERE e.run_id = j.run_id AND e.position < j.position "
        "                AND e.attempt = (SELECT max(k.attempt) FROM jobs k WHERE k.run_id = e.run_id AND k.position = e.position) "
        "                AND NOT (e.state = 'completed' AND e.conclusion IN ('passed','flaky'))) "
        "AND NOT EXISTS (SELECT 1 FROM jobs s WHERE s.run_id = j.run_id AND s.state IN ('leased','running')) "
        // the run's earliest queued tier (a retry comes before the tiers after it)
        "AND j.id = (SELECT q.id FROM jobs q WHERE q.run_id = j.run_id AND q.state = 'queued' ORDER BY q.position, q.id LIMIT 1) "
        "ORDER BY j.run_id LIMIT ?");
    st.bind(1, std::int64_t{limit});
    std::vector<std::int64_t> ids;
    while (st.step()) ids.push_back(st.int64(0));
    st.reset();
    return ids;
}

namespace {

/// Completes an open attempt; its run and tier, or nullopt when it had already ended
/// (e.g. cancelled meanwhile).
std::optional<std::pair<std::int64_t, std::string>> complete_attempt(store::Db& db, std::int64_t job_id,
                                                                     const std::string& conclusion,
                                                                     const std::string& reason,
                                                                     std::optional<int> exit_status,
                                                                     const std::string& now) {
    auto& upd = db.cached(
        "UPDATE jobs SET state = 'completed', conclusion = ?, reason = ?, exit_status = ?, finished_at = ? "
        "WHERE id = ? AND state IN ('queued','leased','running') RETURNING run_id, tier");
    upd.bind(1, conclusion).bind(2, reason).bind(3, exit_status ? std::optional<std::int64_t>(*exit_status) : std::nullopt)
        .bind(4, now).bind(5, job_id);
    if (!upd.step()) return std::nullopt;
    auto out = std::make_pair(upd.int64(0), upd.text(1));
    upd.reset();
    return out;
}

}  // namespace

std::optional<std::string> finish_job(store::Db& db, std::int64_t job_id, const std::string& conclusion,
                                      const std::string& reason, std::optional<int> exit_status) {
    const std::string now = now_rfc3339();
    auto done_attempt = complete_attempt(db, job_id, conclusion, reason, exit_status, now);
    if (!done_attempt) return std::nullopt;
    const auto& [run_id, tier] = *done_attempt;

    if (conclusion != "passed" && conclusion != "flaky") {
        auto& cancel = db.cached(
            "UPDATE jobs SET state = 'cancelled', conclusion = 'cancelled', reason = ?, finished_at = ? "
            "WHERE run_id = ? AND state = 'queued'");
        cancel.bind(1, tier + " ended " + conclusion).bind(2, now).bind(3, run_id);
        cancel.run();
    }
    auto& open = db.cached("SELECT count(*) FROM jobs WHERE run_id = ? AND state IN ('queued','leased','running')");
    open.bind(1, run_id);
    open.step();
    const bool done = open.int64(0) == 0;
    open.reset();
    if (!done) return std::nullopt;

    // The last attempt of each tier counts: a retried infra failure does not. The run says
    // which tier decided its class, and why.
    std::string worst, worst_reason;
    std::int64_t flaky_tests = 0;
    auto& classes = db.cached(
        "SELECT tier, conclusion, coalesce(reason, ''), coalesce(json_extract(counts, '$.flaky'), 0) FROM jobs j "
        "WHERE run_id = ? AND state = 'completed' "
        "AND attempt = (SELECT max(attempt) FROM jobs k WHERE k.run_id = j.run_id AND k.position = j.position) "
        "ORDER BY position");
    classes.bind(1, run_id);
    while (classes.step()) {
        const std::string c = classes.text(1);
        flaky_tests += classes.int64(3);
        if (worst.empty() || (more_severe(worst, c) == c && c != worst)) {
            worst = c;
            worst_reason = classes.text(0) + ": " + classes.text(2);
        }
    }
    classes.reset();
    if (worst.empty()) {
        worst = "cancelled";
        worst_reason = tier + " ended " + conclusion;
    }
    if (worst == "passed") worst_reason = "every selected tier passed";
    if (worst == "flaky") {
        worst_reason = std::to_string(flaky_tests) + (flaky_tests == 1 ? " test" : " tests") + " failed, then passed on rerun";
    }
    auto& run = db.cached(
        "UPDATE runs SET state = 'completed', conclusion = ?, reason = ?, finished_at = ? "
        "WHERE id = ? AND state IN ('queued','running')");
    run.bind(1, worst).bind(2, worst_reason).bind(3, now).bind(4, run_id);
    run.run();
    return worst;
}

std::optional<std::int64_t> retry_job(store::Db& db, std::int64_t job_id, const std::string& conclusion,
                                      const std::string& reason, std::optional<int> exit_status) {
    const std::string now = now_rfc3339();
    if (!complete_attempt(db, job_id, conclusion, reason + " (retried)", exit_status, now)) return std::nullopt;
    auto& ins = db.cached(
        "INSERT INTO jobs (run_id, tier, position, state, tests, timeout_ms, created_at, labels, attempt) "
        "SELECT run_id, tier, position, 'queued', tests, timeout_ms, ?, labels, attempt + 1 FROM jobs WHERE id = ?");
    ins.bind(1, now).bind(2, job_id);
    ins.run();
    return db.last_insert_rowid();
}

}  // namespace crcrd::sched
