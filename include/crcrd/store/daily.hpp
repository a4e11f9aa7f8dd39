#pragma once
// The daily roll-ups of the trends (docs/dashboard.md, "Trends"; migration 20): per UTC day,
// the runs that ended by event and class, the attempts that ended by tier, slot and class with
// their time on the slot and their wait for it, and those waits in buckets. Triggers keep them
// in the commit that ends a run or a job; rebuild_daily() makes them again from the history.

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "crcrd/store/fwd.hpp"

namespace crcrd::store {

/// The upper bounds (exclusive) of the wait buckets, in milliseconds: bucket i holds the waits
/// below k_wait_bounds_ms[i] (and at or above the bound before); the last bucket, index
/// k_wait_bounds_ms.size(), holds the longer ones. Migration 20's trigger has the same numbers.
inline constexpr std::array<std::int64_t, 17> k_wait_bounds_ms = {
    500,    1000,   2000,    5000,    10000,   20000,   30000,    60000,   120000,
    300000, 600000, 1200000, 1800000, 3600000, 7200000, 14400000, 28800000};

struct DailyRunRow {
    std::string day, event, conclusion;
    std::int64_t runs = 0;
};

struct DailyJobRow {
    std::string day, tier, slot, conclusion;  // slot "" for an attempt without one
    std::int64_t position = 0, jobs = 0, busy_ms = 0, waited = 0, wait_ms = 0;
};

struct DailyWaitRow {
    std::string day;
    std::int64_t bucket = 0, n = 0;
};

/// The roll-ups of the days from `since` ("YYYY-MM-DD", inclusive) on, by day.
struct DailyRollups {
    std::vector<DailyRunRow> runs;
    std::vector<DailyJobRow> jobs;
    std::vector<DailyWaitRow> waits;
};

/// Empties the roll-ups and fills them from every run and job that ended, the same counts the
/// triggers keep. On the writer's connection, inside a writer item (or a migration); throws
/// SqlError. Returns how many runs and jobs it counted.
std::int64_t rebuild_daily(Db& db);

}  // namespace crcrd::store
