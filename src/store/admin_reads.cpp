#include "crcrd/store/admin_reads.hpp"

#include <memory>
#include <variant>

#include "crcrd/store/sqlite.hpp"
#include "store/guarded.hpp"
#include "store/meta_rows.hpp"

namespace crcrd::store {

namespace {

constexpr const char* k_run_columns =
    "id, event, sha, pr, ref, base_sha, delivery_id, state, conclusion, reason, created_at, "
    "finished_at, selection, "
    "base_ref, head_repo";

RunRow run_row(const Stmt& st) {
    RunRow r;
    r.id = st.int64(0);
    r.event = st.text(1);
    r.sha = st.text(2);
    r.pr = st.opt_int64(3);
    r.ref = st.opt_text(4);
    r.base_sha = st.opt_text(5);
    r.delivery_id = st.opt_text(6);
    r.state = st.text(7);
    r.conclusion = st.opt_text(8);
    r.reason = st.opt_text(9);
    r.created_at = st.text(10);
    r.finished_at = st.opt_text(11);
    r.selection_json = st.opt_text(12);
    r.base_ref = st.opt_text(13);
    r.head_repo = st.opt_text(14);
    return r;
}

constexpr const char* k_job_columns =
    "id, run_id, tier, state, conclusion, reason, attempt, slot, started_at, finished_at, "
    "exit_status, tests, metadata, "
    "timeout_ms, counts, evidence";

JobRow job_row(const Stmt& st) {
    JobRow j;
    j.id = st.int64(0);
    j.run_id = st.int64(1);
    j.tier = st.text(2);
    j.state = st.text(3);
    j.conclusion = st.opt_text(4);
    j.reason = st.opt_text(5);
    j.attempt = st.int64(6);
    j.slot = st.opt_text(7);
    j.started_at = st.opt_text(8);
    j.finished_at = st.opt_text(9);
    j.exit_status = st.opt_int64(10);
    j.tests_json = st.text(11);
    j.metadata_json = st.opt_text(12);
    j.timeout_ms = st.int64(13);
    j.counts_json = st.opt_text(14);
    j.evidence_json = st.opt_text(15);
    return j;
}

constexpr const char* k_outbox_columns =
    "id, sink, run_id, sha, context, state, description, target_url, delivery, attempts, "
    "next_attempt_at, last_error, "
    "http_status, created_at, sent_at";

OutboxRow outbox_row(const Stmt& st) {
    OutboxRow o;
    o.id = st.int64(0);
    o.sink = st.text(1);
    o.run_id = st.int64(2);
    o.sha = st.text(3);
    o.context = st.text(4);
    o.state = st.text(5);
    o.description = st.text(6);
    o.target_url = st.opt_text(7);
    o.delivery = st.text(8);
    o.attempts = st.int64(9);
    o.next_attempt_at = st.opt_text(10);
    o.last_error = st.opt_text(11);
    o.http_status = st.opt_int64(12);
    o.created_at = st.text(13);
    o.sent_at = st.opt_text(14);
    return o;
}

/// A WHERE clause built from optional filters, with its values in order.
struct Where {
    std::string sql;
    std::vector<std::variant<std::string, std::int64_t>> args;

