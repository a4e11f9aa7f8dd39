// Trunk health's reads over a real SQLite file (issue 34's review): the flaky list's roll-up
// (migration 23) says what each test's history says, the streak reader finds where a streak
// of runs with many attempts each ends, and "red since" names the culprit of a bisection
// whose bad run is on no page of the grid.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <map>
#include <string>
#include <vector>

#include "admin/trunk.hpp"
#include "crcrd/store/admin_reads.hpp"
#include "crcrd/store/schema.hpp"
#include "crcrd/store/sqlite.hpp"
#include "support/temp_dir.hpp"

namespace crcrd::admin {
namespace {

using nlohmann::json;

std::string sha_of(std::int64_t n) {
    std::string s = std::to_string(n);
    return std::string(40 - s.size(), 'a') + s;
}

class TrunkReadsTest : public ::testing::Test {
  protected:
    void open(int version) {
        m_path = m_dir.path() / "crcrd.db";
        auto db = store::Db::open(m_path);
        ASSERT_TRUE(db) << db.error().message;
        m_db = std::move(*db);
        ASSERT_TRUE(store::migrate(*m_db, version));
    }

    std::int64_t run(const std::string& conclusion) {
        const std::int64_t n = ++m_runs;
        auto st = m_db->prepare(
            "INSERT INTO runs (event, sha, ref, state, conclusion, created_at) VALUES "
            "('push', ?, 'refs/heads/main', 'completed', ?, '2026-01-01T00:00:00Z')");
        st.bind(1, sha_of(n)).bind(2, conclusion);
        st.run();
        return m_db->last_insert_rowid();
    }

    std::int64_t job(std::int64_t run_id, const std::string& tier, int attempt,
                     const std::string& conclusion, bool base_check = false) {
        auto st = m_db->prepare(
            "INSERT INTO jobs (run_id, tier, position, state, conclusion, attempt, timeout_ms, "
            "created_at, finished_at, base_check) VALUES (?,?,?,'completed',?,?,60000,"
            "'2026-01-01T00:00:00Z',?,?)");
        st.bind(1, run_id)
            .bind(2, tier)
            .bind(3, std::int64_t{tier == "smoke" ? 1 : 0})
            .bind(4, conclusion)
            .bind(5, std::int64_t{attempt})
            .bind(6, "2026-01-01T00:" + std::to_string(10 + attempt) + ":00Z")
            .bind(7, base_check ? std::optional<std::string>("[\"x\"]") : std::nullopt);
        st.run();
        return m_db->last_insert_rowid();
    }

    void result(std::int64_t job_id, const std::string& name, const std::string& outcome) {
        auto st = m_db->prepare(
            "INSERT INTO test_results (job_id, name, outcome, duration_s) VALUES (?,?,?,0.1)");
        st.bind(1, job_id).bind(2, name).bind(3, outcome);
        st.run();
    }

    /// Runs `from`..`to` of a history where test "t<k>" is flaky in run i when (i + k) % (k + 2)
    /// is 0 (attempt 1 failed, attempt 2 passed and then marked flaky), failed in both when
    /// i % 17 == k, passed otherwise; tier smoke runs them, and every 9th run has a base check
    /// with them too (flaky, inserted so).
    void history(int from, int to) {
        for (int i = from; i <= to; ++i) {
            const std::int64_t r = run("passed");
            std::vector<std::pair<std::string, std::string>> first, second;
            for (int k = 0; k < 4; ++k) {
                const std::string name = "t" + std::to_string(k);
                if ((i + k) % (k + 2) == 0) {
                    first.emplace_back(name, "failed");
                    second.emplace_back(name, "flaky");
                } else if (i % 17 == k) {
                    first.emplace_back(name, "failed");
                    second.emplace_back(name, "failed");
                } else {
                    first.emplace_back(name, "passed");
                }
            }
            const std::int64_t a1 = job(r, "smoke", 1, second.empty() ? "passed" : "flaky");
            for (const auto& [n, o] : first) result(a1, n, o);
            if (!second.empty()) {
                const std::int64_t a2 = job(r, "smoke", 2, "flaky");
                // As the daemon records a rerun: its results as they came, then the tests
                // that failed before marked flaky (JobsRepo::mark_flaky).
                for (const auto& [n, o] : second) result(a2, n, o == "flaky" ? "passed" : o);
                auto mark = m_db->prepare(
                    "UPDATE test_results SET outcome = 'flaky' WHERE job_id = ? AND name = ? "
                    "AND outcome = 'passed'");
                for (const auto& [n, o] : second) {
                    if (o != "flaky") continue;
                    mark.reset();
                    mark.bind(1, a2).bind(2, n);
                    mark.run();
                }
            }
            if (i % 9 == 0) {
                const std::int64_t b = job(r, "smoke", 1, "passed", true);
                for (int k = 0; k < 4; ++k) result(b, "t" + std::to_string(k), "flaky");
            }
        }
    }

    store::AdminReads reads() {
        auto r = store::AdminReads::for_this_thread(m_path);
        EXPECT_TRUE(r) << (r ? "" : r.error().message);
        return *r;
    }

    /// What the flaky list said of `name` before the roll-up: from the test's history.
    json from_history(const std::string& name) {
        auto rows = reads().test_results_of(name, std::nullopt, 200);
        EXPECT_TRUE(rows);
        const json h = test_history_json(name, *rows, 50);
        json last = nullptr;
        for (const auto& r : h["runs"]) {
            if (r["result"] == "flaky") {
                last = {{"run_id", r["run_id"]}, {"job_id", r["job_id"]}, {"at", r["at"]}};
                break;
            }
        }
        return {{"name", name},
                {"flaky_rate", h["flaky_rate"]},
                {"flaky", h["counts"]["flaky"]},
                {"runs", h["runs"].size()},
                {"last_flaky", last}};
    }

