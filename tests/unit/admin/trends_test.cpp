// The trends' numbers from the daily roll-ups (src/admin/trends.hpp): percentiles from the
// wait buckets of the tiers (not the build stage's), pass rates and device time over the
// selected runs, utilisation against the day's wall time, and the device time a run of every
// tier would have spent, from tier means over a fixed number of days.
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
    EXPECT_EQ(rollups_since(days), "2026-01-31");  // 29 days before the first: the means
    store::DailyRollups r;
    r.runs = {{"2026-03-01", "push", "passed", 3},
              {"2026-03-01", "bisect", "regression", 1},
              {"2026-03-01", "push", "cancelled", 1},
              {"2026-03-01", "manual", "passed", 1},
              {"2026-03-02", "pull_request", "regression", 2}};
    // The 1st: import's last attempt passed in 2 push runs, was flaky in 1 (its time counts
    // both attempts); a bisect run's and a manual run's are not the selected runs'.
    r.tiers = {
        {"2026-03-01", "push", "passed", "import", "passed", 0, 2, 1'200'000},
        {"2026-03-01", "push", "flaky", "import", "flaky", 0, 1, 1'200'000},
        {"2026-03-01", "push", "passed", "smoke", "passed", 1, 2, 600'000},
        {"2026-03-01", "push", "flaky", "smoke", "cancelled", 1, 1, 0},
        {"2026-03-01", "push", "passed", "build", "passed", -1, 3, 900'000},
        {"2026-03-01", "bisect", "regression", "import", "regression", 0, 1, 500'000},
        {"2026-03-01", "manual", "passed", "import", "passed", 0, 1, 500'000},
        {"2026-03-02", "pull_request", "regression", "import", "regression", 0, 2, 2'400'000}};
    r.busy = {{"2026-03-01", "card-0", "import", 0, 3'000'000},
              {"2026-03-01", "card-0", "smoke", 1, 600'000},
              {"2026-03-01", "build-0", "build", -1, 900'000},
              {"2026-03-02", "card-0", "import", 0, 1'800'000}};
    // Waits: 3 below 2 s (bucket 2), 1 below 10 s (bucket 4); the build stage's are no card's.
    r.waits = {{"2026-03-01", "import", 0, 2, 3, 3000},
               {"2026-03-01", "smoke", 1, 4, 1, 6000},
               {"2026-03-01", "build", -1, 16, 5, 100'000'000}};
    const json t = trends_json(r, days, {"import", "smoke"}, {"card-0", "card-1"}, now);
    const json& d1 = t["days"][0];
    const json& d2 = t["days"][1];
    EXPECT_EQ(d1["runs"], json({{"passed", 4}, {"regression", 1}, {"cancelled", 1}}));
    EXPECT_EQ(d1["runs_total"], 6);
    EXPECT_EQ(d1["runs_selected"], 3);  // the push runs that were not cancelled
    EXPECT_DOUBLE_EQ(d1["pass_rate"]["import"].get<double>(), 1.0);
    EXPECT_DOUBLE_EQ(d1["pass_rate"]["smoke"].get<double>(), 1.0);  // its cancelled one left out
    EXPECT_EQ(d2["pass_rate"]["import"], 0.0);
    EXPECT_EQ(d2["pass_rate"]["smoke"], nullptr);
    EXPECT_EQ(d1["waited"], 4);
    EXPECT_EQ(d1["wait_ms"], 9000);
    EXPECT_EQ(d1["wait_p50_ms"], 2000);  // the bucket of the 2nd of 4 waits: below 2 s
    EXPECT_EQ(d1["wait_p50_longer"], false);
    EXPECT_EQ(d1["wait_p95_ms"], 10000);         // the 4th: below 10 s
    EXPECT_EQ(d1["device_ms"], 3'600'000);       // every attempt on a card; not the build stage
    EXPECT_EQ(d1["runs_device_ms"], 3'000'000);  // the selected runs' tiers
    EXPECT_DOUBLE_EQ(d1["utilisation"]["card-0"].get<double>(), 3'600'000.0 / 86'400'000.0);
    EXPECT_EQ(d1["utilisation"]["card-1"], 0.0);
    EXPECT_DOUBLE_EQ(d1["utilisation"]["build-0"].get<double>(), 900'000.0 / 86'400'000.0);
    // A run of every tier: import's mean over the selected runs that ran it (2.4 M over 3) +
    // smoke's (0.6 M over 2), times the selected runs.
    EXPECT_EQ(d1["tier_mean_ms"], json({{"import", 800'000}, {"smoke", 300'000}}));
    EXPECT_EQ(d1["full_ms"], 3 * (800'000 + 300'000));
    // The 2nd: the means over the days up to it (import 4.8 M over 5 runs).
    EXPECT_EQ(d2["tier_mean_ms"], json({{"import", 960'000}, {"smoke", 300'000}}));
    EXPECT_EQ(d2["full_ms"], 2 * (960'000 + 300'000));
    // Today's wall time is the six hours so far.
    EXPECT_DOUBLE_EQ(d2["utilisation"]["card-0"].get<double>(), 1'800'000.0 / 21'600'000.0);
    EXPECT_EQ(d2["wait_p50_ms"], nullptr);
    EXPECT_EQ(d2["waited"], 0);
}

TEST(Trends, ADaysNumbersDoNotDependOnHowManyDaysAreAskedFor) {
    const auto now = *parse_rfc3339("2026-03-10T06:00:00Z");
    store::DailyRollups r;
    for (int d = 1; d <= 10; ++d) {
        const std::string day = "2026-03-" + std::string(d < 10 ? "0" : "") + std::to_string(d);
        r.runs.push_back({day, "push", "passed", 1});
        r.tiers.push_back({day, "push", "passed", "import", "passed", 0, 1, 60'000 * d});
    }
    const json one = trends_json(r, last_days(now, 1), {"import"}, {}, now)["days"].back();
    const json ten = trends_json(r, last_days(now, 10), {"import"}, {}, now)["days"].back();
    EXPECT_EQ(one, ten);
    EXPECT_EQ(one["tier_mean_ms"]["import"], 330'000);  // 5.5 min: the mean of the 10 days
}

TEST(Trends, AWaitBeyondTheLastBucketIsALowerBoundAndUtilisationIsAtMostAll) {
    const auto now = *parse_rfc3339("2026-03-02T06:00:00Z");
    store::DailyRollups r;
    r.waits = {{"2026-03-01", "import", 0, 17, 3, 3 * 30'000'000}};
    r.busy = {{"2026-03-01", "card-0", "import", 0, 90'000'000}};
    const json d = trends_json(r, last_days(now, 2), {"import"}, {"card-0"}, now)["days"][0];
    EXPECT_EQ(d["wait_p50_ms"], 28'800'000);
    EXPECT_EQ(d["wait_p50_longer"], true);
    EXPECT_EQ(d["wait_p95_longer"], true);
    EXPECT_EQ(d["utilisation"]["card-0"], 1.0);
}

}  // namespace
}  // namespace crcrd::admin
