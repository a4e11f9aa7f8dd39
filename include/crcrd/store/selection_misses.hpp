#pragma once
// The selection-miss audit's tables (docs/verdicts.md): what the audit of a
// scheduled run reads (its failed tests, the scheduled run before it and that run's passes, the
// PR and push runs of the commits in between), the misses it records, and the admin API's list
// of them. Reads open a read-only connection of their own; `record_selection_misses` runs
// inside a writer item. The admin API's list is AdminReads::selection_misses
// (store/admin_reads.hpp), implemented beside these in selection_misses.cpp.

#include <cstdint>
#include <filesystem>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "crcrd/core/result.hpp"
#include "crcrd/core/time.hpp"
#include "crcrd/core/vocab.hpp"
#include "crcrd/store/fwd.hpp"

namespace crcrd::store {

/// A test in a tier.
struct TierTest {
    std::string tier, test;
    auto operator<=>(const TierTest&) const = default;
};

/// The scheduled run an audit compares with.
struct PreviousScheduled {
    std::int64_t id = 0;
    std::string sha;
};

/// What the audit of a scheduled run needs from the database, read from one snapshot.
struct AuditInputs {
    bool found = false;  // false: there is no run with that id
    RunEvent event = RunEvent::schedule;
    std::string sha, state;
    std::optional<std::string> ref;
    /// The failed tests of each tier whose final (highest) attempt ended `regression`.
    std::vector<TierTest> failed;
    /// The newest earlier completed `schedule` run of the same ref; unset when there is none.
    std::optional<PreviousScheduled> previous;
    /// Those of `failed` that passed (or were flaky) in the same tier's final attempt of
    /// `previous`.
    std::set<TierTest> passed_before;
};

/// Reads the audit's inputs for run `run_id` on a read-only connection of the database at
/// `db`. A storage code when it cannot be read.
Result<AuditInputs> read_audit_inputs(const std::filesystem::path& db, std::int64_t run_id);

/// A commit between two scheduled runs, as the runs that could have tested it know it.
struct CommitKey {
    std::string sha;
    std::optional<std::int64_t> pr;  // the PR it was merged from, when its message names one
};

/// The runs of one commit: `push` runs on its SHA and `pull_request` runs of its PR.
struct CommitRuns {
    std::vector<std::int64_t> run_ids;  // ascending
    std::set<std::string> tiers;        // the tiers those runs have a job for (any state)
};

/// For each of `commits`, in order, its runs (see CommitRuns), read from one snapshot on a
/// read-only connection of the database at `db`.
Result<std::vector<CommitRuns>> read_commit_runs(const std::filesystem::path& db,
                                                 const std::vector<CommitKey>& commits);

/// A selection miss to record.
struct NewSelectionMiss {
    std::int64_t run_id = 0, previous_run_id = 0;
    std::string tier, test;
    std::string commits_json;
};

/// Records `misses`, each unless (run_id, test) is recorded already, inside the caller's writer
/// item; returns how many were new. Throws SqlError.
std::int64_t record_selection_misses(Db& db, const std::vector<NewSelectionMiss>& misses,
                                     SystemTime now);

}  // namespace crcrd::store
