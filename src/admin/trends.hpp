#pragma once
// Admin-internal: the trends' numbers (docs/dashboard.md, "Trends") from the daily roll-ups,
// a pure function: GET /api/v1/stats/daily answers them, /ui/trends draws them.

#include <nlohmann/json.hpp>

#include <chrono>
#include <string>
#include <vector>

#include "crcrd/store/daily.hpp"

namespace crcrd::admin {

/// The days a tier's mean time per run is taken over: the day's and the ones before.
inline constexpr int k_mean_days = 30;

/// The `days` UTC days that end with the day of `now`, oldest first ("YYYY-MM-DD").
std::vector<std::string> last_days(std::chrono::system_clock::time_point now, int days);

/// The first day whose roll-ups trends_json() needs for `days` (k_mean_days - 1 before the
/// first: the tiers' means); "" for no days.
std::string rollups_since(const std::vector<std::string>& days);

/// Per day of `days` (the roll-ups `r` read from rollups_since(days)), as docs/dashboard.md
/// ("Trends") defines them: the runs that ended by class (every event); the selected runs
/// (push, schedule, pull_request runs that completed, not cancelled) and, over them, each tier's
/// pass rate (its last attempt passed or flaky; null without any) and their device time; each
/// of `tiers`' mean time per run over the k_mean_days days that end with the day and what a
/// run of every one of `tiers` would have spent (selected runs times the sum of the means);
/// the waits for a card (tiers only, not the build stage): how many, their sum and the 50th and
/// 95th percentile (the bound of the bucket that holds it, `_longer` when beyond the last);
/// every attempt's device time within the day, and each slot's utilisation (its running time
/// within the day over the day's wall time, up to `now` for today, at most 1). `slots` are
/// listed even without attempts.
nlohmann::json trends_json(const store::DailyRollups& r, const std::vector<std::string>& days,
                           const std::vector<std::string>& tiers,
                           const std::vector<std::string>& slots,
                           std::chrono::system_clock::time_point now);

}  // namespace crcrd::admin
