#pragma once
// The read side of the admin API: runs, jobs and deliveries as the JSON shapes of
// docs/operations.md. Blocking SQLite reads on a read-only connection: call from a worker.

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "crcrd/core/result.hpp"
#include "crcrd/store/admin_reads.hpp"

namespace crcrd::admin {

/// One page of a newest-first list.
using Page = store::Page;

/// The filters of GET /api/v1/runs.
using RunFilter = store::RunQuery;

struct DeliveryFilter {
    std::optional<std::string> verdict;
    Page page;
};

struct OutboxFilter {
    std::optional<std::string> state, sink;  // state: waiting | sent | dead | coalesced
    std::optional<std::int64_t> run_id;
    Page page;
};

/// {"items":[run...],"next_cursor":"..."|null}, newest first.
Result<nlohmann::json> list_runs(const std::filesystem::path& db, const RunFilter& f);
/// A run with its selection, jobs and statuses; code "not_found" when there is none.
Result<nlohmann::json> get_run(const std::filesystem::path& db, std::int64_t id);
/// {"items":[delivery...],"next_cursor":...}, newest first.
Result<nlohmann::json> list_deliveries(const std::filesystem::path& db, const DeliveryFilter& f);

/// Outbox rows (statuses, file lines, callbacks), newest first.
Result<nlohmann::json> list_outbox(const std::filesystem::path& db, const OutboxFilter& f);
/// `lanes` (each lane's state as the sender reports it, with "sink") completed with what the
/// database says of each: "waiting", "dead", "oldest_final_waiting_at".
Result<nlohmann::json> with_backlog(const std::filesystem::path& db, nlohmann::json lanes);
/// A job as in a run's `jobs`; "not_found" when there is none.
Result<nlohmann::json> get_job(const std::filesystem::path& db, std::int64_t id);
/// Where a job's log is; "not_found" without a job or a log.
Result<std::string> job_log_path(const std::filesystem::path& db, std::int64_t id);
/// A job's test results, newest first, optionally of one outcome.
Result<nlohmann::json> list_tests(const std::filesystem::path& db, std::int64_t job,
                                  const std::optional<std::string>& outcome, const Page& page);
/// The slots as stored: name, state (drained shown for an idle drained slot), job, last health.
Result<nlohmann::json> list_slots(const std::filesystem::path& db);

/// The filters of GET /api/v1/selection-misses.
using SelectionMissFilter = store::SelectionMissQuery;

/// {"items":[{id, run_id, previous_run_id, tier, test, commits, created_at}],"next_cursor":...},
/// newest first (docs/verdicts.md).
Result<nlohmann::json> list_selection_misses(const std::filesystem::path& db,
                                             const SelectionMissFilter& f);

/// Opaque cursors: the id to continue below.
std::string make_cursor(std::int64_t last_id);
std::optional<std::int64_t> parse_cursor(const std::string& cursor);

/// The newest missed-delivery recovery passes (docs/ingest.md) and the watermark:
/// {"items": [{id, started_at, finished_at, since, listed, failed, redelivered, errors}],
///  "watermark": "...|null"}.
Result<nlohmann::json> list_recovery(const std::filesystem::path& path, int limit = 20);

}  // namespace crcrd::admin
