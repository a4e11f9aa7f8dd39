#pragma once
// The rows of trunk health (docs/dashboard.md): a ref's push and scheduled runs with the last
// attempt of each of their tiers, one tier's outcomes back in time, and a test's results across
// runs. Read by AdminReads (trunk_reads.cpp) on the admin worker's read-only connection; what
// they mean (red since when, a test's flaky rate) is decided in the admin module.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "crcrd/store/bisections.hpp"

namespace crcrd::store {

/// A page of the grid: the newest push and scheduled runs of `ref` (a full ref name,
/// "refs/heads/main") with an id below `before_id`, at most `limit`.
struct TrunkQuery {
    std::string ref;
    int limit = 50;
    std::optional<std::int64_t> before_id;
};

/// A run of the grid.
struct TrunkRun {
    std::int64_t id = 0;
    std::string event, sha, state;
    std::optional<std::string> conclusion;
    std::string created_at;
    std::optional<std::string> finished_at;
};

/// The last attempt of a tier (the build stage too: tier "build", position -1) of a run; base
/// checks are not a tier's attempts here.
struct TrunkCell {
    std::int64_t run_id = 0, job_id = 0;
    std::string tier;
    std::int64_t position = 0, attempt = 0;
    std::string state;
    std::optional<std::string> conclusion, reason;
};

/// What the grid shows of a page: its runs (newest first), the last attempt of each of their
/// tiers, and the bisections of those runs' regressions or whose culprit is one of their SHAs.
struct TrunkPage {
    std::vector<TrunkRun> runs;
    std::vector<TrunkCell> cells;
    std::vector<Bisection> bisections;
};

/// One tier's last attempt in one run of a ref, for the streak back from the newest run.
struct TierOutcome {
    std::int64_t run_id = 0;
    std::string sha, state;
    std::optional<std::string> conclusion;
};

/// One result of a test (a row of test_results) with its attempt and run.
struct TestHistoryRow {
    std::int64_t job_id = 0, run_id = 0, attempt = 0;
    std::string tier, outcome;
    std::optional<std::string> job_conclusion;  // the attempt's class
    double duration_s = 0;
    std::optional<std::string> message;
    std::string sha, event;
    std::optional<std::int64_t> pr;
    std::string at;  // the attempt's end (its run's creation when it has none)
};

/// A test that had a flaky result lately: its newest flaky result's job and how many of the
/// flaky results read it had.
struct FlakyName {
    std::string name;
    std::int64_t last_job_id = 0, flaky_results = 0;
};

/// A test's result in one run and tier (its newest attempt's), from the flaky list's roll-up.
struct FlakyRun {
    std::int64_t run_id = 0, job_id = 0;
    std::string tier, outcome;
};

/// A flaky test's newest runs (newest attempt first) and when its newest flaky one among them
/// ended (its run's creation when it has not).
struct FlakyWindow {
    std::vector<FlakyRun> runs;
    std::optional<std::string> last_flaky_at;
};

}  // namespace crcrd::store
