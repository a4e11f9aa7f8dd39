// Trunk health's rules as the admin module applies them (src/admin/trunk.hpp): since when a
// tier is red, the grid's rows and columns, a test's results across runs, and the route labels
// of the new paths (a test's name is never a metrics label).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "admin/trunk.hpp"
#include "crcrd/admin/api.hpp"

namespace crcrd::admin {
namespace {

using nlohmann::json;

store::TierOutcome done(std::int64_t run, const char* conclusion) {
    return {run, "sha" + std::to_string(run), "completed", std::string(conclusion)};
}

TEST(RedSince, TheStreakOfRegressionsTheNewestTellingOutcomesStartWith) {
    struct Case {
        const char* name;
        std::vector<store::TierOutcome> outcomes;  // newest first
        std::optional<std::int64_t> since;
        std::int64_t runs;
    };
    const store::TierOutcome running{9, "sha9", "running", std::nullopt};
    const Case cases[] = {
        {"no runs", {}, std::nullopt, 0},
        {"green", {done(3, "passed"), done(2, "regression")}, std::nullopt, 0},
        {"flaky is green", {done(3, "flaky"), done(2, "regression")}, std::nullopt, 0},
        {"one red run", {done(3, "regression"), done(2, "passed")}, 3, 1},
        {"three red runs",
         {done(5, "regression"), done(4, "regression"), done(3, "regression"), done(2, "passed"),
          done(1, "regression")},
         3,
         3},
        {"an infra failure neither breaks nor extends it",
         {done(5, "regression"), done(4, "infra_error"), done(3, "regression"), done(2, "passed")},
         3,
         2},
        {"a newest run still running is skipped",
         {running, done(4, "regression"), done(3, "passed")},
         4,
         1},
        {"device_unavailable on top of green",
         {done(4, "device_unavailable"), done(3, "passed")},
         std::nullopt,
         0},
        {"red back to the oldest run read", {done(2, "regression"), done(1, "regression")}, 1, 2},
    };
    for (const auto& c : cases) {
        auto red = red_since(c.outcomes);
        EXPECT_EQ(red.has_value(), c.since.has_value()) << c.name;
        if (!red || !c.since) continue;
        EXPECT_EQ(red->run_id, *c.since) << c.name;
        EXPECT_EQ(red->sha, "sha" + std::to_string(*c.since)) << c.name;
        EXPECT_EQ(red->runs, c.runs) << c.name;
    }
    EXPECT_FALSE(streak_ends({done(3, "regression"), done(2, "infra_error")}));
    EXPECT_TRUE(streak_ends({done(3, "regression"), done(2, "flaky")}));
    EXPECT_TRUE(streak_ends({done(3, "passed")}));
    EXPECT_FALSE(streak_ends({}));
}

TEST(TrunkGrid, OneRowPerCommitEachTiersCellFromItsNewestRunAndTheBuildStageFirst) {
    store::TrunkPage page;
    const std::string a(40, 'a'), b(40, 'b');
    // Newest first: a scheduled run of b that ran only smoke, a push of b, a push of a.
    page.runs = {{3, "schedule", b, "completed", "passed", "2026-01-03T00:00:00Z", std::nullopt},
                 {2, "push", b, "completed", "regression", "2026-01-02T00:00:00Z", std::nullopt},
                 {1, "push", a, "completed", "passed", "2026-01-01T00:00:00Z", std::nullopt}};
    page.cells = {{3, 30, "smoke", 1, 1, "completed", "passed", std::nullopt},
                  {2, 20, "build", -1, 1, "completed", "passed", std::nullopt},
                  {2, 21, "import", 0, 2, "completed", "regression", "again on rerun"},
                  {2, 22, "smoke", 1, 1, "cancelled", "cancelled", std::nullopt},
                  {1, 11, "import", 0, 1, "completed", "passed", std::nullopt}};
    store::Bisection bis;
    bis.id = 7;
    bis.bad_run_id = 2;
    bis.tier = "import";
    bis.state = BisectionState::found;
    bis.bad_sha = b;
    bis.culprit = a;
    page.bisections = {bis};
    const json commits = {{a, {{"subject", "Fix it"}, {"author", "Ada"}, {"committed_at", "t"}}}};
    const json grid = trunk_json(page, {"import", "smoke", "nightly"}, commits);
    EXPECT_EQ(grid["tiers"], json::array({"build", "import", "smoke", "nightly"}));
    ASSERT_EQ(grid["rows"].size(), 2u);
    const json& rb = grid["rows"][0];
    EXPECT_EQ(rb["sha"], b);
    EXPECT_EQ(rb["subject"], nullptr);  // the mirror did not know it
    EXPECT_EQ(rb["runs"].size(), 2u);
    EXPECT_EQ(rb["cells"]["smoke"]["job_id"], 30);  // the newest run that ran it
    EXPECT_EQ(rb["cells"]["import"]["job_id"], 21);
    EXPECT_EQ(rb["cells"]["build"]["conclusion"], "passed");
    EXPECT_FALSE(rb["cells"].contains("nightly"));
    EXPECT_EQ(rb["bisections"][0]["culprit"], a);
    EXPECT_TRUE(rb["culprit_of"].empty());
    const json& ra = grid["rows"][1];
    EXPECT_EQ(ra["subject"], "Fix it");
    EXPECT_EQ(ra["author"], "Ada");
    EXPECT_EQ(ra["culprit_of"][0]["bad_run_id"], 2);
    EXPECT_TRUE(ra["bisections"].empty());
}

store::TestHistoryRow result(std::int64_t job, std::int64_t run, const char* outcome,
                             const char* job_class, const char* tier = "import") {
    store::TestHistoryRow r;
    r.job_id = job;
    r.run_id = run;
    r.attempt = 1;
    r.tier = tier;
    r.outcome = outcome;
    r.job_conclusion = std::string(job_class);
    r.sha = std::string(40, 'c');
    r.event = "push";
    r.at = "2026-01-0" + std::to_string(run) + "T00:00:00Z";
    return r;
}

TEST(TestHistory, ARunsLastAttemptIsItsResultAndTheRateIsFlakyOverRuns) {
    // Newest job first: run 4's rerun (flaky) after its first try (failed); run 3 pre-existing;
    // run 2 passed in two tiers; run 1 failed.
    const std::vector<store::TestHistoryRow> rows = {
        result(9, 4, "flaky", "flaky"),         result(8, 4, "failed", "regression"),
        result(7, 3, "failed", "pre_existing"), result(6, 2, "passed", "passed", "smoke"),
        result(5, 2, "passed", "passed"),       result(4, 1, "failed", "regression"),
    };
    const json h = test_history_json("ci::t", rows, 50);
    ASSERT_EQ(h["runs"].size(), 5u);
    EXPECT_EQ(h["runs"][0]["result"], "flaky");
    EXPECT_EQ(h["runs"][0]["job_id"], 9);
    EXPECT_EQ(h["runs"][1]["result"], "pre_existing");
    EXPECT_EQ(
        h["counts"],
        json({{"passed", 2}, {"failed", 1}, {"flaky", 1}, {"skipped", 0}, {"pre_existing", 1}}));
    EXPECT_DOUBLE_EQ(h["flaky_rate"].get<double>(), 1.0 / 5.0);
    EXPECT_EQ(h["last_failure"]["run_id"], 4);
    EXPECT_EQ(h["first_failure"]["run_id"], 1);
    // A limit counts runs, not rows.
    const json two = test_history_json("ci::t", rows, 2);
    ASSERT_EQ(two["runs"].size(), 2u);
    EXPECT_EQ(two["first_failure"]["run_id"], 3);
    const json none = test_history_json("ci::t", {result(1, 1, "passed", "passed")}, 50);
    EXPECT_EQ(none["last_failure"], nullptr);
    EXPECT_EQ(none["flaky_rate"], 0.0);
}

TEST(TrunkRoutes, ATestsNameIsNeverAMetricsLabel) {
    EXPECT_EQ(Api::route_label("/api/v1/trunk"), "/api/v1/trunk");
    EXPECT_EQ(Api::route_label("/api/v1/tests"), "/api/v1/tests");
    EXPECT_EQ(Api::route_label("/api/v1/tests/ci%3A%3Atest_add/history"),
              "/api/v1/tests/{name}/history");
    EXPECT_EQ(Api::route_label("/ui/tests/ci%3A%3Atest_add"), "/ui/tests/{name}");
    EXPECT_EQ(Api::route_label("/ui/trunk"), "/ui/trunk");
    EXPECT_EQ(full_ref("main"), "refs/heads/main");
    EXPECT_EQ(full_ref("refs/heads/release"), "refs/heads/release");
}

}  // namespace
}  // namespace crcrd::admin