    template <class T>
    void add(const std::optional<T>& v, const char* clause) {
        if (!v) return;
        sql += std::string(" AND ") + clause;
        args.emplace_back(*v);
    }
    void bind(Stmt& st, int limit) const {
        int i = 1;
        for (const auto& a : args) {
            if (const auto* s = std::get_if<std::string>(&a))
                st.bind(i++, *s);
            else
                st.bind(i++, std::get<std::int64_t>(a));
        }
        st.bind(i, std::int64_t{limit});
    }
};

}  // namespace

Result<AdminReads> AdminReads::for_this_thread(const std::filesystem::path& path) {
    thread_local std::unique_ptr<Db> db;
    thread_local std::filesystem::path opened;
    if (!db || opened != path) {
        auto d = open_reader(path);
        if (!d) return d.error();
        db = std::move(*d);
        opened = path;
    }
    return AdminReads(*db);
}

Result<std::vector<RunRow>> AdminReads::runs(const RunQuery& f) {
    return guarded([&] {
        Where w;
        w.add(f.state, "state = ?");
        w.add(f.conclusion, "conclusion = ?");
        w.add(f.sha, "sha = ?");
        w.add(f.event, "event = ?");
        w.add(f.pr, "pr = ?");
        w.add(f.since, "created_at >= ?");
        w.add(f.until, "created_at < ?");
        w.add(f.page.before_id, "id < ?");
        Scoped st(*m_db, std::string("SELECT ") + k_run_columns + " FROM runs WHERE 1=1" + w.sql +
                             " ORDER BY id DESC LIMIT ?");
        w.bind(*st, f.page.limit);
        std::vector<RunRow> rows;
        while (st->step()) rows.push_back(run_row(*st));
        return rows;
    });
}

Result<std::optional<RunDetail>> AdminReads::run_detail(std::int64_t id) {
    return guarded([&]() -> std::optional<RunDetail> {
        // `run` has returned its row and is not reset before the end of this scope: its read
        // transaction stays open, so the jobs and statuses come from the run's snapshot.
        Scoped run(*m_db, std::string("SELECT ") + k_run_columns + " FROM runs WHERE id = ?");
        run->bind(1, id);
        if (!run->step()) return std::nullopt;
        RunDetail d;
        d.run = run_row(*run);
        Scoped jobs(*m_db, std::string("SELECT ") + k_job_columns +
                               " FROM jobs WHERE run_id = ? ORDER BY position, attempt");
        jobs->bind(1, id);
        while (jobs->step()) d.jobs.push_back(job_row(*jobs));
        // The newest status of each context and sink, in the order they were first reported.
        Scoped statuses(
            *m_db,
            std::string("SELECT ") + k_outbox_columns +
                " FROM outbox o WHERE run_id = ? AND sink <> 'callback' AND id = "
                "(SELECT max(id) FROM outbox n WHERE n.run_id = o.run_id AND n.sink = o.sink "
                "AND n.context = o.context) ORDER BY sink, "
                "(SELECT min(id) FROM outbox f WHERE f.run_id = o.run_id AND f.sink = o.sink "
                "AND f.context = o.context)");
        statuses->bind(1, id);
        while (statuses->step()) d.statuses.push_back(outbox_row(*statuses));
        BisectionsRepo bisections(*m_db);
        d.bisection = bisections.of_bad_run(id);
        if (d.bisection) d.bisect_runs = bisections.runs(d.bisection->id);
        if (auto of = bisections.bisection_of(id)) d.bisecting = bisections.load(*of);
        return d;
    });
}

Result<std::vector<DeliveryRow>> AdminReads::deliveries(const std::optional<std::string>& verdict,
                                                        const Page& p) {
    return guarded([&] {
        Where w;
        w.add(verdict, "verdict = ?");
        w.add(p.before_id, "id < ?");
        Scoped st(*m_db,
                  "SELECT id, delivery_id, received_at, scheme, event, verdict, http_status, "
                  "reason, run_id, crcr_delivery_id, "
                  "run_ids FROM deliveries WHERE 1=1" +
                      w.sql + " ORDER BY id DESC LIMIT ?");
        w.bind(*st, p.limit);
        std::vector<DeliveryRow> rows;
        while (st->step()) {
            DeliveryRow d;
            d.id = st->int64(0);
            d.delivery_id = st->opt_text(1);
            d.received_at = st->text(2);
            d.scheme = st->opt_text(3);
            d.event = st->opt_text(4);
            d.verdict = st->text(5);
            d.http_status = st->int64(6);
            d.reason = st->opt_text(7);
            d.run_id = st->opt_int64(8);
            d.crcr_delivery_id = st->opt_text(9);
            d.run_ids_json = st->opt_text(10);
            rows.push_back(std::move(d));
        }
        return rows;
    });
}

Result<std::vector<OutboxRow>> AdminReads::outbox(const OutboxQuery& f) {
    return guarded([&] {
        Where w;
        w.add(f.delivery, "delivery = ?");
        w.add(f.sink, "sink = ?");
        w.add(f.run_id, "run_id = ?");
        w.add(f.page.before_id, "id < ?");
        Scoped st(*m_db, std::string("SELECT ") + k_outbox_columns + " FROM outbox WHERE 1=1" +
                             w.sql + " ORDER BY id DESC LIMIT ?");
        w.bind(*st, f.page.limit);
        std::vector<OutboxRow> rows;
        while (st->step()) rows.push_back(outbox_row(*st));
        return rows;
    });
}

Result<LaneBacklog> AdminReads::outbox_backlog(Sink sink) {
    return guarded([&] {
        LaneBacklog b;
        {
            Scoped n(*m_db,
                     "SELECT delivery, n FROM outbox_counts WHERE sink = ? AND delivery IN "
                     "('waiting','dead')");
            n->bind(1, to_string(sink));
            while (n->step()) {
                (n->text(0) == "waiting" ? b.waiting : b.dead) = n->int64(1);
            }
        }
        // A final state: any state but `pending` (a status) or `in_progress` (a callback).
        Scoped oldest(*m_db,
                      "SELECT created_at FROM outbox INDEXED BY outbox_fifo WHERE sink = ? AND "
                      "delivery = 'waiting' AND state NOT IN ('pending','in_progress') ORDER BY "
                      "id LIMIT 1");
        oldest->bind(1, to_string(sink));
        if (oldest->step()) b.oldest_final = oldest->text(0);
        return b;
    });
}

Result<std::optional<JobRow>> AdminReads::job(std::int64_t id) {
    return guarded([&]() -> std::optional<JobRow> {
        Scoped st(*m_db, std::string("SELECT ") + k_job_columns + " FROM jobs WHERE id = ?");
        st->bind(1, id);
        if (!st->step()) return std::nullopt;
        return job_row(*st);
    });
}

Result<JobLog> AdminReads::job_log(std::int64_t id) {
    return guarded([&] {
        Scoped st(*m_db, "SELECT log_path FROM jobs WHERE id = ?");
        st->bind(1, id);
        JobLog log;
        if (!st->step()) return log;
        log.job_found = true;
        log.path = st->opt_text(0);
        return log;
    });
}

Result<std::vector<TestResultRow>> AdminReads::tests(std::int64_t job_id,
                                                     const std::optional<std::string>& outcome,
                                                     const Page& p) {
    return guarded([&] {
        Where w;
        w.add(std::optional<std::int64_t>(job_id), "job_id = ?");
        w.add(outcome, "outcome = ?");
        w.add(p.before_id, "rowid < ?");
        Scoped st(*m_db,
                  "SELECT rowid, name, outcome, duration_s, message FROM test_results WHERE 1=1" +
                      w.sql + " ORDER BY rowid DESC LIMIT ?");
        w.bind(*st, p.limit);
        std::vector<TestResultRow> rows;
        while (st->step()) {
            rows.push_back({st->int64(0), st->text(1), st->text(2), st->real(3), st->opt_text(4)});
        }
        return rows;
    });
}

Result<std::vector<SlotRow>> AdminReads::slots() {
    return guarded([&] {
        Scoped st(*m_db,
                  "SELECT name, state, drained, job_id, last_health FROM slots ORDER BY name");
        std::vector<SlotRow> rows;
        while (st->step()) {
            rows.push_back(
                {st->text(0), st->text(1), st->int64(2) != 0, st->opt_int64(3), st->opt_text(4)});
        }
        return rows;
    });
}

Result<std::vector<RecoveryPassItem>> AdminReads::recovery_passes(int limit) {
    return guarded([&] {
        Scoped st(*m_db,
                  "SELECT id, started_at, finished_at, since, listed, failed, redelivered, errors "
                  "FROM recovery_passes "
                  "ORDER BY id DESC LIMIT ?");
        st->bind(1, std::int64_t{limit});
        std::vector<RecoveryPassItem> rows;
        while (st->step()) {
            rows.push_back({st->int64(0), st->text(1), st->text(2), st->text(3), st->int64(4),
                            st->int64(5), st->int64(6), st->text(7)});
        }
        return rows;
    });
}

Result<std::optional<std::string>> AdminReads::recovery_watermark() {
    return guarded([&] { return read_recovery_watermark(*m_db); });
}

}  // namespace crcrd::store
