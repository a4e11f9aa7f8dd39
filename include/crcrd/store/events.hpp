#pragma once
// What the writer's commits changed, as events for counters (GET /metrics, docs/operations.md).
// Temporary triggers on the writer's connection append one row per event to a temporary table
// in the same transaction as the change, so an event rolled back with its savepoint or its
// batch is never seen; the writer takes them before each commit and hands them on once the
// commit is durable. Nothing is added to the schema on disk.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "crcrd/store/fwd.hpp"

namespace crcrd::store {

enum class EventKind {
    delivery,      // a=verdict
    run_created,   // a=event
    run_finished,  // a=event, b=conclusion ("" when none); completed or cancelled
    job_started,   // a=tier; seconds=queue wait (created_at → started_at)
    job_finished,  // a=tier, b=conclusion; seconds=started_at → finished_at (none: never started)
    status_settled,  // a=sink, b=sent|dead|coalesced: an outbox row reached that state. One row
                     // may reach several: coalesced while in flight and then sent, dead and
                     // sent after a retry; the start-up totals count each row's last state only.
    selection_miss,  // a selection_misses row
    followup,        // a=kind: a followups row, work a finished run left for the planner
    build_cache,     // a=hit: a build job passed without building (its key was ready, from the
                     // cache or once the job it waited on published it); a=miss: a key had to
                     // be built (a new key, or one that had failed or been evicted)
    build_evicted,   // a ready build became evicted (the cache's limit, an operator, its folder
                     // found gone)
    build_finished,  // a=ready|failed: a build ended; seconds=its last attempt's start → its end
};

struct Event {
    EventKind kind = EventKind::delivery;
    std::string a, b;
    std::optional<double> seconds;
};

/// Creates the temporary table and triggers on `db` (the writer's connection), for the tables
/// that exist. Idempotent. Throws SqlError: run it as writer work.
void install_event_triggers(Db& db);

/// Takes (and deletes) every event recorded since the last call, oldest first; none when the
/// triggers were never installed. Throws SqlError.
std::vector<Event> take_events(Db& db);

/// One group of a GROUP BY count: its label values (NULL reads as "") and its count.
struct LabelledCount {
    std::vector<std::string> labels;
    std::int64_t value = 0;
};

/// The totals the counters start from, read once at start-up (a scan of the history, which a
/// scrape never does). Labels as in EventKind. The build events have none: the database keeps
/// no record of each lookup or eviction, so their counters start at 0.
struct EventTotals {
    std::vector<LabelledCount> deliveries;     // verdict
    std::vector<LabelledCount> runs_created;   // event
    std::vector<LabelledCount> runs_finished;  // event, conclusion
    std::vector<LabelledCount> jobs_finished;  // tier, conclusion
    std::vector<LabelledCount> statuses;       // sink, delivery (not waiting)
    std::int64_t selection_misses = 0;
};

/// Reads the totals on `db`. Throws SqlError: run it as writer work, in the same item as
/// install_event_triggers(), so that no commit is counted twice or missed.
EventTotals read_event_totals(Db& db);

}  // namespace crcrd::store
