#include "crcrd/store/builds.hpp"

#include <nlohmann/json.hpp>

#include "crcrd/store/sqlite.hpp"
#include "store/vocab_column.hpp"

namespace crcrd::store {

namespace {

// The columns BuildRow reads, in its order; `b` is the builds row.
constexpr const char* k_columns =
    "b.id, b.key, b.state, b.upstream_sha, b.backend_sha, b.job_id, b.attempts, b.size_bytes, "
    "b.reason, b.created_at, b.started_at, b.finished_at, b.last_used_at, "
    "(SELECT count(DISTINCT j.run_id) FROM jobs j WHERE j.build_key = b.key), "
    "(SELECT count(*) FROM jobs j JOIN jobs t ON t.run_id = j.run_id WHERE j.build_key = b.key "
    " AND t.state IN ('queued','leased','running')), b.conclusion";

BuildRow read_row(const Stmt& st) {
    BuildRow r;
    r.id = st.int64(0);
    r.key = st.text(1);
    r.state = vocab_column<BuildState>(st, 2, "builds.state");
    r.upstream_sha = st.text(3);
    r.backend_sha = st.text(4);
    r.job_id = st.opt_int64(5);
    r.attempts = st.int64(6);
    r.size_bytes = st.opt_int64(7);
    r.reason = st.text(8);
    r.created_at = st.text(9);
    r.started_at = st.opt_text(10);
    r.finished_at = st.opt_text(11);
    r.last_used_at = st.opt_text(12);
    r.runs = st.int64(13);
    r.open_jobs = st.int64(14);
    r.conclusion = opt_vocab_column<Conclusion>(st, 15, "builds.conclusion");
    return r;
}

std::vector<BuildRow> read_rows(Scoped& st) {
    std::vector<BuildRow> out;
    while (st->step()) out.push_back(read_row(*st));
    return out;
}

}  // namespace

BuildClaim BuildsRepo::claim(const std::string& key, const std::string& upstream_sha,
                             const std::string& backend_sha, std::int64_t job_id, SystemTime now) {
    {
        // Once per job: a job waiting on another's build asks again at every dispatcher pass.
        Scoped set(m_db, "UPDATE jobs SET build_key = ?1 WHERE id = ?2 AND build_key IS NOT ?1");
        set->bind(1, key).bind(2, job_id);
        set->run();
        if (m_db.changes() > 0) {
            // Its status may now say which build it waits for.
            Scoped touch(m_db,
                         "INSERT OR IGNORE INTO status_dirty (run_id) SELECT run_id FROM jobs "
                         "WHERE id = ?");
            touch->bind(1, job_id);
            touch->run();
        }
    }
    std::optional<BuildState> state;
    std::optional<std::int64_t> builder;
    bool builder_open = false;
    {
        Scoped st(m_db,
                  "SELECT b.state, b.job_id, (SELECT j.state IN ('queued','leased','running') "
                  "FROM jobs j WHERE j.id = b.job_id) FROM builds b WHERE b.key = ?");
        st->bind(1, key);
        if (st->step()) {
            state = vocab_column<BuildState>(*st, 0, "builds.state");
            builder = st->opt_int64(1);
            builder_open = st->opt_int64(2).value_or(0) != 0;
        }
    }
    if (state == BuildState::ready) {
        Scoped used(m_db, "UPDATE builds SET last_used_at = ? WHERE key = ?");
        used->bind(1, rfc3339(now)).bind(2, key);
        used->run();
        return BuildClaim::ready;
    }
    if ((state == BuildState::queued || state == BuildState::running) && builder != job_id &&
        builder_open)
        return BuildClaim::wait;
    if (!state) {
        Scoped add(m_db,
                   "INSERT INTO builds (key, state, upstream_sha, backend_sha, job_id, created_at) "
                   "VALUES (?, 'queued', ?, ?, ?, ?)");
        add->bind(1, key)
            .bind(2, upstream_sha)
            .bind(3, backend_sha)
            .bind(4, job_id)
            .bind(5, rfc3339(now));
        add->run();
        return BuildClaim::build;
    }
    if (builder != job_id) {
        // Failed, evicted, or its builder ended without a result: this job builds it again.
        Scoped take(
            m_db,
            "UPDATE builds SET state = 'queued', job_id = ?, reason = '', conclusion = NULL, "
            "finished_at = NULL, size_bytes = NULL WHERE key = ?");
        take->bind(1, job_id).bind(2, key);
        take->run();
    }
    return BuildClaim::build;
}

void BuildsRepo::mark_running(const std::string& key, std::int64_t job_id, SystemTime now) {
    Scoped st(m_db,
              "UPDATE builds SET state = 'running', job_id = ?, attempts = attempts + 1, "
              "started_at = ? WHERE key = ?");
    st->bind(1, job_id).bind(2, rfc3339(now)).bind(3, key);
    st->run();
}

void BuildsRepo::mark_ready(const std::string& key, std::int64_t size_bytes, SystemTime now) {
    Scoped st(m_db,
              "UPDATE builds SET state = 'ready', size_bytes = ?, reason = '', finished_at = ?, "
              "last_used_at = ? WHERE key = ?");
    st->bind(1, size_bytes).bind(2, rfc3339(now)).bind(3, rfc3339(now)).bind(4, key);
    st->run();
}

void BuildsRepo::mark_failed(const std::string& key, const std::string& reason, SystemTime now,
                             std::optional<Conclusion> conclusion) {
    Scoped st(m_db,
              "UPDATE builds SET state = 'failed', reason = ?, finished_at = ?, conclusion = ? "
              "WHERE key = ?");
    st->bind(1, reason)
        .bind(2, rfc3339(now))
        .bind(3, conclusion ? std::optional<std::string>(std::string(to_string(*conclusion)))
                            : std::nullopt)
        .bind(4, key);
    st->run();
}

std::optional<std::string> BuildsRepo::base_of_run(std::int64_t run_id) {
    Scoped st(m_db,
              "SELECT CASE WHEN r.pr IS NOT NULL THEN r.base_sha "
              "WHEN r.event IN ('push','schedule') THEN (SELECT p.sha FROM runs p WHERE p.ref = "
              "r.ref AND p.id < r.id AND p.sha <> r.sha AND p.event IN ('push','schedule') ORDER "
              "BY p.id DESC LIMIT 1) END FROM runs r WHERE r.id = ?");
    st->bind(1, run_id);
    if (!st->step()) return std::nullopt;
    return st->opt_text(0);
}

void BuildsRepo::mark_evicted(const std::string& key, const std::string& reason, SystemTime now) {
    Scoped st(
        m_db,
        "UPDATE builds SET state = 'evicted', reason = ?, finished_at = coalesce(finished_at, "
        "?) WHERE key = ? AND state = 'ready'");
    st->bind(1, reason).bind(2, rfc3339(now)).bind(3, key);
    st->run();
}

std::vector<std::int64_t> BuildsRepo::waiting_jobs(const std::string& key, std::int64_t except) {
    Scoped st(m_db,
              "SELECT id FROM jobs WHERE build_key = ? AND state = 'queued' AND id <> ? AND "
              "base_check IS NULL ORDER BY id");
    st->bind(1, key).bind(2, except);
    std::vector<std::int64_t> out;
    while (st->step()) out.push_back(st->int64(0));
    return out;
}

std::optional<std::string> BuildsRepo::key_of_run(std::int64_t run_id) {
    Scoped st(m_db,
              "SELECT build_key FROM jobs WHERE run_id = ? AND build_key IS NOT NULL AND state = "
              "'completed' AND conclusion = 'passed' ORDER BY id DESC LIMIT 1");
    st->bind(1, run_id);
    if (!st->step()) return std::nullopt;
    return st->text(0);
}

std::optional<std::string> BuildsRepo::key_of_job(std::int64_t job_id) {
    Scoped st(m_db, "SELECT build_key FROM jobs WHERE id = ?");
    st->bind(1, job_id);
    if (!st->step()) return std::nullopt;
    return st->opt_text(0);
}

std::vector<BuildRow> BuildsRepo::evictable() {
    Scoped st(m_db, std::string("SELECT ") + k_columns +
                        " FROM builds b WHERE b.state = 'ready' AND NOT EXISTS (SELECT 1 FROM jobs "
                        "j JOIN jobs t ON t.run_id = j.run_id WHERE j.build_key = b.key AND "
                        "t.state IN ('queued','leased','running')) ORDER BY b.last_used_at, b.id");
    return read_rows(st);
}

std::int64_t BuildsRepo::ready_bytes() {
    Scoped st(m_db, "SELECT coalesce(sum(size_bytes), 0) FROM builds WHERE state = 'ready'");
    st->step();
    return st->int64(0);
}

std::vector<BuildRow> BuildsRepo::ready() {
    Scoped st(m_db, std::string("SELECT ") + k_columns +
                        " FROM builds b WHERE b.state = 'ready' ORDER BY b.id");
    return read_rows(st);
}

std::vector<BuildRow> BuildsRepo::ready_of_backend(const std::string& backend_sha,
                                                   const std::string& key, int limit) {
    Scoped st(m_db, std::string("SELECT ") + k_columns +
                        " FROM builds b WHERE b.state = 'ready' AND b.backend_sha = ? AND b.key <> "
                        "? ORDER BY b.finished_at DESC, b.id DESC LIMIT ?");
    st->bind(1, backend_sha).bind(2, key).bind(3, std::int64_t{limit});
    return read_rows(st);
}

void BuildsRepo::requeue_running(const std::vector<std::string>& except) {
    Scoped st(m_db,
              "UPDATE builds SET state = 'queued' WHERE state = 'running' AND key NOT IN (SELECT "
              "value FROM json_each(?))");
    st->bind(1, nlohmann::json(except).dump());
    st->run();
}

std::optional<BuildRow> BuildsRepo::get(std::int64_t id) {
    Scoped st(m_db, std::string("SELECT ") + k_columns + " FROM builds b WHERE b.id = ?");
    st->bind(1, id);
    if (!st->step()) return std::nullopt;
    return read_row(*st);
}

std::optional<BuildRow> BuildsRepo::get(const std::string& key) {
    Scoped st(m_db, std::string("SELECT ") + k_columns + " FROM builds b WHERE b.key = ?");
    st->bind(1, key);
    if (!st->step()) return std::nullopt;
    return read_row(*st);
}

std::vector<BuildRow> BuildsRepo::list(const BuildsQuery& q) {
    Scoped st(m_db, std::string("SELECT ") + k_columns +
                        " FROM builds b WHERE (?1 IS NULL OR b.state = ?1) AND (?2 IS NULL OR "
                        "b.upstream_sha = ?2) AND (?3 IS NULL OR b.id < ?3) ORDER BY b.id DESC "
                        "LIMIT ?4");
    st->bind(1,
             q.state ? std::optional<std::string>(std::string(to_string(*q.state))) : std::nullopt)
        .bind(2, q.upstream_sha)
        .bind(3, q.before)
        .bind(4, q.limit);
    return read_rows(st);
}

}  // namespace crcrd::store
