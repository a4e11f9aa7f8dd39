// RunsRepo on a real, migrated SQLite file: what the planner and the operator's cancel write.
#include <gtest/gtest.h>

#include "crcrd/store/deliveries.hpp"
#include "crcrd/store/runs.hpp"
#include "crcrd/store/schema.hpp"
#include "crcrd/store/sqlite.hpp"
#include "support/migrated_db.hpp"

namespace crcrd::store {
namespace {

class RunsRepoTest : public MigratedDbTest {
  protected:
    void SetUp() override {
        MigratedDbTest::SetUp();
        if (HasFatalFailure()) return;
        NewRun r;
        r.event = RunEvent::push;
        r.sha = "c4295bd74fb0f4fda03689c3df3f2803b658fd85";
        run = insert_run(*db, r, *parse_rfc3339("2026-12-01T00:00:00.000Z"));
    }
    std::string text(const std::string& sql) {
        auto st = db->prepare(sql);
        return st.step() ? st.text(0) : std::string("<none>");
    }
    std::string run_row() {
        return text(
            "SELECT state || '/' || coalesce(conclusion, '-') || '/' || coalesce(reason, '-') FROM "
            "runs WHERE id = " +
            std::to_string(run));
    }
    std::vector<PlannedJob> two_tiers() {
        return {{"import", 0, R"(["a"])", 60'000, "[]"},
                {"smoke", 1, R"(["b"])", 120'000, R"(["spyre"])"}};
    }

    std::int64_t run = 0;
};

TEST_F(RunsRepoTest, APlanIsStoredOnceWithItsJobs) {
    RunsRepo runs(*db);
    EXPECT_TRUE(runs.store_plan(run, store::JsonText(nlohmann::json::parse(R"({"tiers":2})")),
                                two_tiers(), "nothing to run: -",
                                *parse_rfc3339("2026-12-01T00:00:01.000Z")));
    EXPECT_EQ(text("SELECT group_concat(tier || ':' || position || ':' || state || ':' || "
                   "timeout_ms || ':' || labels, ' ') "
                   "FROM jobs"),
              R"(import:0:queued:60000:[] smoke:1:queued:120000:["spyre"])");
    EXPECT_EQ(text("SELECT selection FROM runs"), R"({"tiers":2})");
    // A second plan of the same run changes nothing.
    EXPECT_FALSE(runs.store_plan(run, store::JsonText(nlohmann::json::parse(R"({"tiers":9})")),
                                 two_tiers(), "-", std::chrono::system_clock::now()));
    EXPECT_EQ(text("SELECT count(*) FROM jobs"), "2");
    EXPECT_EQ(text("SELECT selection FROM runs"), R"({"tiers":2})");
}

TEST_F(RunsRepoTest, APlanWithoutTiersCompletesTheRunPassed) {
    EXPECT_TRUE(RunsRepo(*db).store_plan(run, store::JsonText(nlohmann::json::object()), {},
                                         "nothing to run: docs only",
                                         *parse_rfc3339("2026-12-01T00:00:01.000Z")));
    EXPECT_EQ(run_row(), "completed/passed/nothing to run: docs only");
    EXPECT_EQ(text("SELECT count(*) FROM jobs"), "0");
}

TEST_F(RunsRepoTest, ARunCancelledBeforeItsPlanGetsNoJobs) {
    RunsRepo runs(*db);
    EXPECT_EQ(runs.cancel(run, "superseded by x", std::chrono::system_clock::now()),
              CancelOutcome::cancelled);
    EXPECT_FALSE(runs.store_plan(run, store::JsonText(nlohmann::json::object()), two_tiers(), "-",
                                 std::chrono::system_clock::now()));
    EXPECT_EQ(text("SELECT count(*) FROM jobs"), "0");
    EXPECT_EQ(run_row(), "cancelled/cancelled/superseded by x");
}

TEST_F(RunsRepoTest, CancelEndsTheOpenJobsAndTellsFinishedFromMissing) {
    RunsRepo runs(*db);
    ASSERT_TRUE(runs.store_plan(run, store::JsonText(nlohmann::json::object()), two_tiers(), "-",
                                std::chrono::system_clock::now()));
    db->exec("UPDATE jobs SET state = 'running' WHERE tier = 'import'");
    EXPECT_EQ(runs.cancel(run, "cancelled by ops", *parse_rfc3339("2026-12-01T00:00:02.000Z")),
              CancelOutcome::cancelled);
    EXPECT_EQ(text("SELECT group_concat(state || '/' || reason, ' ') FROM jobs"),
              "cancelled/cancelled by ops cancelled/cancelled by ops");
    EXPECT_EQ(runs.cancel(run, "again", std::chrono::system_clock::now()),
              CancelOutcome::already_finished);
    EXPECT_EQ(run_row(), "cancelled/cancelled/cancelled by ops");  // unchanged
    EXPECT_EQ(runs.cancel(run + 100, "x", std::chrono::system_clock::now()),
              CancelOutcome::not_found);
}

TEST_F(RunsRepoTest, ARetryStartsFromTheRunAsItWasQueued) {
    RunsRepo runs(*db);
    EXPECT_FALSE(runs.retry_source(run + 1));
    auto src = runs.retry_source(run);
    ASSERT_TRUE(src);
    EXPECT_EQ(src->run.event, RunEvent::push);
    EXPECT_EQ(src->run.sha, "c4295bd74fb0f4fda03689c3df3f2803b658fd85");
    EXPECT_EQ(src->state, RunState::queued);
}

}  // namespace
}  // namespace crcrd::store
