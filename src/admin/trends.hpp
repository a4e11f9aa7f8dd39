#pragma once
// Admin-internal: the trends' numbers (docs/dashboard.md, "Trends") from the daily roll-ups,
// a pure function: GET /api/v1/stats/daily answers them, /ui/trends draws them.

#include <nlohmann/json.hpp>

#include <chrono>
#include <string>
#include <vector>

#include "crcrd/store/daily.hpp"

namespace crcrd::admin {

/// The `days` UTC days that end with the day of `now`, oldest first ("YYYY-MM-DD").
std::vector<std::string> last_days(std::chrono::system_clock::time_point now, int days);

/// Per day of `days`: runs by class (every event), each tier's pass rate (passed or flaky
/// attempts over the attempts that ended, cancelled ones left out; null without any), the wait
/// for a slot at the 50th and 95th percentile (the upper bound of the bucket that holds it, in
/// ms; null without waits), each slot's utilisation (time leased to attempts over the day's
/// wall time, up to `now` for today), and the device time the tiers spent against what a run
/// of every one of `tiers` would have spent (runs other than bisect runs times the sum of each
/// tier's mean attempt time over the window). `slots` are listed even without attempts.
nlohmann::json trends_json(const store::DailyRollups& r, const std::vector<std::string>& days,
                           const std::vector<std::string>& tiers,
                           const std::vector<std::string>& slots,
                           std::chrono::system_clock::time_point now);

}  // namespace crcrd::admin