    TempDir m_dir;
    std::filesystem::path m_path;
    std::unique_ptr<store::Db> m_db;
    std::int64_t m_runs = 0;
};

TEST_F(TrunkReadsTest, TheFlakyListsRollUpSaysWhatEachTestsHistorySays) {
    // Half the history before migration 23 (its fill), half after (its triggers); t3 has its
    // first flaky result after the migration (brought in by it).
    open(22);
    history(1, 70);
    m_db->exec("DELETE FROM test_results WHERE name = 't3' AND outcome = 'flaky'");
    ASSERT_TRUE(store::migrate(*m_db));
    history(71, 150);
    for (const std::string name : {"t0", "t1", "t2", "t3"}) {
        auto window = reads().flaky_window(name, 50);
        ASSERT_TRUE(window) << window.error().message;
        const json expected = from_history(name);
        EXPECT_EQ(flaky_item(name, *window), expected) << name;
        EXPECT_EQ(expected["runs"], 50) << name;
        EXPECT_GT(expected["flaky"].get<int>(), 0) << name;
    }
    // A test never flaky has no roll-up rows: the list never ranks it.
    history(151, 151);
    result(job(run("passed"), "smoke", 1, "passed"), "steady", "passed");
    auto none = reads().flaky_window("steady", 50);
    ASSERT_TRUE(none);
    EXPECT_TRUE(none->runs.empty());
    // The roll-up stays small: ~100 (run, tier) rows per test, whatever its history.
    auto st =
        m_db->prepare("SELECT max(c) FROM (SELECT count(*) c FROM test_flaky_runs GROUP BY name)");
    ASSERT_TRUE(st.step());
    EXPECT_LE(st.int64(0), 100);
}

struct StreakCase {
    const char* what;
    int attempts;  // of the tier in each run
    int red_runs;  // the newest runs, regressions; the ones before passed
};

class StreakTest : public TrunkReadsTest, public ::testing::WithParamInterface<StreakCase> {};

TEST_P(StreakTest, RedSinceIsTheStreaksOldestRunHoweverManyAttemptsARunHas) {
    const auto c = GetParam();
    open(store::schema_version());
    std::vector<std::int64_t> runs;
    for (int i = 0; i < 5 + c.red_runs; ++i) {
        const bool red = i >= 5;
        const std::int64_t r = run(red ? "regression" : "passed");
        for (int a = 1; a <= c.attempts; ++a) job(r, "smoke", a, red ? "regression" : "passed");
        runs.push_back(r);
    }
    auto db = reads();
    // As trunk_routes.cpp reads it: 20 runs at a time until the streak ends or the ref does.
    std::vector<store::TierOutcome> outcomes;
    for (std::int64_t from = runs.back();;) {
        auto more = db.tier_outcomes("refs/heads/main", "smoke", from, 20);
        ASSERT_TRUE(more);
        outcomes.insert(outcomes.end(), more->begin(), more->end());
        if (more->size() < 20 || streak_ends(outcomes)) break;
        from = more->back().run_id - 1;
    }
    const auto red = red_since(outcomes);
    ASSERT_TRUE(red) << c.what;
    EXPECT_EQ(red->run_id, runs.at(5)) << c.what;
    EXPECT_EQ(red->runs, c.red_runs) << c.what;
}

INSTANTIATE_TEST_SUITE_P(Attempts, StreakTest,
                         ::testing::Values(StreakCase{"one attempt a run", 1, 30},
                                           StreakCase{"four attempts a run", 4, 30},
                                           StreakCase{"five attempts a run", 5, 30},
                                           StreakCase{"twelve attempts a run", 12, 45},
                                           StreakCase{"a short streak of many attempts", 9, 3}));

TEST_F(TrunkReadsTest, TheStreaksCulpritIsFoundWhereverItsBisectedRunIs) {
    open(store::schema_version());
    std::vector<std::int64_t> red;
    for (int i = 0; i < 60; ++i) {
        const std::int64_t r = run("regression");
        job(r, "smoke", 1, "regression");
        red.push_back(r);
    }
    // The streak's first run was bisected; a grid page of the newest 50 runs does not hold it.
    auto st = m_db->prepare(
        "INSERT INTO bisections (bad_run_id, tier, tests, state, bad_sha, culprit, created_at) "
        "VALUES (?, 'smoke', '[]', 'found', ?, ?, '2026-01-01T00:00:00Z')");
    st.bind(1, red.front()).bind(2, sha_of(1)).bind(3, sha_of(1));
    st.run();
    auto db = reads();
    store::TrunkQuery page_query;
    page_query.ref = "refs/heads/main";
    auto page = db.trunk(page_query);
    ASSERT_TRUE(page);
    EXPECT_TRUE(page->bisections.empty());  // what the culprit was looked for in before

    RedSince streak;
    streak.run_ids = red;
    auto bisections = db.bisections_of_runs(streak.run_ids);
    ASSERT_TRUE(bisections);
    EXPECT_EQ(streak_culprit(streak, "smoke", *bisections), sha_of(1));
    EXPECT_EQ(streak_culprit(streak, "import", *bisections), std::nullopt);
    streak.run_ids.erase(streak.run_ids.begin());  // a streak that does not hold the bad run
    EXPECT_EQ(streak_culprit(streak, "smoke", *bisections), std::nullopt);
}

}  // namespace
}  // namespace crcrd::admin
