// BuildsRepo on a real, migrated SQLite file: the single flight (claim) as a table of a key's
// states and its builder's, the cache's bookkeeping, and the reads the API serves.
#include "crcrd/store/builds.hpp"

#include <gtest/gtest.h>

#include "crcrd/store/deliveries.hpp"
#include "crcrd/store/runs.hpp"
#include "crcrd/store/schema.hpp"
#include "crcrd/store/sqlite.hpp"
#include "support/migrated_db.hpp"

namespace crcrd::store {
namespace {

const std::string k_sha = "c4295bd74fb0f4fda03689c3df3f2803b658fd85";
const SystemTime t0 = *parse_rfc3339("2026-12-03T00:00:00.000Z");

class BuildsRepoTest : public MigratedDbTest {
  protected:
    /// A run with a build job and one tier; the build job's id.
    std::int64_t run_with_build() {
        NewRun r;
        r.event = RunEvent::push;
        r.sha = k_sha;
        const auto run = insert_run(*db, r, t0);
        EXPECT_TRUE(RunsRepo(*db).store_plan(
            run, JsonText(nlohmann::json::object()),
            {{"build", -1, "[]", 60'000, "[]"}, {"import", 0, R"(["a"])", 60'000, "[]"}}, "-", t0));
        return id_of("SELECT id FROM jobs WHERE run_id = " + std::to_string(run) +
                     " AND tier = 'build'");
    }
    std::int64_t id_of(const std::string& sql) {
        auto st = db->prepare(sql);
        return st.step() ? st.int64(0) : -1;
    }
    void set_job(std::int64_t job, const std::string& state) {
        db->exec("UPDATE jobs SET state = '" + state + "' WHERE id = " + std::to_string(job));
    }
    void set_build(const std::string& key, const std::string& state) {
        db->exec("UPDATE builds SET state = '" + state + "' WHERE key = '" + key + "'");
    }
};

TEST_F(BuildsRepoTest, OneJobBuildsAKeyTheOthersWaitAndAReadyKeyIsAHit) {
    BuildsRepo b(*db);
    const auto a = run_with_build();
    const auto c = run_with_build();
    struct Step {
        const char* name;
        std::int64_t job;
        std::function<void()> before;
        BuildClaim want;
    };
    const Step steps[] = {
        {"a new key: the first job builds it", a, [] {}, BuildClaim::build},
        {"asked again by its builder: still builds", a, [] {}, BuildClaim::build},
        {"another job while the builder is open: waits", c, [] {}, BuildClaim::wait},
        {"the builder running: waits", c, [&] { b.mark_running("k", a, t0); }, BuildClaim::wait},
        {"the builder cancelled: the next job takes it over", c, [&] { set_job(a, "cancelled"); },
         BuildClaim::build},
        {"published: a hit for anyone", a, [&] { b.mark_ready("k", 42, t0); }, BuildClaim::ready},
        {"failed: the next job builds again", a, [&] { set_build("k", "failed"); },
         BuildClaim::build},
        {"evicted: builds again", c,
         [&] {
             set_build("k", "ready");
             b.mark_evicted("k", "gone", t0);
         },
         BuildClaim::build},
    };
    for (const auto& s : steps) {
        s.before();
        EXPECT_EQ(b.claim("k", k_sha, "backend", s.job, t0), s.want) << s.name;
    }
    const auto row = b.get("k");
    ASSERT_TRUE(row);
    EXPECT_EQ(row->state, BuildState::queued);
    EXPECT_EQ(row->job_id, c);
    EXPECT_EQ(row->attempts, 1);
    EXPECT_EQ(row->runs, 2);
    EXPECT_EQ(b.key_of_job(a), "k");
    EXPECT_EQ(b.key_of_job(c), "k");
}

TEST_F(BuildsRepoTest, WaitingJobsEvictionAndTheApiReads) {
    BuildsRepo b(*db);
    const auto a = run_with_build();
    const auto c = run_with_build();
    ASSERT_EQ(b.claim("k1", k_sha, "be", a, t0), BuildClaim::build);
    ASSERT_EQ(b.claim("k1", k_sha, "be", c, t0), BuildClaim::wait);
    EXPECT_EQ(b.waiting_jobs("k1", a), std::vector<std::int64_t>{c});
    b.mark_running("k1", a, t0);
    b.mark_ready("k1", 100, t0 + std::chrono::seconds(5));
    set_job(a, "completed");
    db->exec("UPDATE jobs SET conclusion = 'passed' WHERE id = " + std::to_string(a));
    EXPECT_EQ(b.key_of_run(id_of("SELECT run_id FROM jobs WHERE id = " + std::to_string(a))), "k1");
    // The runs' tiers are queued: k1 is needed, so nothing is evictable.
    EXPECT_TRUE(b.evictable().empty());
    db->exec("UPDATE jobs SET state = 'completed'");
    ASSERT_EQ(b.evictable().size(), 1u);
    EXPECT_EQ(b.ready_bytes(), 100);
    EXPECT_EQ(b.ready_of_backend("be", "other").size(), 1u);
    EXPECT_TRUE(b.ready_of_backend("be", "k1").empty());
    b.mark_evicted("k1", "over the limit", t0);
    EXPECT_EQ(b.ready_bytes(), 0);
    // The API's list: newest first, by state, paged.
    const auto d = run_with_build();
    ASSERT_EQ(b.claim("k2", k_sha, "be", d, t0), BuildClaim::build);
    auto all = b.list({});
    ASSERT_EQ(all.size(), 2u);
    EXPECT_EQ(all[0].key, "k2");
    EXPECT_EQ(all[1].key, "k1");
    EXPECT_EQ(all[1].reason, "over the limit");
    auto evicted = b.list({.state = BuildState::evicted});
    ASSERT_EQ(evicted.size(), 1u);
    EXPECT_EQ(evicted[0].key, "k1");
    auto page = b.list({.limit = 1, .before = all[0].id});
    ASSERT_EQ(page.size(), 1u);
    EXPECT_EQ(page[0].key, "k1");
    EXPECT_EQ(b.get(all[0].id)->key, "k2");
    EXPECT_FALSE(b.get(std::int64_t{99}));
    // A start-up requeues what was running.
    b.mark_running("k2", d, t0);
    b.requeue_running();
    EXPECT_EQ(b.get("k2")->state, BuildState::queued);
}

}  // namespace
}  // namespace crcrd::store
