#include "crcrd/store/events.hpp"

#include <array>
#include <utility>

#include "crcrd/store/sqlite.hpp"

namespace crcrd::store {

namespace {

// Times are stored as RFC 3339 UTC with milliseconds; julianday() reads them.
#define CRCRD_SECONDS(later, earlier) \
    "round((julianday(" later ") - julianday(" earlier ")) * 86400.0, 3)"

/// Each trigger with the table it needs (the builds ones also need jobs.build_key, which came
/// with the builds table: schema 18).
const std::array<std::pair<const char*, const char*>, 13> k_triggers = {{
    {"deliveries",
     "CREATE TEMP TRIGGER IF NOT EXISTS crcrd_ev_delivery AFTER INSERT ON main.deliveries "
     "BEGIN INSERT INTO crcrd_events (kind, a) VALUES ('delivery', NEW.verdict); END"},
    {"runs",
     "CREATE TEMP TRIGGER IF NOT EXISTS crcrd_ev_run_created AFTER INSERT ON main.runs "
     "BEGIN INSERT INTO crcrd_events (kind, a) VALUES ('run_created', NEW.event); END"},
    {"runs",
     "CREATE TEMP TRIGGER IF NOT EXISTS crcrd_ev_run_finished AFTER UPDATE OF state ON main.runs "
     "WHEN NEW.state IN ('completed','cancelled') AND OLD.state IN ('queued','running') "
     "BEGIN INSERT INTO crcrd_events (kind, a, b) VALUES ('run_finished', NEW.event, "
     "coalesce(NEW.conclusion, '')); END"},
    {"jobs",
     "CREATE TEMP TRIGGER IF NOT EXISTS crcrd_ev_job_started AFTER UPDATE OF state ON main.jobs "
     "WHEN NEW.state = 'running' AND OLD.state = 'leased' AND NEW.started_at IS NOT NULL "
     "BEGIN INSERT INTO crcrd_events (kind, a, seconds) VALUES ('job_started', "
     "NEW.tier, " CRCRD_SECONDS("NEW.started_at", "NEW.created_at") "); END"},
    {"jobs",
     "CREATE TEMP TRIGGER IF NOT EXISTS crcrd_ev_job_finished AFTER UPDATE OF state ON main.jobs "
     "WHEN NEW.state IN ('completed','cancelled') "
     "AND (OLD.state = 'queued' OR OLD.state = 'leased' OR OLD.state = 'running') "
     "BEGIN INSERT INTO crcrd_events (kind, a, b, seconds) VALUES ('job_finished', NEW.tier, "
     "coalesce(NEW.conclusion, ''), CASE WHEN NEW.started_at IS NOT NULL AND NEW.finished_at IS "
     "NOT NULL THEN " CRCRD_SECONDS("NEW.finished_at", "NEW.started_at") " END); END"},
    {"outbox",
     "CREATE TEMP TRIGGER IF NOT EXISTS crcrd_ev_status AFTER UPDATE OF delivery ON main.outbox "
     "WHEN NEW.delivery <> OLD.delivery AND NEW.delivery <> 'waiting' "
     "BEGIN INSERT INTO crcrd_events (kind, a, b) VALUES ('status_settled', NEW.sink, "
     "NEW.delivery); END"},
    {"selection_misses",
     "CREATE TEMP TRIGGER IF NOT EXISTS crcrd_ev_selection_miss AFTER INSERT ON "
     "main.selection_misses "
     "BEGIN INSERT INTO crcrd_events (kind) VALUES ('selection_miss'); END"},
    {"followups",
     "CREATE TEMP TRIGGER IF NOT EXISTS crcrd_ev_followup AFTER INSERT ON main.followups "
     "BEGIN INSERT INTO crcrd_events (kind, a) VALUES ('followup', NEW.kind); END"},
    // A build job that passes straight from queued never built: its key was ready.
    {"builds",
     "CREATE TEMP TRIGGER IF NOT EXISTS crcrd_ev_build_hit AFTER UPDATE OF state ON main.jobs "
     "WHEN NEW.build_key IS NOT NULL AND OLD.state = 'queued' AND NEW.state = 'completed' "
     "AND NEW.conclusion = 'passed' "
     "BEGIN INSERT INTO crcrd_events (kind, a) VALUES ('build_cache', 'hit'); END"},
    // A key is built: new, or again after it failed or went (not a retry or a takeover, which
    // go on with the same build).
    {"builds",
     "CREATE TEMP TRIGGER IF NOT EXISTS crcrd_ev_build_new AFTER INSERT ON main.builds "
     "BEGIN INSERT INTO crcrd_events (kind, a) VALUES ('build_cache', 'miss'); END"},
    {"builds",
     "CREATE TEMP TRIGGER IF NOT EXISTS crcrd_ev_build_again AFTER UPDATE OF state ON "
     "main.builds WHEN NEW.state = 'queued' AND OLD.state IN ('failed','evicted') "
     "BEGIN INSERT INTO crcrd_events (kind, a) VALUES ('build_cache', 'miss'); END"},
    {"builds",
     "CREATE TEMP TRIGGER IF NOT EXISTS crcrd_ev_build_evicted AFTER UPDATE OF state ON "
     "main.builds WHEN NEW.state = 'evicted' AND OLD.state = 'ready' "
     "BEGIN INSERT INTO crcrd_events (kind) VALUES ('build_evicted'); END"},
    {"builds",
     "CREATE TEMP TRIGGER IF NOT EXISTS crcrd_ev_build_finished AFTER UPDATE OF state ON "
     "main.builds WHEN NEW.state IN ('ready','failed') AND OLD.state IN ('queued','running') "
     "BEGIN INSERT INTO crcrd_events (kind, a, seconds) VALUES ('build_finished', NEW.state, "
     "CASE WHEN NEW.started_at IS NOT NULL AND NEW.finished_at IS NOT NULL THEN " CRCRD_SECONDS(
         "NEW.finished_at", "NEW.started_at") " END); END"},
}};

#undef CRCRD_SECONDS

std::optional<EventKind> kind_of(const std::string& s) {
    static const std::array<std::pair<const char*, EventKind>, 11> k = {{
        {"delivery", EventKind::delivery},
        {"run_created", EventKind::run_created},
        {"run_finished", EventKind::run_finished},
        {"job_started", EventKind::job_started},
        {"job_finished", EventKind::job_finished},
        {"status_settled", EventKind::status_settled},
        {"selection_miss", EventKind::selection_miss},
        {"followup", EventKind::followup},
        {"build_cache", EventKind::build_cache},
        {"build_evicted", EventKind::build_evicted},
        {"build_finished", EventKind::build_finished},
    }};
    for (const auto& [name, kind] : k) {
        if (s == name) return kind;
    }
    return std::nullopt;
}

std::vector<LabelledCount> counts(Db& db, int labels, const std::string& sql) {
    Scoped st(db, sql);
    std::vector<LabelledCount> out;
    while (st->step()) {
        LabelledCount c;
        for (int i = 0; i < labels; ++i)
            c.labels.push_back(st->is_null(i) ? std::string() : st->text(i));
        c.value = st->int64(labels);
        out.push_back(std::move(c));
    }
    return out;
}

}  // namespace

void install_event_triggers(Db& db) {
    db.exec(
        "CREATE TEMP TABLE IF NOT EXISTS crcrd_events (kind TEXT NOT NULL, a TEXT, b TEXT, seconds "
        "REAL)");
    Scoped exists(db, "SELECT 1 FROM main.sqlite_schema WHERE type = 'table' AND name = ?");
    for (const auto& [table, sql] : k_triggers) {
        exists->bind(1, table);
        const bool present = exists->step();
        exists->reset();
        if (present) db.exec(sql);
    }
}

std::vector<Event> take_events(Db& db) {
    std::vector<Event> out;
    {
        Scoped table(
            db, "SELECT 1 FROM temp.sqlite_schema WHERE type = 'table' AND name = 'crcrd_events'");
        if (!table->step()) return out;
    }
    // Read, then emptied at once (DELETE ... RETURNING would copy the rows into a temporary
    // table first; an unconditional DELETE clears the table in one step).
    Scoped st(db, "SELECT kind, a, b, seconds FROM temp.crcrd_events");
    bool any = false;
    while (st->step()) {
        any = true;
        auto kind = kind_of(st->text(0));
        if (!kind) continue;
        Event e;
        e.kind = *kind;
        if (!st->is_null(1)) e.a = st->text(1);
        if (!st->is_null(2)) e.b = st->text(2);
        if (!st->is_null(3)) e.seconds = st->real(3);
        out.push_back(std::move(e));
    }
    if (any) {
        Scoped clear(db, "DELETE FROM temp.crcrd_events");
        clear->run();
    }
    return out;
}

EventTotals read_event_totals(Db& db) {
    EventTotals t;
    t.deliveries = counts(db, 1, "SELECT verdict, count(*) FROM deliveries GROUP BY verdict");
    t.runs_created = counts(db, 1, "SELECT event, count(*) FROM runs GROUP BY event");
    // Each GROUP BY in the order of an index (migration 21): no sort of a whole table.
    t.runs_finished = counts(db, 2,
                             "SELECT event, coalesce(conclusion, ''), count(*) FROM runs "
                             "INDEXED BY runs_ended WHERE state IN ('completed','cancelled') GROUP "
                             "BY event, conclusion");
    t.jobs_finished = counts(
        db, 2,
        "SELECT tier, coalesce(conclusion, ''), count(*) FROM jobs "
        "INDEXED BY jobs_ended WHERE state IN ('completed','cancelled') GROUP BY tier, conclusion");
    t.statuses = counts(db, 2,
                        "SELECT sink, delivery, count(*) FROM outbox INDEXED BY outbox_done WHERE "
                        "delivery <> 'waiting' "
                        "GROUP BY sink, delivery");
    Scoped misses(db, "SELECT count(*) FROM selection_misses");
    if (misses->step()) t.selection_misses = misses->int64(0);
    return t;
}

}  // namespace crcrd::store
