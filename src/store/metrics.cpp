#include "crcrd/store/metrics.hpp"

#include "crcrd/store/sqlite.hpp"
#include "store/guarded.hpp"

namespace crcrd::store {

namespace {

/// The rows of a GROUP BY query whose first `labels` columns are the labels and whose next
/// column is the count.
std::vector<LabelledCount> counts(Db& db, int labels, const std::string& sql) {
    Scoped st(db, sql);
    std::vector<LabelledCount> out;
    while (st->step()) {
        LabelledCount c;
        for (int i = 0; i < labels; ++i) c.labels.push_back(st->text(i));
        c.value = st->int64(labels);
        out.push_back(std::move(c));
    }
    return out;
}

}  // namespace

Result<ScrapeGauges> read_gauges(Db& db) {
    // No read grows with the backlog or the history. The outbox's gauges are counts its
    // triggers keep (outbox_counts, schema 15: at most a row per sink and delivery state); the
    // oldest waiting row is the first of the waiting ones in outbox_by_delivery, one search.
    // Runs, jobs and slots are counted through an index of their open states, as many steps
    // as open rows. INDEXED BY pins the plans: with statistics saying a state column has few
    // distinct values, SQLite would otherwise prefer scanning the table (tested with ANALYZE
    // in tests/unit/store/events_test.cpp).
    return guarded([&] {
        ScrapeGauges g;
        g.runs_open = counts(db, 1,
                             "SELECT state, count(*) FROM runs INDEXED BY runs_by_state WHERE "
                             "state IN ('queued','running') GROUP BY state");
        g.jobs_open = counts(db, 1,
                             "SELECT state, count(*) FROM jobs INDEXED BY jobs_by_state WHERE "
                             "state IN ('queued','leased','running') GROUP BY state");
        g.slots_by_state = counts(db, 1,
                                  "SELECT CASE WHEN drained AND state = 'idle' THEN 'drained' ELSE "
                                  "state END, count(*) FROM slots GROUP BY 1");
        g.outbox_waiting = counts(db, 1,
                                  "SELECT sink, n FROM outbox_counts WHERE delivery = 'waiting' "
                                  "AND n > 0 ORDER BY sink");
        g.outbox_dead = counts(db, 1,
                               "SELECT sink, n FROM outbox_counts WHERE delivery = 'dead' AND n > "
                               "0 ORDER BY sink");
        g.outbox_credentials_rejected = counts(db, 1,
                                               "SELECT sink, rejected FROM outbox_counts WHERE "
                                               "delivery = 'waiting' AND rejected > 0 ORDER BY "
                                               "sink");
        Scoped st(db,
                  "SELECT created_at FROM outbox INDEXED BY outbox_by_delivery WHERE delivery = "
                  "'waiting' ORDER BY id LIMIT 1");
        if (st->step()) g.oldest_waiting_created_at = st->opt_text(0);
        // One row per build key: counted in the (state, last_used_at) index without reading the
        // table; the ready rows' sizes are the cache's few rows.
        g.builds_by_state = counts(db, 1,
                                   "SELECT state, count(*) FROM builds INDEXED BY builds_by_state "
                                   "GROUP BY state");
        Scoped bytes(db,
                     "SELECT coalesce(sum(size_bytes), 0) FROM builds INDEXED BY builds_by_state "
                     "WHERE state = 'ready'");
        if (bytes->step()) g.build_cache_bytes = bytes->int64(0);
        return g;
    });
}

Result<ScrapeGauges> read_gauges(const std::filesystem::path& path) {
    auto opened = open_reader(path);
    if (!opened) return opened.error();
    return read_gauges(**opened);
}

}  // namespace crcrd::store
