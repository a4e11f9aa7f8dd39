#pragma once
// The gauges behind GET /metrics that are read at scrape time: what is open now (queued and
// running work, slots, statuses not delivered yet, dead letters). The outbox's are counts the
// schema's triggers keep with the rows (a few rows read whatever the backlog); runs, jobs and
// slots are indexed searches of the open rows. None is a scan of the history (the finished
// runs, jobs, deliveries and sent statuses): those are counters kept as events happen
// (store/events.hpp). The builds' count per state is an index-only count of the builds table,
// which keeps one row per build key ever built, failed and evicted ones too (docs/build.md).
// Blocking: call from a worker.

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "crcrd/core/result.hpp"
#include "crcrd/store/events.hpp"
#include "crcrd/store/fwd.hpp"

namespace crcrd::store {

/// What is open now. Label values of each family, in order:
struct ScrapeGauges {
    std::vector<LabelledCount> runs_open;       // state: queued, running
    std::vector<LabelledCount> jobs_open;       // state: queued, leased, running
    std::vector<LabelledCount> slots_by_state;  // state, "drained" for an idle drained slot
    std::vector<LabelledCount> outbox_waiting;  // sink
    std::vector<LabelledCount> outbox_dead;     // sink
    std::vector<LabelledCount>
        outbox_credentials_rejected;  // sink: waiting rows last answered 401 or 403
    // created_at of the first appended (lowest id) outbox row still waiting; rows are appended
    // in time order, so it is the oldest unless the clock stepped back.
    std::optional<std::string> oldest_waiting_created_at;
    std::vector<LabelledCount> builds_by_state;  // state: the builds table's rows per state
    std::int64_t build_cache_bytes = 0;          // size_bytes of the ready builds
};

/// Reads the gauges on `db`. Never writes. A storage code when a read fails.
Result<ScrapeGauges> read_gauges(Db& db);

/// The same on a read-only connection opened for this call; code "storage" when the database
/// cannot be opened.
Result<ScrapeGauges> read_gauges(const std::filesystem::path& db);

}  // namespace crcrd::store
