#include "crcrd/store/bisections.hpp"

#include <nlohmann/json.hpp>

#include "crcrd/store/deliveries.hpp"
#include "crcrd/store/sqlite.hpp"
#include "store/vocab_column.hpp"

namespace crcrd::store {

using nlohmann::json;

namespace {

std::vector<std::string> strings(const std::string& text) {
    std::vector<std::string> out;
    auto j = json::parse(text, nullptr, false);
    if (!j.is_array()) return out;
    for (const auto& v : j)
        if (v.is_string()) out.push_back(v.get<std::string>());
    return out;
}

constexpr const char* k_columns =
    "id, bad_run_id, tier, tests, state, coalesce(reason, ''), good_run_id, good_sha, bad_sha, "
    "commits, culprit, "
    "created_at, finished_at";

Bisection row(const Stmt& st) {
    Bisection b;
    b.id = st.int64(0);
    b.bad_run_id = st.int64(1);
    b.tier = st.text(2);
    b.tests = strings(st.text(3));
    b.state = vocab_column<BisectionState>(st, 4, "bisections.state");
    b.reason = st.text(5);
    b.good_run_id = st.opt_int64(6);
    b.good_sha = st.opt_text(7);
    b.bad_sha = st.text(8);
    b.commits = strings(st.text(9));
    b.culprit = st.opt_text(10);
    b.created_at = st.text(11);
    b.finished_at = st.opt_text(12);
    return b;
}

}  // namespace

std::vector<Followup> BisectionsRepo::followups(int limit) {
    Scoped st(m_db, "SELECT run_id, kind FROM followups ORDER BY run_id, kind LIMIT ?");
    st->bind(1, std::int64_t{limit});
    std::vector<Followup> out;
    while (st->step())
        out.push_back({st->int64(0), vocab_column<FollowupKind>(*st, 1, "followups.kind")});
    return out;
}

void BisectionsRepo::done(const Followup& f) {
    Scoped st(m_db, "DELETE FROM followups WHERE run_id = ? AND kind = ?");
    st->bind(1, f.run_id).bind(2, to_string(f.kind));
    st->run();
}

std::optional<BisectSource> BisectionsRepo::source(std::int64_t run_id) {
    Scoped st(
        m_db,
        "SELECT r.event, r.sha, coalesce(r.ref, ''), j.tier, j.id FROM runs r JOIN jobs j ON "
        "j.run_id = r.id "
        "WHERE r.id = ? AND j.state = 'completed' AND j.conclusion = 'regression' "
        "AND j.attempt = (SELECT max(k.attempt) FROM jobs k WHERE k.run_id = j.run_id AND "
        "k.position = j.position) "
        "AND (j.position = -1 OR EXISTS (SELECT 1 FROM test_results t WHERE t.job_id = j.id AND "
        "t.outcome = 'failed')) "
        "ORDER BY j.position LIMIT 1");
    st->bind(1, run_id);
    if (!st->step()) return std::nullopt;
    BisectSource s{run_id,      vocab_column<RunEvent>(*st, 0, "runs.event"),
                   st->text(1), st->text(2),
                   st->text(3), {}};
    const auto job = st->int64(4);
    Scoped failed(
        m_db,
        "SELECT name FROM test_results WHERE job_id = ? AND outcome = 'failed' ORDER BY rowid");
    failed->bind(1, job);
    while (failed->step()) s.tests.push_back(failed->text(0));
    return s;
}

std::optional<std::pair<std::int64_t, std::string>> BisectionsRepo::good_run(
    const BisectSource& bad) {
    // The 1,000 newest runs of the ref through runs_by_ref (ref, finished_at), then the tier's
    // last attempt in each through jobs_by_run. The order is fixed (CROSS JOIN, `+`): the
    // daemon never runs ANALYZE, and SQLite would otherwise walk runs_by_state and
    // jobs_by_state, (completed runs) x (completed jobs), on the writer's thread.
    Scoped st(m_db,
              "WITH cand AS (SELECT r.id, r.sha, r.finished_at FROM runs r WHERE r.ref = ? AND "
              "r.finished_at IS NOT NULL "
              "              AND +r.id < ? AND +r.event IN ('push','schedule') AND +r.state = "
              "'completed' "
              "              ORDER BY r.finished_at DESC LIMIT 1000) "
              "SELECT cand.id, cand.sha FROM cand CROSS JOIN jobs j ON j.run_id = cand.id AND "
              "+j.tier = ? "
              "AND +j.state = 'completed' AND +j.conclusion IN ('passed','flaky') "
              "AND j.attempt = (SELECT max(k.attempt) FROM jobs k WHERE k.run_id = j.run_id AND "
              "k.position = j.position) "
              "ORDER BY cand.finished_at DESC, cand.id DESC LIMIT 1");
    st->bind(1, bad.ref).bind(2, bad.run_id).bind(3, bad.tier);
    if (!st->step()) return std::nullopt;
    return std::make_pair(st->int64(0), st->text(1));
}

std::int64_t BisectionsRepo::insert(const NewBisection& b, SystemTime now_at) {
    const std::string now = rfc3339(now_at);
    const bool ended = b.state != BisectionState::running;
    Scoped st(m_db,
              "INSERT INTO bisections (bad_run_id, tier, tests, state, reason, good_run_id, "
              "good_sha, bad_sha, commits, culprit, "
              "created_at, finished_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)");
    st->bind(1, b.bad_run_id)
        .bind(2, b.tier)
        .bind(3, json(b.tests).dump())
        .bind(4, to_string(b.state))
        .bind(5, b.reason)
        .bind(6, b.good_run_id)
        .bind(7, b.good_sha)
        .bind(8, b.bad_sha)
        .bind(9, json(b.commits).dump())
        .bind(10, b.culprit)
        .bind(11, now)
        .bind(12, ended ? std::optional<std::string>(now) : std::nullopt);
    st->run();
    auto id = m_db.last_insert_rowid();
    if (ended) touch_statuses(b.bad_run_id);
    return id;
}

std::optional<Bisection> BisectionsRepo::load(std::int64_t id) {
    return one("id", id);
}

std::optional<Bisection> BisectionsRepo::of_bad_run(std::int64_t run_id) {
    return one("bad_run_id", run_id);
}

std::optional<Bisection> BisectionsRepo::one(const char* key, std::int64_t value) {
    Scoped st(m_db, std::string("SELECT ") + k_columns + " FROM bisections WHERE " + key + " = ?");
    st->bind(1, value);
    if (!st->step()) return std::nullopt;
    return row(*st);
}

std::string BisectionsRepo::tier_tests_json(std::int64_t run_id, const std::string& tier) {
    Scoped st(m_db,
              "SELECT tests FROM jobs WHERE run_id = ? AND tier = ? ORDER BY attempt DESC LIMIT 1");
    st->bind(1, run_id).bind(2, tier);
    return st->step() ? st->text(0) : std::string("[]");
}

std::string BisectionsRepo::ref_of(std::int64_t run_id) {
    Scoped st(m_db, "SELECT coalesce(ref, '') FROM runs WHERE id = ?");
    st->bind(1, run_id);
    return st->step() ? st->text(0) : std::string();
}

std::optional<std::pair<std::int64_t, std::int64_t>> BisectionsRepo::running_on(
    const std::string& ref, const std::string& tier) {
    Scoped st(
        m_db,
        "SELECT b.id, b.bad_run_id FROM bisections b CROSS JOIN runs r ON r.id = b.bad_run_id "
        "WHERE b.state = 'running' AND b.tier = ? AND r.ref = ? ORDER BY b.id LIMIT 1");
    st->bind(1, tier).bind(2, ref);
    if (!st->step()) return std::nullopt;
    return std::make_pair(st->int64(0), st->int64(1));
}

std::optional<std::int64_t> BisectionsRepo::bisection_of(std::int64_t run_id) {
    Scoped st(m_db, "SELECT bisection_id FROM runs WHERE id = ?");
    st->bind(1, run_id);
    if (!st->step()) return std::nullopt;
    return st->opt_int64(0);
}

std::vector<BisectRun> BisectionsRepo::runs(std::int64_t bisection_id) {
    Scoped st(m_db,
              "SELECT id, sha, state, conclusion, EXISTS (SELECT 1 FROM jobs j WHERE j.run_id = "
              "runs.id) FROM runs "
              "WHERE bisection_id = ? ORDER BY id");
    st->bind(1, bisection_id);
    std::vector<BisectRun> out;
    while (st->step()) {
        BisectRun r;
        r.run_id = st->int64(0);
        r.sha = st->text(1);
        r.state = vocab_column<RunState>(*st, 2, "runs.state");
        if (!st->is_null(3)) r.conclusion = vocab_column<Conclusion>(*st, 3, "runs.conclusion");
        r.had_jobs = st->int64(4) != 0;
        out.push_back(std::move(r));
    }
    return out;
}

std::int64_t BisectionsRepo::queue_run(const Bisection& b, const std::string& sha,
                                       const std::string& ref, const JsonText& inputs,
                                       SystemTime now_at) {
    const std::string now = rfc3339(now_at);
    NewRun r;
    r.event = RunEvent::bisect;
    r.sha = sha;
    r.ref = ref;
    r.delivery_id = "bisect:" + std::to_string(b.id) + ":" + sha;
    r.inputs_json = inputs.text();
    auto id = insert_run(m_db, r, now_at);
    Scoped st(m_db, "UPDATE runs SET bisection_id = ? WHERE id = ?");
    st->bind(1, b.id).bind(2, id);
    st->run();
    return id;
}

void BisectionsRepo::finish(std::int64_t id, BisectionState state, const std::string& reason,
                            const std::optional<std::string>& culprit, SystemTime now_at) {
    const std::string now = rfc3339(now_at);
    Scoped st(m_db,
              "UPDATE bisections SET state = ?, reason = ?, culprit = ?, finished_at = ? WHERE id "
              "= ? AND state = 'running' "
              "RETURNING bad_run_id");
    st->bind(1, to_string(state)).bind(2, reason).bind(3, culprit).bind(4, now).bind(5, id);
    if (st->step()) {
        const auto bad = st->int64(0);
        st->reset();
        touch_statuses(bad);
    }
}

void BisectionsRepo::set_reason(std::int64_t id, const std::string& reason) {
    Scoped st(m_db, "UPDATE bisections SET reason = ? WHERE id = ?");
    st->bind(1, reason).bind(2, id);
    st->run();
}

std::vector<std::string> BisectionsRepo::tests_for_job(std::int64_t job_id) {
    Scoped st(m_db,
              "SELECT r.inputs FROM jobs j JOIN runs r ON r.id = j.run_id WHERE j.id = ? AND "
              "r.event = 'bisect'");
    st->bind(1, job_id);
    if (!st->step()) return {};
    auto inputs = json::parse(st->text(0), nullptr, false);
    if (!inputs.is_object() || !inputs.contains("tests")) return {};
    return strings(inputs["tests"].dump());
}

void BisectionsRepo::touch_statuses(std::int64_t run_id) {
    Scoped st(m_db, "INSERT OR IGNORE INTO status_dirty (run_id) VALUES (?)");
    st->bind(1, run_id);
    st->run();
}

}  // namespace crcrd::store
