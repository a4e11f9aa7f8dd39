#include "crcrd/store/runs.hpp"

#include "crcrd/store/jobs.hpp"
#include "crcrd/store/sqlite.hpp"
#include "guarded.hpp"
#include "vocab_column.hpp"

namespace crcrd::store {

namespace {

/// The follow-ups run `run_id` (of event `event`, as stored) leaves now that it ended.
void leave_followups(Db& db, std::int64_t run_id, const std::string& event, RunState ended,
                     Conclusion conclusion) {
    const auto e = from_string<RunEvent>(event);
    if (!e) return;  // a CHECK constraint keeps runs.event to RunEvent's names
    Scoped ins(db, "INSERT OR IGNORE INTO followups (run_id, kind) VALUES (?, ?)");
    for (auto kind : followups_after(*e, ended, conclusion)) {
        ins->reset();
        ins->bind(1, run_id).bind(2, to_string(kind));
        ins->run();
    }
}

/// The event of run `run_id` while it is still open (queued or running); nullopt otherwise.
/// Read before the UPDATE that ends it, in the same transaction: `UPDATE ... RETURNING` would
/// buffer its rows in a temporary table at every run's end.
std::optional<std::string> open_event(Db& db, std::int64_t run_id) {
    Scoped st(db, "SELECT event FROM runs WHERE id = ? AND state IN ('queued','running')");
    st->bind(1, run_id);
    if (!st->step()) return std::nullopt;
    return st->text(0);
}

}  // namespace

CancelOutcome RunsRepo::cancel(std::int64_t run_id, const std::string& reason, SystemTime now_at) {
    const std::string now = rfc3339(now_at);
    const auto event = open_event(m_db, run_id);
    if (!event) {
        Scoped exists(m_db, "SELECT count(*) FROM runs WHERE id = ?");
        exists->bind(1, run_id);
        exists->step();
        return exists->int64(0) ? CancelOutcome::already_finished : CancelOutcome::not_found;
    }
    {
        Scoped st(m_db,
                  "UPDATE runs SET state = 'cancelled', conclusion = 'cancelled', reason = ?, "
                  "finished_at = ? WHERE id = ?");
        st->bind(1, reason).bind(2, now).bind(3, run_id);
        st->run();
    }
    JobsRepo(m_db).cancel_open({run_id}, reason, now_at);
    leave_followups(m_db, run_id, *event, RunState::cancelled, Conclusion::cancelled);
    return CancelOutcome::cancelled;
}

std::optional<RetrySource> RunsRepo::retry_source(std::int64_t run_id) {
    Scoped st(m_db,
              "SELECT event, coalesce(action,''), sha, pr, coalesce(ref,''), "
              "coalesce(base_ref,''), coalesce(base_sha,''), "
              "head_repo, labels, inputs, state FROM runs WHERE id = ?");
    st->bind(1, run_id);
    if (!st->step()) return std::nullopt;
    RetrySource r;
    r.run.event = vocab_column<RunEvent>(*st, 0, "runs.event");
    r.run.action = st->text(1);
    r.run.sha = st->text(2);
    r.run.pr = st->opt_int64(3);
    r.run.ref = st->text(4);
    r.run.base_ref = st->text(5);
    r.run.base_sha = st->text(6);
    r.run.head_repo = st->opt_text(7);
    r.run.labels_json = st->text(8);
    r.run.inputs_json = st->text(9);
    r.state = vocab_column<RunState>(*st, 10, "runs.state");
    return r;
}

bool RunsRepo::store_plan(std::int64_t run_id, const JsonText& selection,
                          const std::vector<PlannedJob>& jobs, const std::string& nothing_reason,
                          SystemTime now_at) {
    const std::string now = rfc3339(now_at);
    {
        Scoped upd(m_db,
                   "UPDATE runs SET selection = ? WHERE id = ? AND state = 'queued' AND selection "
                   "IS NULL");
        upd->bind(1, selection.text()).bind(2, run_id);
        upd->run();
    }
    if (m_db.changes() == 0) return false;
    if (jobs.empty()) {
        // The run is queued (the UPDATE above matched it).
        const auto event = open_event(m_db, run_id);
        Scoped done(m_db,
                    "UPDATE runs SET state = 'completed', conclusion = 'passed', reason = ?, "
                    "finished_at = ? WHERE id = ?");
        done->bind(1, nothing_reason).bind(2, now).bind(3, run_id);
        done->run();
        if (event) leave_followups(m_db, run_id, *event, RunState::completed, Conclusion::passed);
        return true;
    }
    Scoped job(
        m_db,
        "INSERT INTO jobs (run_id, tier, position, state, tests, timeout_ms, created_at, labels) "
        "VALUES (?, ?, ?, 'queued', ?, ?, ?, ?)");
    for (const auto& t : jobs) {
        job->reset();
        job->bind(1, run_id)
            .bind(2, t.tier)
            .bind(3, t.position)
            .bind(4, t.tests_json)
            .bind(5, t.timeout_ms)
            .bind(6, now)
            .bind(7, t.labels_json);
        job->run();
    }
    return true;
}

void RunsRepo::mark_running(std::int64_t run_id) {
    Scoped st(m_db, "UPDATE runs SET state = 'running' WHERE id = ? AND state = 'queued'");
    st->bind(1, run_id);
    st->run();
}

void RunsRepo::complete(std::int64_t run_id, Conclusion conclusion, const std::string& reason,
                        SystemTime now_at) {
    const std::string now = rfc3339(now_at);
    const auto event = open_event(m_db, run_id);
    if (!event) return;
    Scoped st(m_db,
              "UPDATE runs SET state = 'completed', conclusion = ?, reason = ?, finished_at = ? "
              "WHERE id = ?");
    st->bind(1, to_string(conclusion)).bind(2, reason).bind(3, now).bind(4, run_id);
    st->run();
    leave_followups(m_db, run_id, *event, RunState::completed, conclusion);
}

namespace {

#define CRCRD_UNPLANNED_COLUMNS                                                                   \
    "SELECT id, event, sha, pr, coalesce(ref,''), coalesce(base_ref,''), coalesce(base_sha,''), " \
    "inputs "                                                                                     \
    "FROM runs INDEXED BY runs_unplanned WHERE state = 'queued' AND selection IS NULL "

UnplannedRun unplanned_row(const Stmt& st) {
    return UnplannedRun{st.int64(0), vocab_column<RunEvent>(st, 1, "runs.event"),
                        st.text(2),  st.opt_int64(3),
                        st.text(4),  st.text(5),
                        st.text(6),  st.text(7)};
}

Result<std::vector<UnplannedRun>> unplanned_on(Db& reader, int limit) {
    return guarded([&] {
        auto& st = reader.cached(CRCRD_UNPLANNED_COLUMNS "ORDER BY id LIMIT ?");
        st.reset();
        st.bind(1, std::int64_t{limit});
        std::vector<UnplannedRun> out;
        while (st.step()) out.push_back(unplanned_row(st));
        st.reset();  // no read transaction left open between passes
        return out;
    });
}

}  // namespace

std::vector<UnplannedRun> RunsRepo::unplanned_after(std::int64_t after) {
    Scoped st(m_db, CRCRD_UNPLANNED_COLUMNS "AND id > ? ORDER BY id");
    st->bind(1, after);
    std::vector<UnplannedRun> out;
    while (st->step()) out.push_back(unplanned_row(*st));
    return out;
}

#undef CRCRD_UNPLANNED_COLUMNS

std::int64_t RunsRepo::last_id() {
    Scoped st(m_db, "SELECT coalesce(max(id), 0) FROM runs");
    st->step();
    return st->int64(0);
}

UnplannedReader::UnplannedReader(std::filesystem::path db) : m_path(std::move(db)) {}

UnplannedReader::~UnplannedReader() = default;

Result<std::vector<UnplannedRun>> UnplannedReader::next(int limit) {
    if (!m_db) {
        auto opened = open_reader(m_path);
        if (!opened) return opened.error();
        m_db = std::move(*opened);
    }
    auto rows = unplanned_on(*m_db, limit);
    if (!rows) m_db.reset();
    return rows;
}

}  // namespace crcrd::store
