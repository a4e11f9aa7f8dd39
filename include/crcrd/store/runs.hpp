#pragma once
// The `runs` table's state changes after a run is queued (queueing itself is
// store/deliveries.hpp's insert_run). Writer-side functions run inside a writer item (a failure
// fails the item); `UnplannedReader` reads on a connection of its own.

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "crcrd/core/result.hpp"
#include "crcrd/core/time.hpp"
#include "crcrd/core/vocab.hpp"
#include "crcrd/store/deliveries.hpp"
#include "crcrd/store/fwd.hpp"
#include "crcrd/store/json_text.hpp"

namespace crcrd::store {

enum class CancelOutcome { cancelled, already_finished, not_found };

/// A finished run to be run again: its request as queued, and its state.
struct RetrySource {
    NewRun run;  // event, action, sha, pr, refs, head_repo, labels, inputs ("" when NULL)
    RunState state = RunState::completed;
};

/// A queued run without a selection yet, as the planner needs it.
struct UnplannedRun {
    std::int64_t id = 0;
    RunEvent event = RunEvent::pull_request;
    std::string sha;
    std::optional<std::int64_t> pr;
    std::string ref, base_ref, base_sha;  // "" when NULL
    std::string inputs_json;
};

/// One tier of a plan, as a queued job.
struct PlannedJob {
    std::string tier;
    std::int64_t position = 0;
    std::string tests_json;
    std::int64_t timeout_ms = 0;
    std::string labels_json;
};

class RunsRepo {
  public:
    explicit RunsRepo(Db& db) noexcept : m_db(db) {}

    /// Cancels run `run_id` and its open jobs with `reason`, if it is still queued or running.
    CancelOutcome cancel(std::int64_t run_id, const std::string& reason, SystemTime now);
    /// The run as it was queued, for a retry; nullopt when there is no such run.
    std::optional<RetrySource> retry_source(std::int64_t run_id);
    /// Stores a queued run's selection and its jobs; with no jobs the run completes `passed`
    /// with `nothing_reason`. False (nothing written) when the run is no longer queued or was
    /// planned already.
    bool store_plan(std::int64_t run_id, const JsonText& selection,
                    const std::vector<PlannedJob>& jobs, const std::string& nothing_reason,
                    SystemTime now);
    /// A queued run starts running (its first job was leased).
    void mark_running(std::int64_t run_id);
    /// The queued runs without a selection whose id is above `after`, oldest first (in the
    /// writer's transaction: the runs it stored since it saw `after`).
    std::vector<UnplannedRun> unplanned_after(std::int64_t after);
    /// The highest run id (0 without runs).
    std::int64_t last_id();
    /// A queued or running run completes with `conclusion` and `reason`.
    void complete(std::int64_t run_id, Conclusion conclusion, const std::string& reason,
                  SystemTime now);

  private:
    Db& m_db;
};

/// The planner's reads of queued runs without a selection: on a read-only connection of the
/// database at `db`, kept between passes so that a wake-up (one per commit that stores runs)
/// does not open the database again; after an error the next call opens it anew.
class UnplannedReader {
  public:
    explicit UnplannedReader(std::filesystem::path db);
    ~UnplannedReader();
    UnplannedReader(const UnplannedReader&) = delete;
    UnplannedReader& operator=(const UnplannedReader&) = delete;
    /// Up to `limit` of them, oldest first.
    Result<std::vector<UnplannedRun>> next(int limit);

  private:
    std::filesystem::path m_path;
    std::unique_ptr<Db> m_db;
};

}  // namespace crcrd::store
