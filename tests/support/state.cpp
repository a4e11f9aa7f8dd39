#include "support/state.hpp"

#include <algorithm>
#include <stdexcept>
#include <type_traits>
#include <variant>

#include "crcrd/store/sqlite.hpp"

namespace crcrd {

using nlohmann::json;

namespace {

using Value = std::variant<std::int64_t, std::string>;

/// " WHERE a = ? AND b IS NOT NULL ..." from a filter's set fields, with the values to bind.
struct Where {
    std::string sql;
    std::vector<Value> values;

    void add(const std::string& condition) {
        sql += sql.empty() ? " WHERE " : " AND ";
        sql += condition;
    }
    template <class T>
    void add(const std::string& condition, const std::optional<T>& value) {
        if (!value) return;
        add(condition);
        if constexpr (std::is_integral_v<T>) {
            values.emplace_back(static_cast<std::int64_t>(*value));
        } else {
            values.emplace_back(*value);
        }
    }
    template <class T>
    void eq(const std::string& column, const std::optional<T>& value) {
        add(column + " = ?", value);
    }
    void is_set(const std::string& column, const std::optional<bool>& set) {
        if (set) add(column + (*set ? " IS NOT NULL" : " IS NULL"));
    }
};

std::unique_ptr<store::Db> open(const TestDaemon& d, bool read_only) {
    auto db = store::Db::open(d.db_path(), store::OpenOptions{read_only, 5000});
    if (!db) throw std::runtime_error(db.error().message);
    return std::move(*db);
}

/// Runs `sql` (with `values` bound in order) on a fresh read-only connection and hands each
/// row to `read`.
template <class Read>
auto query(const TestDaemon& d, const std::string& sql, const std::vector<Value>& values,
           Read read) {
    std::vector<std::invoke_result_t<Read, store::Stmt&>> out;
    auto db = open(d, true);
    auto st = db->prepare(sql);
    int i = 0;
    for (const auto& v : values) {
        ++i;
        std::visit([&](const auto& x) { st.bind(i, x); }, v);
    }
    while (st.step()) out.push_back(read(st));
    return out;
}

std::int64_t count(const TestDaemon& d, const std::string& table, const Where& w) {
    return query(d, "SELECT count(*) FROM " + table + w.sql, w.values,
                 [](store::Stmt& st) { return st.int64(0); })
        .at(0);
}

/// Runs `sql` (with `values` bound) on a fresh writable connection.
void execute(const TestDaemon& d, const std::string& sql, const std::vector<Value>& values = {}) {
    auto db = open(d, false);
    auto st = db->prepare(sql);
    int i = 0;
    for (const auto& v : values) {
        ++i;
        std::visit([&](const auto& x) { st.bind(i, x); }, v);
    }
    st.run();
}

template <class T>
T only(std::vector<T> rows, const std::string& what) {
    if (rows.empty()) throw std::runtime_error("no " + what);
    return std::move(rows.front());
}

json json_or_null(const store::Stmt& st, int col) {
    return st.is_null(col) ? json() : json::parse(st.text(col));
}

// ---- runs

const char* const k_run_columns =
    "SELECT id, event, sha, pr, coalesce(ref, ''), coalesce(base_sha, ''), "
    "coalesce(head_repo, ''), coalesce(delivery_id, ''), state, coalesce(conclusion, ''), "
    "coalesce(reason, ''), selection, coalesce(finished_at, '') FROM runs";

RunRow read_run(store::Stmt& st) {
    RunRow r;
    r.id = st.int64(0);
    r.event = st.text(1);
    r.sha = st.text(2);
    r.pr = st.opt_int64(3);
    r.ref = st.text(4);
    r.base_sha = st.text(5);
    r.head_repo = st.text(6);
    r.delivery_id = st.text(7);
    r.state = st.text(8);
    r.conclusion = st.text(9);
    r.reason = st.text(10);
    r.selection = json_or_null(st, 11);
    r.finished_at = st.text(12);
    return r;
}

Where where(const RunFilter& f) {
    Where w;
    w.eq("id", f.id);
    w.eq("event", f.event);
    w.eq("sha", f.sha);
    w.eq("state", f.state);
    w.eq("conclusion", f.conclusion);
    w.eq("reason", f.reason);
    w.eq("delivery_id", f.delivery_id);
    w.is_set("selection", f.planned);
    return w;
}

// ---- jobs

const char* const k_job_columns =
    "SELECT id, run_id, tier, position, attempt, state, coalesce(conclusion, ''), "
    "coalesce(reason, ''), coalesce(sha, ''), tests, timeout_ms, metadata, evidence, "
    "coalesce(log_path, ''), coalesce(started_at, ''), coalesce(external_id, ''), pgid, "
    "coalesce(slot, ''), coalesce(finished_at, ''), coalesce(build_key, ''), created_at, "
    "base_check IS NOT NULL "
    "FROM jobs";

JobRow read_job(store::Stmt& st) {
    JobRow j;
    j.id = st.int64(0);
    j.run_id = st.int64(1);
    j.tier = st.text(2);
    j.position = st.int64(3);
    j.attempt = st.int64(4);
    j.state = st.text(5);
    j.conclusion = st.text(6);
    j.reason = st.text(7);
    j.sha = st.text(8);
    j.tests = st.text(9);
    j.timeout_ms = st.int64(10);
    j.metadata = json_or_null(st, 11);
    j.evidence = json_or_null(st, 12);
    j.log_path = st.text(13);
    j.started_at = st.text(14);
    j.external_id = st.text(15);
    j.pgid = st.opt_int64(16);
    j.slot = st.text(17);
    j.finished_at = st.text(18);
    j.build_key = st.text(19);
    j.created_at = st.text(20);
    j.base_check = st.int64(21) != 0;
    return j;
}

Where where(const JobFilter& f) {
    Where w;
    w.eq("id", f.id);
    w.eq("run_id", f.run);
    w.eq("tier", f.tier);
    w.eq("attempt", f.attempt);
    w.eq("state", f.state);
    w.eq("conclusion", f.conclusion);
    w.eq("reason", f.reason);
    return w;
}

// ---- outbox

const char* const k_outbox_columns =
    "SELECT id, run_id, sink, context, state, description, delivery, attempts, http_status, "
    "coalesce(last_error, ''), coalesce(next_attempt_at, ''), created_at FROM outbox";

OutboxRow read_outbox(store::Stmt& st) {
    OutboxRow o;
    o.id = st.int64(0);
    o.run_id = st.int64(1);
    o.sink = st.text(2);
    o.context = st.text(3);
    o.state = st.text(4);
    o.description = st.text(5);
    o.delivery = st.text(6);
    o.attempts = st.int64(7);
    o.http_status = st.opt_int64(8);
    o.last_error = st.text(9);
    o.next_attempt_at = st.text(10);
    o.created_at = st.text(11);
    return o;
}

Where where(const OutboxFilter& f) {
    Where w;
    w.eq("id", f.id);
    w.eq("run_id", f.run);
    w.eq("sink", f.sink);
    w.eq("context", f.context);
    w.eq("state", f.state);
    w.eq("delivery", f.delivery);
    w.eq("http_status", f.http_status);
    w.add("attempts >= ?", f.min_attempts);
    return w;
}

// ---- deliveries

Where where(const DeliveryFilter& f) {
    Where w;
    w.eq("delivery_id", f.delivery_id);
    w.eq("crcr_delivery_id", f.crcr_delivery_id);
    w.eq("verdict", f.verdict);
    w.eq("http_status", f.http_status);
    w.is_set("body", f.has_body);
    if (f.has_run) {
        w.add(*f.has_run ? "run_id IN (SELECT id FROM runs)"
                         : "(run_id IS NULL OR run_id NOT IN (SELECT id FROM runs))");
    }
    return w;
}

}  // namespace

// ---- runs

RunRow run_row(const TestDaemon& d, std::int64_t id) {
    return only(run_rows(d, {.id = id}), "run " + std::to_string(id));
}

std::vector<RunRow> run_rows(const TestDaemon& d, const RunFilter& f) {
    const auto w = where(f);
    return query(d, k_run_columns + w.sql + " ORDER BY id", w.values, read_run);
}

std::int64_t count_runs(const TestDaemon& d, const RunFilter& f) {
    return count(d, "runs", where(f));
}

std::string run_state(const TestDaemon& d, std::int64_t id) {
    const auto r = run_row(d, id);
    return r.state + "/" + r.conclusion;
}

std::string run_summary(const TestDaemon& d, std::int64_t id) {
    const auto r = run_row(d, id);
    return r.state + "/" + r.conclusion + ": " + r.reason;
}

// ---- jobs

JobRow job_row(const TestDaemon& d, std::int64_t id) {
    return only(job_rows(d, {.id = id}), "job " + std::to_string(id));
}

std::vector<JobRow> job_rows(const TestDaemon& d, const JobFilter& f) {
    const auto w = where(f);
    return query(d, k_job_columns + w.sql + " ORDER BY run_id, position, attempt, id", w.values,
                 read_job);
}

std::int64_t count_jobs(const TestDaemon& d, const JobFilter& f) {
    return count(d, "jobs", where(f));
}

JobRow first_job(const TestDaemon& d, const JobFilter& f) {
    return only(job_rows(d, f), "job of the filter");
}

JobRow last_job(const TestDaemon& d, const JobFilter& f) {
    const auto w = where(f);
    return only(query(d, k_job_columns + w.sql + " ORDER BY id DESC LIMIT 1", w.values, read_job),
                "job of the filter");
}

std::string jobs_of(const TestDaemon& d, std::int64_t run) {
    std::string out;
    for (const auto& j : job_rows(d, {.run = run})) {
        if (!out.empty()) out += ' ';
        out += j.tier + ":" + j.state + ":" + j.conclusion + ":" + std::to_string(j.attempt);
    }
    return out;
}

// ---- test results

std::vector<TestResultRow> test_result_rows(const TestDaemon& d, const JobFilter& jobs) {
    const auto w = where(jobs);
    return query(d,
                 "SELECT job_id, name, outcome FROM test_results WHERE job_id IN (SELECT id FROM "
                 "jobs" +
                     w.sql + ") ORDER BY job_id, name",
                 w.values, [](store::Stmt& st) {
                     return TestResultRow{st.int64(0), st.text(1), st.text(2)};
                 });
}

std::int64_t count_test_results(const TestDaemon& d, const JobFilter& jobs) {
    Where w = where(jobs);
    w.sql = " WHERE job_id IN (SELECT id FROM jobs" + w.sql + ")";
    return count(d, "test_results", w);
}

std::string test_outcomes(const TestDaemon& d, const JobFilter& jobs) {
    auto rows = test_result_rows(d, jobs);
    std::stable_sort(rows.begin(), rows.end(),
                     [](const auto& a, const auto& b) { return a.name < b.name; });
    std::string out;
    for (const auto& r : rows) {
        if (!out.empty()) out += ' ';
        out += r.name + "=" + r.outcome;
    }
    return out;
}

// ---- slots

namespace {
std::vector<SlotRow> slots_where(const TestDaemon& d, const Where& w) {
    return query(d,
                 "SELECT name, state, drained, last_health FROM slots" + w.sql + " ORDER BY name",
                 w.values, [](store::Stmt& st) {
                     return SlotRow{st.text(0), st.text(1), st.int64(2) != 0, json_or_null(st, 3)};
                 });
}
}  // namespace

SlotRow slot_row(const TestDaemon& d, const std::string& name) {
    Where w;
    w.eq("name", std::optional<std::string>(name));
    return only(slots_where(d, w), "slot " + name);
}

std::vector<SlotRow> slot_rows(const TestDaemon& d) {
    return slots_where(d, Where{});
}

// ---- builds

std::vector<BuildRowT> build_rows(const TestDaemon& d) {
    return query(d,
                 "SELECT id, key, state, upstream_sha, attempts, size_bytes, reason FROM builds "
                 "ORDER BY id",
                 {}, [](store::Stmt& st) {
                     return BuildRowT{st.int64(0), st.text(1),      st.text(2), st.text(3),
                                      st.int64(4), st.opt_int64(5), st.text(6)};
                 });
}

// ---- outbox

OutboxRow outbox_row(const TestDaemon& d, std::int64_t id) {
    return only(outbox_rows(d, {.id = id}), "outbox row " + std::to_string(id));
}

std::vector<OutboxRow> outbox_rows(const TestDaemon& d, const OutboxFilter& f) {
    const auto w = where(f);
    return query(d, k_outbox_columns + w.sql + " ORDER BY id", w.values, read_outbox);
}

std::int64_t count_outbox(const TestDaemon& d, const OutboxFilter& f) {
    return count(d, "outbox", where(f));
}

std::optional<OutboxRow> last_outbox_row(const TestDaemon& d, const OutboxFilter& f) {
    const auto w = where(f);
    auto rows =
        query(d, k_outbox_columns + w.sql + " ORDER BY id DESC LIMIT 1", w.values, read_outbox);
    if (rows.empty()) return std::nullopt;
    return std::move(rows.front());
}

// ---- deliveries

std::vector<DeliveryRow> delivery_rows(const TestDaemon& d, const DeliveryFilter& f) {
    const auto w = where(f);
    return query(d,
                 "SELECT id, coalesce(delivery_id, ''), coalesce(crcr_delivery_id, ''), verdict, "
                 "http_status, coalesce(reason, ''), run_id, body, body_size FROM deliveries" +
                     w.sql + " ORDER BY id",
                 w.values, [](store::Stmt& st) {
                     DeliveryRow r;
                     r.id = st.int64(0);
                     r.delivery_id = st.text(1);
                     r.crcr_delivery_id = st.text(2);
                     r.verdict = st.text(3);
                     r.http_status = st.int64(4);
                     r.reason = st.text(5);
                     r.run_id = st.opt_int64(6);
                     r.body = st.opt_text(7);
                     r.body_size = st.opt_int64(8);
                     return r;
                 });
}

std::int64_t count_deliveries(const TestDaemon& d, const DeliveryFilter& f) {
    return count(d, "deliveries", where(f));
}

// ---- bookkeeping

std::optional<std::string> full_matrix_next(const TestDaemon& d) {
    auto rows = query(d, "SELECT value FROM meta WHERE key = 'full_matrix_next'", {},
                      [](store::Stmt& st) { return st.text(0); });
    if (rows.empty()) return std::nullopt;
    return rows.front();
}

std::int64_t count_meta(const TestDaemon& d) {
    return count(d, "meta", Where{});
}

std::int64_t count_selection_misses(const TestDaemon& d) {
    return count(d, "selection_misses", Where{});
}

std::int64_t count_followups(const TestDaemon& d, const std::string& kind) {
    Where w;
    w.eq("kind", std::optional<std::string>(kind));
    return count(d, "followups", w);
}

std::int64_t count_recovery_passes(const TestDaemon& d) {
    return count(d, "recovery_passes", Where{});
}

// ---- arranging a state

void set_full_matrix_next(const TestDaemon& d, std::int64_t epoch_seconds) {
    execute(d, "UPDATE meta SET value = ? WHERE key = 'full_matrix_next'",
            {std::to_string(epoch_seconds)});
}

void fail_job_outcome_writes(const TestDaemon& d, bool fail) {
    // The trigger aborts the update that stores a job's outcome (its metadata) while the flag
    // table has a row.
    auto db = open(d, false);
    db->exec(
        "CREATE TABLE IF NOT EXISTS test_block (x);"
        "CREATE TRIGGER IF NOT EXISTS test_block_outcomes BEFORE UPDATE OF metadata ON jobs "
        "WHEN (SELECT count(*) FROM test_block) > 0 "
        "BEGIN SELECT RAISE(ABORT, 'test: writes fail'); END;"
        "DELETE FROM test_block;");
    if (fail) db->exec("INSERT INTO test_block VALUES (1);");
}

void lapse_slot_lease(const TestDaemon& d, const std::string& name) {
    execute(d,
            "UPDATE slots SET state = 'busy', lease_expires_at = '2000-01-01T00:00:00.000Z' "
            "WHERE name = ?",
            {name});
}

void forget_external_ids(const TestDaemon& d) {
    execute(d, "UPDATE jobs SET external_id = NULL");
}

void delete_deliveries(const TestDaemon& d, const std::string& verdict) {
    execute(d, "DELETE FROM deliveries WHERE verdict = ?", {verdict});
}

void move_run_days(const TestDaemon& d, std::int64_t run, int days) {
    const std::string shift = "-" + std::to_string(days) + " days";
    auto moved = [](const char* column) {
        return std::string(column) + " = strftime('%Y-%m-%dT%H:%M:%fZ', " + column + ", ?)";
    };
    execute(
        d, "UPDATE runs SET " + moved("created_at") + ", " + moved("finished_at") + " WHERE id = ?",
        {shift, shift, run});
    execute(d,
            "UPDATE jobs SET " + moved("created_at") + ", " + moved("started_at") + ", " +
                moved("finished_at") + " WHERE run_id = ?",
            {shift, shift, shift, run});
}

void insert_generated_runs(const TestDaemon& d, int n) {
    execute(d,
            "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?) "
            "INSERT INTO runs (event, sha, pr, state, conclusion, reason, created_at, finished_at) "
            "SELECT 'pull_request', printf('%040x', i), i, 'completed', CASE WHEN i % 7 = 0 THEN "
            "'regression' ELSE 'passed' END, "
            "'generated', printf('2026-11-%02dT10:00:00Z', 1 + i % 28), "
            "printf('2026-11-%02dT10:05:00Z', 1 + i % 28) FROM n",
            {std::int64_t{n}});
}

std::int64_t insert_run(const TestDaemon& d, const SeedRun& run) {
    auto db = open(d, false);
    auto st = db->prepare(
        "INSERT INTO runs (event, sha, ref, state, conclusion, created_at) "
        "VALUES (?, ?, ?, ?, ?, ?)");
    st.bind(1, run.event)
        .bind(2, run.sha)
        .bind(3, run.ref)
        .bind(4, run.state)
        .bind(5, run.conclusion)
        .bind(6, run.created_at);
    st.run();
    return db->last_insert_rowid();
}

std::int64_t insert_selection_miss(const TestDaemon& d, const SeedSelectionMiss& miss) {
    auto db = open(d, false);
    auto st = db->prepare(
        "INSERT INTO selection_misses (run_id, previous_run_id, tier, test, commits, created_at) "
        "VALUES (?, ?, ?, ?, ?, ?)");
    st.bind(1, miss.run_id)
        .bind(2, miss.previous_run_id)
        .bind(3, miss.tier)
        .bind(4, miss.test)
        .bind(5, miss.commits)
        .bind(6, miss.created_at);
    st.run();
    return db->last_insert_rowid();
}

struct DatabaseWriteLock::Connection {
    std::unique_ptr<store::Db> db;
};

DatabaseWriteLock::DatabaseWriteLock(const TestDaemon& d)
    : m_conn(std::make_unique<Connection>(Connection{open(d, false)})) {
    m_conn->db->exec("BEGIN EXCLUSIVE");
}

DatabaseWriteLock::~DatabaseWriteLock() {
    try {
        release();
    } catch (...) {
    }
}

void DatabaseWriteLock::release() {
    if (!m_conn) return;
    m_conn->db->exec("ROLLBACK");
    m_conn.reset();
}

}  // namespace crcrd
