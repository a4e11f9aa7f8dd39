// The trends' numbers from the daily roll-ups (src/admin/trends.hpp): percentiles from the
// wait buckets, pass rates, utilisation against the day's wall time, and the device time a run
// of every tier would have spent.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "admin/trends.hpp"
#include "crcrd/core/time.hpp"

namespace crcrd::admin {
namespace {

using nlohmann::json;

TEST(Trends, ADaysNumbersComeFromItsRollupsAlone) {
    const auto now = *parse_rfc3339("2026-03-02T06:00:00Z");
    const auto days = last_days(now, 2);
    ASSERT_EQ(days, (std::vector<std::string>{"2026-03-01", "2026-03-02"}));
    store::DailyRollups r;
    r.runs = {{"2026-03-01", "push", "passed", 3},
              {"2026-03-01", "bisect", "regression", 1},
              {"2026-03-02", "pull_request", "regression", 2}};
    // import: 2 passed + 1 flaky + 1 regression + 1 cancelled on the 1st; 1 hour on card-0.
    r.jobs = {{"2026-03-01", "import", "card-0", "passed", 0, 2, 1'200'000, 2, 4000},
              {"2026-03-01", "import", "card-0", "flaky", 0, 1, 1'200'000, 1, 1000},
              {"2026-03-01", "import", "card-0", "regression", 0, 1, 1'200'000, 1, 1000},
              {"2026-03-01", "import", "", "cancelled", 0, 1, 0, 0, 0},
              {"2026-03-01", "build", "", "passed", -1, 1, 600'000, 0, 0},
              {"2026-03-02", "smoke", "card-0", "passed", 1, 2, 1'800'000, 2, 0}};
    // Waits: 3 below 2 s (bucket 2), 1 below 10 s (bucket 4).
    r.waits = {{"2026-03-01", 2, 3}, {"2026-03-01", 4, 1}};
    const json t = trends_json(r, days, {"import", "smoke"}, {"card-0", "card-1"}, now);
    const json& d1 = t["days"][0];
    const json& d2 = t["days"][1];
    EXPECT_EQ(d1["runs"], json({{"passed", 3}, {"regression", 1}}));
    EXPECT_EQ(d1["runs_total"], 4);
    EXPECT_DOUBLE_EQ(d1["pass_rate"]["import"].get<double>(), 3.0 / 4.0);
    EXPECT_EQ(d1["pass_rate"]["smoke"], nullptr);
    EXPECT_EQ(d1["waited"], 4);
    EXPECT_EQ(d1["wait_p50_ms"], 2000);     // the bucket of the 2nd of 4 waits: below 2 s
    EXPECT_EQ(d1["wait_p95_ms"], 10000);    // the 4th: below 10 s
    EXPECT_EQ(d1["device_ms"], 3'600'000);  // the build stage is no tier's device time
    EXPECT_DOUBLE_EQ(d1["utilisation"]["card-0"].get<double>(), 3'600'000.0 / 86'400'000.0);
    EXPECT_EQ(d1["utilisation"]["card-1"], 0.0);
    // A run of every tier: import's mean attempt (1 h over 4 attempts on a slot) + smoke's
    // (30 min over 2), times the runs that are not bisect runs.
    EXPECT_EQ(d1["full_ms"], 3 * (900'000 + 900'000));
    EXPECT_EQ(d2["full_ms"], 2 * (900'000 + 900'000));
    // Today's wall time is the six hours so far.
    EXPECT_DOUBLE_EQ(d2["utilisation"]["card-0"].get<double>(), 1'800'000.0 / 21'600'000.0);
    EXPECT_EQ(d2["wait_p50_ms"], nullptr);
}

}  // namespace
}  // namespace crcrd::admin
