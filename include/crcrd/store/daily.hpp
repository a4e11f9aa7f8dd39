#pragma once
// The daily roll-ups of the trends (docs/dashboard.md, "Trends"; migration 22), per UTC day:
// the runs that ended by event and class; the tiers of the runs that completed, by event, run
// class, tier and the class of the tier's last attempt, with every attempt's time on a slot;
// each slot's running time per tier, split at midnights; the waits for a slot by tier, in
// buckets. Triggers keep them in the commit that ends a run or a job; rebuild_daily() makes
// them again from the history through the same views the triggers read.

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "crcrd/store/fwd.hpp"

namespace crcrd::store {

/// The upper bounds (exclusive) of the wait buckets, in milliseconds: bucket i holds the waits
/// below k_wait_bounds_ms[i] (and at or above the bound before); the last bucket, index
/// k_wait_bounds_ms.size(), holds the longer ones. Migration 22's table wait_bounds has the
/// same numbers (a unit test compares them).
inline constexpr std::array<std::int64_t, 17> k_wait_bounds_ms = {
    500,    1000,   2000,    5000,    10000,   20000,   30000,    60000,   120000,
    300000, 600000, 1200000, 1800000, 3600000, 7200000, 14400000, 28800000};

struct DailyRunRow {
    std::string day, event, conclusion;
    std::int64_t runs = 0;
};

/// The tiers of the runs that completed on `day`: `runs` of them whose last attempt of `tier`
/// ended `conclusion`, and the time all their attempts of it ran on a slot.
struct DailyTierRow {
    std::string day, event, run_class, tier, conclusion;
    std::int64_t position = 0, runs = 0, busy_ms = 0;
};

/// The time attempts of `tier` ran on `slot` within `day`.
struct DailyBusyRow {
    std::string day, slot, tier;
    std::int64_t position = 0, busy_ms = 0;
};

/// `n` waits of attempts of `tier` that ended on `day` in `bucket`, `wait_ms` in all.
struct DailyWaitRow {
    std::string day, tier;
    std::int64_t position = 0, bucket = 0, n = 0, wait_ms = 0;
};

/// The roll-ups of the days from `since` ("YYYY-MM-DD", inclusive) on, by day.
struct DailyRollups {
    std::vector<DailyRunRow> runs;
    std::vector<DailyTierRow> tiers;
    std::vector<DailyBusyRow> busy;
    std::vector<DailyWaitRow> waits;
};

/// Empties the roll-ups and fills them from every run and job that ended, the same rows the
/// triggers keep (both read migration 22's views). On the writer's connection, inside a writer
/// item (or a migration); throws SqlError. Returns how many groups it wrote.
std::int64_t rebuild_daily(Db& db);

}  // namespace crcrd::store
