// The build stage's events and reads for operators on a real, migrated SQLite file: which
// changes of a build are a cache hit, a miss, an eviction or an end (the counters of /metrics),
// the builds as the admin API reads them on a read-only connection, and the scrape's gauges.
#include <gtest/gtest.h>

#include <map>

#include "crcrd/store/admin_reads.hpp"
#include "crcrd/store/builds.hpp"
#include "crcrd/store/deliveries.hpp"
#include "crcrd/store/events.hpp"
#include "crcrd/store/jobs.hpp"
#include "crcrd/store/metrics.hpp"
#include "crcrd/store/runs.hpp"
#include "crcrd/store/sqlite.hpp"
#include "support/migrated_db.hpp"

namespace crcrd::store {
namespace {

const std::string k_sha = "c4295bd74fb0f4fda03689c3df3f2803b658fd85";
const SystemTime t0 = *parse_rfc3339("2026-12-03T00:00:00.000Z");

class BuildEventsTest : public MigratedDbTest {
  protected:
    void SetUp() override {
        MigratedDbTest::SetUp();
        if (HasFatalFailure()) return;
        install_event_triggers(*db);
    }
    /// A run with a build job and one tier; the build job's id.
    std::int64_t build_job() {
        NewRun r;
        r.event = RunEvent::push;
        r.sha = k_sha;
        const auto run = insert_run(*db, r, t0);
        EXPECT_TRUE(RunsRepo(*db).store_plan(
            run, JsonText(nlohmann::json::object()),
            {{"build", -1, "[]", 60'000, "[]"}, {"import", 0, R"(["a"])", 60'000, "[]"}}, "-", t0));
        auto st = db->prepare("SELECT max(id) FROM jobs WHERE tier = 'build'");
        return st.step() ? st.int64(0) : -1;
    }
    /// The job's attempt runs (the dispatcher leased it and started its build).
    void running(std::int64_t job) {
        db->exec(
            "UPDATE jobs SET state = 'running', started_at = '2026-12-03T00:00:00.000Z' "
            "WHERE id = " +
            std::to_string(job));
    }
    /// The build events since the last call, as "kind a seconds".
    std::vector<std::string> events() {
        std::vector<std::string> out;
        for (const auto& e : take_events(*db)) {
            if (e.kind == EventKind::build_cache)
                out.push_back("cache " + e.a);
            else if (e.kind == EventKind::build_evicted)
                out.push_back("evicted");
            else if (e.kind == EventKind::build_finished)
                out.push_back(
                    "finished " + e.a +
                    (e.seconds ? " " + std::to_string(static_cast<int>(*e.seconds)) : ""));
        }
        return out;
    }
    using Events = std::vector<std::string>;
};

TEST_F(BuildEventsTest, AKeyBuiltOnceIsAMissItsUsersHitsAndItsEndAndEvictionAreCounted) {
    BuildsRepo b(*db);
    JobsRepo jobs(*db);
    const auto builder = build_job();
    const auto waiter = build_job();
    EXPECT_EQ(b.claim("k", k_sha, "", builder, t0), BuildClaim::build);
    EXPECT_EQ(events(), Events{"cache miss"});
    // Asked again by its builder, and by a job that waits on it: nothing new.
    EXPECT_EQ(b.claim("k", k_sha, "", builder, t0), BuildClaim::build);
    EXPECT_EQ(b.claim("k", k_sha, "", waiter, t0), BuildClaim::wait);
    running(builder);
    b.mark_running("k", builder, t0);
    EXPECT_EQ(events(), Events{});
    // Published after 90 s: a build that ended ready, with its duration.
    b.mark_ready("k", 100, t0 + std::chrono::seconds(90));
    ASSERT_TRUE(jobs.complete(builder, Conclusion::passed, "built", 0, t0));
    EXPECT_EQ(events(), Events{"finished ready 90"});
    // The waiting job finds it ready and passes without building: a hit.
    EXPECT_EQ(b.claim("k", k_sha, "", waiter, t0), BuildClaim::ready);
    ASSERT_TRUE(jobs.complete(waiter, Conclusion::passed, "from the cache", std::nullopt, t0));
    EXPECT_EQ(events(), Events{"cache hit"});
    // Evicted, then needed again: an eviction and another miss.
    b.mark_evicted("k", "evicted by ops", t0);
    EXPECT_EQ(events(), Events{"evicted"});
    b.mark_evicted("k", "again", t0);  // only a ready build is evicted
    EXPECT_EQ(events(), Events{});
    const auto later = build_job();
    EXPECT_EQ(b.claim("k", k_sha, "", later, t0), BuildClaim::build);
    EXPECT_EQ(events(), Events{"cache miss"});
}

TEST_F(BuildEventsTest, ARetryOrATakeoverGoesOnWithTheSameBuildAndAFailureEndsIt) {
    BuildsRepo b(*db);
    JobsRepo jobs(*db);
    const auto first = build_job();
    EXPECT_EQ(b.claim("k", k_sha, "", first, t0), BuildClaim::build);
    running(first);
    b.mark_running("k", first, t0);
    ASSERT_TRUE(
        jobs.complete(first, Conclusion::infra_error, "daemon restarted", std::nullopt, t0));
    EXPECT_EQ(events(), Events{"cache miss"});
    // Its retry (another job) takes the key over: the same build, no miss.
    const auto retry = build_job();
    EXPECT_EQ(b.claim("k", k_sha, "", retry, t0), BuildClaim::build);
    running(retry);
    b.mark_running("k", retry, t0 + std::chrono::seconds(10));
    EXPECT_EQ(events(), Events{});
    b.mark_failed("k", "the build failed (exit 3)", t0 + std::chrono::seconds(13));
    ASSERT_TRUE(jobs.complete(retry, Conclusion::regression, "the build failed", 3, t0));
    EXPECT_EQ(events(), Events{"finished failed 3"});
    // A failed build is built again by the next run: a miss.
    const auto next = build_job();
    EXPECT_EQ(b.claim("k", k_sha, "", next, t0), BuildClaim::build);
    EXPECT_EQ(events(), Events{"cache miss"});
}

TEST_F(BuildEventsTest, TheAdminReadsAndTheScrapeSeeTheBuilds) {
    BuildsRepo b(*db);
    const auto one = build_job();
    const auto two = build_job();
    ASSERT_EQ(b.claim("k1", k_sha, "", one, t0), BuildClaim::build);
    b.mark_running("k1", one, t0);
    b.mark_ready("k1", 700, t0);
    ASSERT_EQ(b.claim("k2", std::string(40, 'b'), "be", two, t0), BuildClaim::build);

    auto reads = AdminReads::for_this_thread(db_path());
    ASSERT_TRUE(reads) << reads.error().message;
    auto all = reads->builds({});
    ASSERT_TRUE(all);
    ASSERT_EQ(all->size(), 2u);
    EXPECT_EQ((*all)[0].key, "k2");
    auto ready = reads->builds({.state = BuildState::ready});
    ASSERT_TRUE(ready);
    ASSERT_EQ(ready->size(), 1u);
    EXPECT_EQ((*ready)[0].size_bytes, 700);
    auto by_sha = reads->builds({.upstream_sha = std::string(40, 'b')});
    ASSERT_TRUE(by_sha);
    ASSERT_EQ(by_sha->size(), 1u);
    EXPECT_EQ((*by_sha)[0].backend_sha, "be");
    auto one_build = reads->build((*all)[1].id);
    ASSERT_TRUE(one_build && *one_build);
    EXPECT_EQ((**one_build).key, "k1");
    EXPECT_EQ((**one_build).open_jobs, 2);  // its run's two jobs are queued
    auto none = reads->build(999);
    ASSERT_TRUE(none);
    EXPECT_FALSE(*none);

    auto g = read_gauges(*db);
    ASSERT_TRUE(g);
    EXPECT_EQ(g->build_cache_bytes, 700);
    std::map<std::string, std::int64_t> by_state;
    for (const auto& c : g->builds_by_state) by_state[c.labels.at(0)] = c.value;
    EXPECT_EQ(by_state, (std::map<std::string, std::int64_t>{{"queued", 1}, {"ready", 1}}));
}

}  // namespace
}  // namespace crcrd::store
