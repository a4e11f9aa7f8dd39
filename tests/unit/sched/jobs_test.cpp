#include <gtest/gtest.h>

#include "crcrd/sched/attempt_end.hpp"
#include "crcrd/sched/jobs.hpp"
#include "crcrd/store/deliveries.hpp"
#include "crcrd/store/schema.hpp"
#include "crcrd/store/sqlite.hpp"
#include "support/temp_dir.hpp"

namespace crcrd::sched {
namespace {

const SystemTime k_now = std::chrono::system_clock::now();

class JobsTest : public ::testing::Test {
  protected:
    void SetUp() override {
        auto d = store::Db::open(dir.path() / "a.db");
        ASSERT_TRUE(d);
        db = std::move(*d);
        ASSERT_TRUE(store::migrate(*db));
    }
    /// A run with one queued job per tier; returns the job ids in tier order.
    std::vector<std::int64_t> run_with(const std::vector<std::string>& tiers,
                                       std::int64_t* run_id = nullptr) {
        store::NewRun r;
        r.event = RunEvent::push;
        r.sha = "c4295bd74fb0f4fda03689c3df3f2803b658fd85";
        auto id = store::insert_run(*db, r, *parse_rfc3339("2026-11-29T00:00:00.000Z"));
        if (run_id) *run_id = id;
        std::vector<std::int64_t> jobs;
        for (std::size_t i = 0; i < tiers.size(); ++i) {
            auto st = db->prepare(
                "INSERT INTO jobs (run_id, tier, position, state, timeout_ms, created_at) VALUES "
                "(?,?,?,'queued',1000,'x')");
            st.bind(1, id).bind(2, tiers[i]).bind(3, static_cast<std::int64_t>(i));
            st.run();
            jobs.push_back(db->last_insert_rowid());
        }
        return jobs;
    }
    std::string text(const std::string& sql) {
        auto st = db->prepare(sql);
        st.step();
        return st.text(0);
    }

    TempDir dir;
    std::unique_ptr<store::Db> db;
};

TEST_F(JobsTest, TiersRunInOrderAndOnlyAfterThePreviousPassed) {
    std::int64_t run = 0;
    auto jobs = run_with({"import", "smoke", "affected"}, &run);
    EXPECT_EQ(startable_jobs(*db), std::vector<std::int64_t>{jobs[0]});
    db->exec("UPDATE jobs SET state='running' WHERE id=" + std::to_string(jobs[0]));
    EXPECT_TRUE(startable_jobs(*db).empty());  // one tier at a time
    EXPECT_FALSE(finish_job(*db, jobs[0], Conclusion::passed, "ok", 0, k_now));
    EXPECT_EQ(startable_jobs(*db), std::vector<std::int64_t>{jobs[1]});
    EXPECT_FALSE(finish_job(*db, jobs[1], Conclusion::flaky, "1 test passed on rerun", 0, k_now));
    EXPECT_EQ(startable_jobs(*db), std::vector<std::int64_t>{jobs[2]});
    auto done = finish_job(*db, jobs[2], Conclusion::passed, "ok", 0, k_now);
    ASSERT_TRUE(done);
    EXPECT_EQ(*done, Conclusion::flaky);  // the most severe of passed, flaky, passed
    EXPECT_EQ(text("SELECT state || '/' || conclusion FROM runs WHERE id=" + std::to_string(run)),
              "completed/flaky");
}

TEST_F(JobsTest, AFailedTierCancelsTheLaterOnesWithTheReason) {
    std::int64_t run = 0;
    auto jobs = run_with({"import", "smoke", "affected"}, &run);
    auto done = finish_job(*db, jobs[0], Conclusion::device_unavailable, "no healthy device in 30m",
                           std::nullopt, k_now);
    ASSERT_TRUE(done);
    EXPECT_EQ(*done, Conclusion::device_unavailable);
    EXPECT_EQ(
        text("SELECT group_concat(state || ':' || reason, ',') FROM jobs WHERE position > 0"),
        "cancelled:import ended device_unavailable,cancelled:import ended device_unavailable");
    EXPECT_EQ(text("SELECT conclusion FROM runs WHERE id=" + std::to_string(run)),
              "device_unavailable");
    EXPECT_TRUE(startable_jobs(*db).empty());
    EXPECT_FALSE(finish_job(*db, jobs[1], Conclusion::passed, "late", std::nullopt,
                            k_now));  // a cancelled job stays cancelled
}

TEST_F(JobsTest, ARetryRunsBeforeTheLaterTiersAndOnlyTheLastAttemptCounts) {
    std::int64_t run = 0;
    auto jobs = run_with({"import", "smoke"}, &run);
    EndPlan plan;
    plan.next = EndPlan::Next::retry;
    plan.conclusion = Conclusion::infra_error;
    plan.reason = "runner crashed (retried)";
    apply_end(*db, jobs[0], plan, k_now);
    auto retry = std::optional<std::int64_t>(std::stoll(text("SELECT max(id) FROM jobs")));
    EXPECT_EQ(startable_jobs(*db), std::vector<std::int64_t>{*retry});
    EXPECT_EQ(text("SELECT attempt || ':' || tier FROM jobs WHERE id=" + std::to_string(*retry)),
              "2:import");
    EXPECT_FALSE(finish_job(*db, *retry, Conclusion::passed, "ok", std::nullopt, k_now));
    EXPECT_EQ(startable_jobs(*db), std::vector<std::int64_t>{jobs[1]});
    auto done = finish_job(*db, jobs[1], Conclusion::passed, "ok", std::nullopt, k_now);
    ASSERT_TRUE(done);
    EXPECT_EQ(*done, Conclusion::passed);  // the failed first attempt does not count
}

TEST_F(JobsTest, SeverityOrder) {
    using C = Conclusion;
    EXPECT_EQ(more_severe(C::passed, C::regression), C::regression);
    EXPECT_EQ(more_severe(C::timeout, C::infra_error), C::infra_error);
    EXPECT_EQ(more_severe(C::flaky, C::timeout), C::timeout);
    EXPECT_EQ(more_severe(C::device_unavailable, C::infra_error), C::infra_error);
    EXPECT_EQ(more_severe(std::nullopt, C::passed), C::passed);
    EXPECT_EQ(more_severe(C::passed, C::cancelled), C::passed);  // cancelled never outranks a class
    // docs/verdicts.md: timeout > pre_existing > flaky.
    EXPECT_EQ(more_severe(C::pre_existing, C::timeout), C::timeout);
    EXPECT_EQ(more_severe(C::flaky, C::pre_existing), C::pre_existing);
    EXPECT_EQ(more_severe(C::cancelled, C::pre_existing), C::pre_existing);
}

TEST_F(JobsTest, OneStartableJobPerRunAcrossRuns) {
    auto a = run_with({"import", "smoke"});
    auto b = run_with({"import"});
    EXPECT_EQ(startable_jobs(*db), (std::vector<std::int64_t>{a[0], b[0]}));
    db->exec("UPDATE runs SET state='cancelled' WHERE id=(SELECT run_id FROM jobs WHERE id=" +
             std::to_string(b[0]) + ")");
    EXPECT_EQ(startable_jobs(*db), (std::vector<std::int64_t>{a[0]}));
}

}  // namespace
}  // namespace crcrd::sched
