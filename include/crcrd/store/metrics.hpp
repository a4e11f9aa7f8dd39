#pragma once
// The counts behind GET /metrics, read at scrape time. Blocking: call from a worker.

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "crcrd/core/result.hpp"

namespace crcrd::store {

/// One group of a GROUP BY count: its label values (a NULL reads as "") and its count.
struct LabelledCount {
    std::vector<std::string> labels;
    std::int64_t value = 0;
};

/// The store's counts, each family in the order SQLite groups it. The label values of each
/// family are, in order:
struct MetricsCounts {
    std::vector<LabelledCount> deliveries_by_verdict;       // verdict
    std::vector<LabelledCount> runs_by_state_class;         // state, conclusion ("" while none)
    std::vector<LabelledCount> jobs_by_state;               // state
    std::vector<LabelledCount> attempts_by_class;           // conclusion of completed attempts
    std::vector<LabelledCount> slots_by_state;              // state, "drained" for an idle drained slot
    std::vector<LabelledCount> outbox_by_sink_delivery;     // sink, delivery
    std::vector<LabelledCount> outbox_credentials_rejected; // sink: waiting rows last answered 401 or 403
    std::optional<std::string> oldest_waiting_created_at;   // of the outbox rows still waiting
    std::int64_t selection_misses = 0;  // rows of selection_misses (never deleted: a counter)
};

/// Reads every count on a read-only connection opened for this call (each family its own
/// read, so the families need not agree with one another). Never writes. Code "storage" when
/// the database cannot be opened, a storage code when a read fails.
Result<MetricsCounts> read_metrics(const std::filesystem::path& db);

}  // namespace crcrd::store
