#include "crcrd/store/jobs.hpp"

#include <map>

#include <algorithm>

#include <nlohmann/json.hpp>

#include "crcrd/store/sqlite.hpp"
#include "vocab_column.hpp"

namespace crcrd::store {

namespace {

std::int64_t count_of(Scoped& st) {
    st->step();
    return st->int64(0);
}

std::vector<std::string> string_list(const std::string& text) {
    auto v = nlohmann::json::parse(text, nullptr, false);
    if (!v.is_array()) return {};
    std::vector<std::string> out;
    for (const auto& e : v)
        if (e.is_string()) out.push_back(e.get<std::string>());
    return out;
}

}  // namespace

std::vector<std::int64_t> JobsRepo::startable(int limit) {
    Scoped st(m_db,
              // In run order through the queued jobs' own index (CROSS JOIN keeps jobs the outer
              // loop, so no sort): the first `limit` startable ones end the walk, however long the
              // backlog behind them.
              "SELECT j.id FROM jobs j INDEXED BY jobs_queued CROSS JOIN runs r ON r.id = j.run_id "
              "WHERE j.state = 'queued' AND r.state IN ('queued','running') "
              // every earlier tier's latest attempt passed
              "AND NOT EXISTS (SELECT 1 FROM jobs e WHERE e.run_id = j.run_id AND e.position < "
              "j.position "
              "                AND e.attempt = (SELECT max(k.attempt) FROM jobs k WHERE k.run_id = "
              "e.run_id AND k.position = e.position) "
              "                AND NOT (e.state = 'completed' AND (e.conclusion = 'passed' OR "
              "e.conclusion = 'flaky' OR e.conclusion = 'pre_existing'))) "
              "AND NOT EXISTS (SELECT 1 FROM jobs s WHERE s.run_id = j.run_id AND s.state IN "
              "('leased','running')) "
              // the run's earliest queued tier (a retry comes before the tiers after it)
              "AND j.id = (SELECT q.id FROM jobs q INDEXED BY jobs_queued WHERE q.run_id = "
              "j.run_id AND q.state = 'queued' ORDER BY q.position, q.id LIMIT 1) "
              "ORDER BY j.run_id LIMIT ?");
    st->bind(1, std::int64_t{limit});
    std::vector<std::int64_t> ids;
    while (st->step()) ids.push_back(st->int64(0));
    return ids;
}

std::optional<JobForRun> JobsRepo::load(std::int64_t job_id) {
    Scoped st(m_db,
              "SELECT j.id, j.run_id, j.attempt, j.tier, coalesce(j.sha, r.sha), r.pr, j.tests, "
              "j.labels, j.timeout_ms "
              "FROM jobs j JOIN runs r ON r.id = j.run_id WHERE j.id = ?");
    st->bind(1, job_id);
    if (!st->step()) return std::nullopt;
    JobForRun j;
    j.job_id = st->int64(0);
    j.run_id = st->int64(1);
    j.attempt = static_cast<int>(st->int64(2));
    j.tier = st->text(3);
    j.sha = st->text(4);
    j.pr = st->opt_int64(5);
    j.tests = string_list(st->text(6));
    j.labels = string_list(st->text(7));
    j.timeout_ms = st->int64(8);
    return j;
}

std::optional<std::pair<std::int64_t, std::string>> JobsRepo::complete(
    std::int64_t job_id, Conclusion conclusion, const std::string& reason,
    std::optional<int> exit_status, SystemTime now_at) {
    const std::string now = rfc3339(now_at);
    Scoped upd(m_db,
               "UPDATE jobs SET state = 'completed', conclusion = ?, reason = ?, exit_status = ?, "
               "finished_at = ? "
               "WHERE id = ? AND (state = 'queued' OR state = 'leased' OR state = 'running') "
               "RETURNING run_id, tier");
    upd->bind(1, to_string(conclusion))
        .bind(2, reason)
        .bind(3, exit_status ? std::optional<std::int64_t>(*exit_status) : std::nullopt)
        .bind(4, now)
        .bind(5, job_id);
    if (!upd->step()) return std::nullopt;
    return std::make_pair(upd->int64(0), upd->text(1));
}

void JobsRepo::cancel_queued(std::int64_t run_id, const std::string& reason, SystemTime now_at) {
    const std::string now = rfc3339(now_at);
    Scoped st(m_db,
              "UPDATE jobs SET state = 'cancelled', conclusion = 'cancelled', reason = ?, "
              "finished_at = ? "
              "WHERE run_id = ? AND state = 'queued'");
    st->bind(1, reason).bind(2, now).bind(3, run_id);
    st->run();
}

void JobsRepo::cancel_open(const std::vector<std::int64_t>& run_ids, const std::string& reason,
                           SystemTime now_at) {
    const std::string now = rfc3339(now_at);
    // The open jobs are found first and changed by id: an UPDATE of several rows of a table with
    // triggers collects them in a temporary table first, even when there is none (issue 16).
    std::vector<std::int64_t> open;
    {
        Scoped find(m_db,
                    "SELECT id FROM jobs WHERE run_id = ? AND (state = 'queued' OR state = "
                    "'leased' OR state = 'running')");
        for (auto run_id : run_ids) {
            find->reset();
            find->bind(1, run_id);
            while (find->step()) open.push_back(find->int64(0));
        }
    }
    if (open.empty()) return;
    Scoped st(m_db,
              "UPDATE jobs SET state = 'cancelled', conclusion = 'cancelled', reason = ?, "
              "finished_at = ? "
              "WHERE id = ? AND (state = 'queued' OR state = 'leased' OR state = 'running')");
    for (auto id : open) {
        st->reset();
        st->bind(1, reason).bind(2, now).bind(3, id);
        st->run();
    }
}

std::int64_t JobsRepo::count_open(std::int64_t run_id) {
    Scoped st(m_db,
              "SELECT count(*) FROM jobs WHERE run_id = ? AND (state = 'queued' OR state = "
              "'leased' OR state = 'running')");
    st->bind(1, run_id);
    return count_of(st);
}

std::vector<TierResult> JobsRepo::latest_completed(std::int64_t run_id) {
    Scoped st(m_db,
              "SELECT tier, conclusion, coalesce(reason, ''), coalesce(json_extract(counts, "
              "'$.flaky'), 0) FROM jobs j "
              "WHERE run_id = ? AND state = 'completed' "
              "AND attempt = (SELECT max(attempt) FROM jobs k WHERE k.run_id = j.run_id AND "
              "k.position = j.position) "
              "ORDER BY position");
    st->bind(1, run_id);
    std::vector<TierResult> out;
    while (st->step())
        out.push_back(TierResult{st->text(0), vocab_column<Conclusion>(*st, 1, "jobs.conclusion"),
                                 st->text(2), st->int64(3)});
    return out;
}

std::int64_t JobsRepo::insert_retry(std::int64_t job_id, SystemTime now_at) {
    const std::string now = rfc3339(now_at);
    Scoped ins(m_db,
               "INSERT INTO jobs (run_id, tier, position, state, tests, timeout_ms, created_at, "
               "labels, attempt, sha, base_check) "
               "SELECT run_id, tier, position, 'queued', tests, timeout_ms, ?, labels, attempt + "
               "1, sha, base_check FROM jobs WHERE id = ?");
    ins->bind(1, now).bind(2, job_id);
    ins->run();
    return m_db.last_insert_rowid();
}

std::int64_t JobsRepo::insert_base_check(std::int64_t job_id, const std::string& base_sha,
                                         const std::vector<std::string>& tests, SystemTime now_at) {
    const std::string now = rfc3339(now_at);
    Scoped ins(m_db,
               "INSERT INTO jobs (run_id, tier, position, state, tests, timeout_ms, created_at, "
               "labels, attempt, sha, base_check) "
               "SELECT run_id, tier, position, 'queued', tests, timeout_ms, ?, labels, attempt + "
               "1, ?, ? FROM jobs WHERE id = ?");
    ins->bind(1, now).bind(2, base_sha).bind(3, nlohmann::json(tests).dump()).bind(4, job_id);
    ins->run();
    return m_db.last_insert_rowid();
}

std::vector<std::string> JobsRepo::base_check_tests(std::int64_t job_id) {
    Scoped st(m_db, "SELECT base_check FROM jobs WHERE id = ? AND base_check IS NOT NULL");
    st->bind(1, job_id);
    if (!st->step()) return {};
    return string_list(st->text(0));
}

std::vector<BaseFailure> JobsRepo::pre_existing_evidence_before(std::int64_t job_id) {
    Scoped st(m_db,
              "SELECT coalesce(json_extract(e.evidence, '$.pre_existing'), '[]'), "
              "coalesce(r.base_sha, '') FROM jobs j "
              // The tier's last attempt on the PR itself (a base check retried after an infra
              // failure has base checks before it).
              "JOIN jobs e ON e.run_id = j.run_id AND e.position = j.position AND e.attempt = "
              "  (SELECT max(k.attempt) FROM jobs k WHERE k.run_id = j.run_id AND k.position = "
              "j.position "
              "   AND k.attempt < j.attempt AND k.base_check IS NULL) "
              "JOIN runs r ON r.id = j.run_id WHERE j.id = ?");
    st->bind(1, job_id);
    std::vector<BaseFailure> out;
    if (!st->step()) return out;
    const auto base = st->text(1);
    auto list = nlohmann::json::parse(st->text(0), nullptr, false);
    if (!list.is_array()) return out;
    for (const auto& f : list) {
        if (!f.is_object()) continue;
        const auto sha = f.value("sha", std::string());
        out.push_back(
            {f.value("test", std::string()), f.value("run_id", std::int64_t{0}), sha, sha == base});
    }
    return out;
}

std::optional<std::string> JobsRepo::base_sha(std::int64_t job_id) {
    Scoped st(m_db, "SELECT r.base_sha FROM jobs j JOIN runs r ON r.id = j.run_id WHERE j.id = ?");
    st->bind(1, job_id);
    if (!st->step()) return std::nullopt;
    return st->opt_text(0);
}

std::string JobsRepo::waiting_since(std::int64_t job_id) {
    Scoped st(m_db,
              // Since the earlier tiers ended, or since the attempt was queued when that is later
              // (a retry, a base check).
              "SELECT max(coalesce((SELECT max(p.finished_at) FROM jobs p WHERE p.run_id = "
              "j.run_id AND p.position < j.position), "
              "j.created_at), j.created_at) FROM jobs j WHERE j.id = ?");
    st->bind(1, job_id);
    st->step();
    return st->text(0);
}

std::int64_t JobsRepo::earlier_attempts(std::int64_t job_id, EarlierOf which) {
    static const std::string k_prefix =
        "SELECT count(*) FROM jobs e JOIN jobs j ON e.run_id = j.run_id AND e.position = "
        "j.position "
        "WHERE j.id = ? AND e.id <> j.id AND e.state = 'completed' AND e.conclusion IN (";
    Scoped st(m_db, k_prefix +
                        (which == EarlierOf::infra ? "'infra_error','device_unavailable'"
                                                   : "'regression'") +
                        ")");
    st->bind(1, job_id);
    return count_of(st);
}

void JobsRepo::mark_flaky(std::int64_t job_id, const std::vector<std::string>& tests,
                          std::int64_t flaky_count) {
    {
        Scoped upd(
            m_db,
            "UPDATE test_results SET outcome = 'flaky' WHERE job_id = ? AND outcome = 'passed' "
            "AND name IN (SELECT value FROM json_each(?))");
        upd->bind(1, job_id).bind(2, nlohmann::json(tests).dump());
        upd->run();
    }
    Scoped counts(
        m_db,
        "UPDATE jobs SET counts = json_set(coalesce(counts, '{}'), '$.flaky', ?, '$.passed', "
        "(SELECT count(*) FROM test_results WHERE job_id = ? AND outcome = 'passed'), '$.skipped', "
        "(SELECT count(*) FROM test_results WHERE job_id = ? AND outcome = 'skipped')) WHERE id = "
        "?");
    counts->bind(1, flaky_count).bind(2, job_id).bind(3, job_id).bind(4, job_id);
    counts->run();
}

std::optional<std::vector<std::string>> JobsRepo::failed_in_latest_regression(std::int64_t job_id) {
    std::int64_t before = 0;
    {
        Scoped prev(m_db,
                    "SELECT e.id FROM jobs e JOIN jobs j ON e.run_id = j.run_id AND e.position = "
                    "j.position "
                    "WHERE j.id = ? AND e.id <> j.id AND e.state = 'completed' AND e.conclusion = "
                    "'regression' ORDER BY e.id DESC LIMIT 1");
        prev->bind(1, job_id);
        if (!prev->step()) return std::nullopt;
        before = prev->int64(0);
    }
    return failed_tests(before);
}

std::optional<std::pair<std::int64_t, std::int64_t>> JobsRepo::reusable(std::int64_t job_id,
                                                                        SystemTime since_at) {
    const std::string since = rfc3339(since_at);
    // Runs on the same SHA (runs_by_sha), their jobs (jobs_by_run); one that ran has metadata.
    // Never a base check (it runs on another SHA than its run's) either way, and never from a
    // bisect run (it ran only the failing tests of its tier's list).
    Scoped st(m_db,
              "SELECT e.run_id, e.id FROM jobs j CROSS JOIN runs r ON r.id = j.run_id "
              "CROSS JOIN runs er ON er.sha = r.sha AND er.id <> r.id AND +er.event <> 'bisect' "
              "CROSS JOIN jobs e ON e.run_id = er.id AND e.tier = j.tier AND e.tests = j.tests "
              "WHERE j.id = ? AND j.base_check IS NULL AND +e.base_check IS NULL "
              "AND +e.state = 'completed' AND +e.conclusion = 'passed' AND e.metadata IS NOT NULL "
              "AND e.finished_at >= ? ORDER BY e.finished_at DESC LIMIT 1");
    st->bind(1, job_id).bind(2, since);
    if (!st->step()) return std::nullopt;
    return std::make_pair(st->int64(0), st->int64(1));
}

void JobsRepo::mark_reused(std::int64_t job_id, std::int64_t from_run, std::int64_t from_job) {
    Scoped st(m_db,
              "UPDATE jobs SET evidence = json_object('reused_from', json_object('run_id', ?, "
              "'job_id', ?)) WHERE id = ?");
    st->bind(1, from_run).bind(2, from_job).bind(3, job_id);
    st->run();
}

std::vector<std::string> JobsRepo::failed_tests(std::int64_t job_id) {
    Scoped st(
        m_db,
        "SELECT name FROM test_results WHERE job_id = ? AND outcome = 'failed' ORDER BY rowid");
    st->bind(1, job_id);
    std::vector<std::string> out;
    while (st->step()) out.push_back(st->text(0));
    return out;
}

std::vector<std::string> JobsRepo::passed_tests(std::int64_t job_id) {
    Scoped st(
        m_db,
        "SELECT name FROM test_results WHERE job_id = ? AND outcome = 'passed' ORDER BY rowid");
    st->bind(1, job_id);
    std::vector<std::string> out;
    while (st->step()) out.push_back(st->text(0));
    return out;
}

std::vector<BaseFailure> JobsRepo::failed_on_base(std::int64_t job_id,
                                                  const std::vector<std::string>& tests,
                                                  SystemTime since_at) {
    const std::string since = rfc3339(since_at);
    // The candidate runs first (a PR run only): other runs on its base SHA (runs_by_sha), and
    // push or scheduled runs of its base branch that ended within the window (runs_by_ref);
    // then the tests failed by the last attempt of each of their tiers that ended a regression
    // (a test that failed and then passed there was flaky; a tier that ended infra or device
    // says nothing of its tests), through jobs_by_run and test_results_by_job. Bounded by the
    // candidates, never by how often a test failed in the whole history.
    Scoped st(
        m_db,
        "WITH pr AS (SELECT r.id, r.base_sha, r.base_ref FROM jobs j CROSS JOIN runs r ON r.id = "
        "j.run_id "
        "            WHERE j.id = ? AND r.event = 'pull_request'), "
        "cand AS (SELECT br.id, br.sha, 1 AS on_sha FROM pr CROSS JOIN runs br ON br.sha = "
        "pr.base_sha AND br.id <> pr.id "
        "         UNION "
        "         SELECT br.id, br.sha, 0 FROM pr CROSS JOIN runs br ON br.ref IN (pr.base_ref, "
        "'refs/heads/' || pr.base_ref) "
        "         AND br.finished_at >= ? AND br.event IN ('push','schedule') AND br.id <> pr.id) "
        // CROSS JOIN fixes the order (the daemon never runs ANALYZE: SQLite would otherwise
        // walk every completed job through jobs_by_state).
        "SELECT t.name, cand.id, cand.sha, cand.on_sha FROM cand "
        "CROSS JOIN jobs bj ON bj.run_id = cand.id AND +bj.state = 'completed' AND +bj.conclusion "
        "IN ('regression','pre_existing') "
        "AND bj.attempt = (SELECT max(k.attempt) FROM jobs k WHERE k.run_id = bj.run_id AND "
        "k.position = bj.position) "
        "CROSS JOIN test_results t ON t.job_id = bj.id AND t.outcome = 'failed' "
        "ORDER BY cand.on_sha DESC, cand.id DESC");
    st->bind(1, job_id).bind(2, since);
    std::map<std::string, BaseFailure> first;  // by test: the base SHA's run, else the newest
    while (st->step()) {
        auto name = st->text(0);
        if (!first.count(name))
            first.emplace(name, BaseFailure{name, st->int64(1), st->text(2), st->int64(3) != 0});
    }
    std::vector<BaseFailure> out;
    for (const auto& t : tests)
        if (auto it = first.find(t); it != first.end()) out.push_back(it->second);
    return out;
}

void JobsRepo::add_evidence(std::int64_t job_id, const std::string& key, const JsonText& value) {
    Scoped st(m_db,
              "UPDATE jobs SET evidence = json_set(coalesce(evidence, '{}'), '$.' || ?, json(?)) "
              "WHERE id = ?");
    st->bind(1, key).bind(2, value.text()).bind(3, job_id);
    st->run();
}

std::int64_t JobsRepo::carry_earlier_results(std::int64_t job_id) {
    // A rerun of only the failed tests (CRCR_RERUN_FILE): the tier's other tests passed (or
    // were skipped) in an attempt before; they are this attempt's results too, so the tier
    // reports all its tests. A whole-tier rerun has them all already: nothing is carried.
    Scoped carry(
        m_db,
        "INSERT INTO test_results (job_id, name, outcome, duration_s, message) "
        "SELECT j.id, t.name, t.outcome, t.duration_s, t.message FROM jobs j "
        "JOIN jobs e ON e.run_id = j.run_id AND e.position = j.position AND e.attempt < j.attempt "
        "JOIN test_results t ON t.job_id = e.id AND t.outcome IN ('passed','skipped') "
        "WHERE j.id = ? AND t.name NOT IN (SELECT name FROM test_results WHERE job_id = j.id) "
        "GROUP BY t.name");
    carry->bind(1, job_id);
    carry->run();
    const std::int64_t carried = m_db.changes();
    if (carried == 0) return 0;
    Scoped counts(
        m_db,
        "UPDATE jobs SET counts = json_set(coalesce(counts, '{}'), "
        "'$.passed', (SELECT count(*) FROM test_results WHERE job_id = ?1 AND outcome = 'passed'), "
        "'$.skipped', (SELECT count(*) FROM test_results WHERE job_id = ?1 AND outcome = "
        "'skipped')) WHERE id = ?1");
    counts->bind(1, job_id);
    counts->run();
    return carried;
}

std::vector<std::string> JobsRepo::failed_in_rerun_source(std::int64_t job_id) {
    // The previous attempt of the same tier in the same run, when it was a regression.
    Scoped st(
        m_db,
        "SELECT t.name FROM test_results t WHERE t.outcome = 'failed' AND t.job_id = "
        "(SELECT e.id FROM jobs e JOIN jobs j ON e.run_id = j.run_id AND e.position = j.position "
        " WHERE j.id = ? AND e.attempt = j.attempt - 1 AND e.conclusion = 'regression') ORDER BY "
        "t.rowid");
    st->bind(1, job_id);
    std::vector<std::string> out;
    while (st->step()) out.push_back(st->text(0));
    return out;
}

std::vector<OpenAttempt> JobsRepo::left_open() {
    Scoped st(m_db,
              "SELECT id, pgid, external_id, slot FROM jobs WHERE state IN ('leased','running')");
    std::vector<OpenAttempt> out;
    while (st->step())
        out.push_back(
            OpenAttempt{st->int64(0), st->opt_int64(1), st->opt_text(2), st->opt_text(3)});
    return out;
}

void JobsRepo::mark_leased(std::int64_t job_id, const std::string& slot) {
    Scoped st(m_db, "UPDATE jobs SET state = 'leased', slot = ? WHERE id = ?");
    st->bind(1, slot).bind(2, job_id);
    st->run();
}

std::optional<JobState> JobsRepo::state(std::int64_t job_id) {
    Scoped st(m_db, "SELECT state FROM jobs WHERE id = ?");
    st->bind(1, job_id);
    if (!st->step()) return std::nullopt;
    return vocab_column<JobState>(*st, 0, "jobs.state");
}

void JobsRepo::requeue_leased(std::int64_t job_id) {
    Scoped st(m_db,
              "UPDATE jobs SET state = 'queued', slot = NULL WHERE id = ? AND state = 'leased'");
    st->bind(1, job_id);
    st->run();
}

bool JobsRepo::claim_start(std::int64_t job_id, SystemTime now_at) {
    const std::string now = rfc3339(now_at);
    Scoped st(m_db,
              "UPDATE jobs SET state = 'running', started_at = coalesce(started_at, ?) WHERE id = "
              "? AND state = 'leased'");
    st->bind(1, now).bind(2, job_id);
    st->run();
    return m_db.changes() == 1;
}

void JobsRepo::mark_running(std::int64_t job_id, std::int64_t pgid, const std::string& external_id,
                            SystemTime now_at) {
    const std::string now = rfc3339(now_at);
    Scoped st(
        m_db,
        "UPDATE jobs SET state = 'running', pgid = nullif(?, 0), external_id = nullif(?, ''), "
        "started_at = coalesce(started_at, ?) WHERE id = ? AND state IN ('leased','running')");
    st->bind(1, pgid).bind(2, external_id).bind(3, now).bind(4, job_id);
    st->run();
}

void JobsRepo::requeue_open(std::int64_t job_id) {
    Scoped st(m_db,
              "UPDATE jobs SET state = 'queued', slot = NULL WHERE id = ? AND state IN "
              "('leased','running')");
    st->bind(1, job_id);
    st->run();
}

void JobsRepo::record_results(std::int64_t job_id, const std::vector<TestRow>& tests,
                              const JsonText& metadata, const std::string& log_path,
                              const JsonText& counts, const JsonText& evidence) {
    {
        Scoped ins(m_db,
                   "INSERT INTO test_results (job_id, name, outcome, duration_s, message) VALUES "
                   "(?,?,?,?,?)");
        for (const auto& t : tests) {
            ins->reset();
            ins->bind(1, job_id).bind(2, t.name).bind(3, to_string(t.outcome));
            ins->bind(4, t.duration_s).bind(5, t.message);
            ins->run();
        }
    }
    Scoped upd(m_db,
               "UPDATE jobs SET metadata = ?, log_path = ?, counts = ?, evidence = ? WHERE id = ?");
    upd->bind(1, metadata.text())
        .bind(2, log_path)
        .bind(3, counts.text())
        .bind(4, evidence.text())
        .bind(5, job_id);
    upd->run();
}

}  // namespace crcrd::store
