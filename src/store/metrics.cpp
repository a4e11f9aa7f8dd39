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

Result<MetricsCounts> read_metrics(const std::filesystem::path& path) {
    auto opened = open_reader(path);
    if (!opened) return opened.error();
    auto& db = **opened;
    return guarded([&] {
        MetricsCounts m;
        m.deliveries_by_verdict = counts(db, 1, "SELECT verdict, count(*) FROM deliveries GROUP BY verdict");
        m.runs_by_state_class =
            counts(db, 2, "SELECT state, coalesce(conclusion, ''), count(*) FROM runs GROUP BY 1, 2");
        m.jobs_by_state = counts(db, 1, "SELECT state, count(*) FROM jobs GROUP BY state");
        m.attempts_by_class =
            counts(db, 1, "SELECT conclusion, count(*) FROM jobs WHERE state = 'completed' GROUP BY conclusion");
        m.slots_by_state = counts(
            db, 1,
            "SELECT CASE WHEN drained AND state = 'idle' THEN 'drained' ELSE state END, count(*) FROM slots GROUP BY 1");
        m.outbox_by_sink_delivery = counts(db, 2, "SELECT sink, delivery, count(*) FROM outbox GROUP BY sink, delivery");
        m.outbox_credentials_rejected = counts(
            db, 1,
            "SELECT sink, count(*) FROM outbox WHERE delivery = 'waiting' AND http_status IN (401, 403) GROUP BY sink");
        Scoped st(db, "SELECT min(created_at) FROM outbox WHERE delivery = 'waiting'");
        if (st->step()) m.oldest_waiting_created_at = st->opt_text(0);
        Scoped misses(db, "SELECT count(*) FROM selection_misses");
        if (misses->step()) m.selection_misses = misses->int64(0);
        return m;
    });
}

}  // namespace crcrd::store
