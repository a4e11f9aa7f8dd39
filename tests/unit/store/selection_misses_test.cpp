// The selection-miss audit (docs/verdicts.md), the store's part: what the audit reads and
// records, and the admin list, on a real, migrated SQLite file.
#include <gtest/gtest.h>

#include "crcrd/store/admin_reads.hpp"
#include "crcrd/store/schema.hpp"
#include "crcrd/store/selection_misses.hpp"
#include "crcrd/store/sqlite.hpp"
#include "support/migrated_db.hpp"

namespace crcrd::store {
namespace {

constexpr const char* k_a = "1111111111111111111111111111111111111111";
constexpr const char* k_b = "2222222222222222222222222222222222222222";
constexpr const char* k_c = "3333333333333333333333333333333333333333";
constexpr const char* k_main = "refs/heads/main";

using Outcomes = std::vector<std::pair<std::string, std::string>>;  // test, outcome

class SelectionMissesTest : public MigratedDbTest {
  protected:
    std::int64_t run(const std::string& event, const std::string& sha, const std::string& ref,
                     std::optional<int> pr = std::nullopt, const std::string& state = "completed") {
        db->exec("INSERT INTO runs (event, sha, pr, ref, state, created_at) VALUES ('" + event +
                 "', '" + sha + "', " + (pr ? std::to_string(*pr) : "NULL") + ", " +
                 (ref.empty() ? "NULL" : "'" + ref + "'") + ", '" + state +
                 "', '2026-12-01T00:00:00.000Z')");
        return db->last_insert_rowid();
    }
    std::int64_t job(std::int64_t run_id, const std::string& tier, int attempt,
                     const std::string& conclusion, const Outcomes& tests = {}) {
        db->exec(
            "INSERT INTO jobs (run_id, tier, position, attempt, state, conclusion, tests, "
            "timeout_ms, created_at) VALUES (" +
            std::to_string(run_id) + ", '" + tier + "', " + (tier == "full" ? "1" : "0") + ", " +
            std::to_string(attempt) + ", 'completed', '" + conclusion +
            "', '[]', 1000, '2026-12-01T00:00:00.000Z')");
        const auto id = db->last_insert_rowid();
        for (const auto& [name, outcome] : tests) {
            db->exec("INSERT INTO test_results (job_id, name, outcome) VALUES (" +
                     std::to_string(id) + ", '" + name + "', '" + outcome + "')");
        }
        return id;
    }
    AuditInputs inputs(std::int64_t run_id) {
        auto in = read_audit_inputs(db_path(), run_id);
        EXPECT_TRUE(in) << in.error().message;
        return in ? *in : AuditInputs{};
    }
};

TEST_F(SelectionMissesTest, TheFailedTestsAreThoseOfEachTiersFinalAttemptThatEndedRegression) {
    const auto r = run("schedule", k_b, k_main);
    job(r, "affected", 1, "regression", {{"t1", "failed"}, {"t2", "failed"}});
    job(r, "affected", 2, "regression", {{"t1", "failed"}, {"t2", "passed"}, {"t3", "skipped"}});
    job(r, "full", 1, "regression", {{"t9", "failed"}});
    job(r, "full", 2, "flaky", {{"t9", "flaky"}});          // the final attempt did not fail
    job(r, "smoke", 1, "infra_error", {{"t5", "failed"}});  // not a regression
    const auto in = inputs(r);
    EXPECT_TRUE(in.found);
    EXPECT_EQ(in.event, RunEvent::schedule);
    EXPECT_EQ(in.sha, k_b);
    EXPECT_EQ(in.failed, (std::vector<TierTest>{{"affected", "t1"}}));
    EXPECT_FALSE(in.previous);  // no earlier scheduled run
    EXPECT_FALSE(inputs(999).found);
}

TEST_F(SelectionMissesTest, ThePreviousRunIsTheNewestEarlierCompletedScheduledRunOfTheSameRef) {
    const auto older = run("schedule", k_a, k_main);          // 1
    const auto prev = run("schedule", k_a, k_main);           // 2: the one
    run("schedule", k_a, "refs/heads/release");               // 3: another ref
    run("push", k_a, k_main);                                 // 4: not scheduled
    run("schedule", k_a, k_main, std::nullopt, "cancelled");  // 5: not completed
    const auto r = run("schedule", k_b, k_main);              // 6
    run("schedule", k_c, k_main);                             // 7: later
    job(r, "affected", 1, "regression", {{"t1", "failed"}});
    const auto in = inputs(r);
    ASSERT_TRUE(in.previous);
    EXPECT_EQ(in.previous->id, prev);
    EXPECT_EQ(in.previous->sha, k_a);
    EXPECT_NE(in.previous->id, older);
}

TEST_F(SelectionMissesTest, PassedBeforeCountsTheTestsOwnOutcomeInTheSameTiersFinalAttempt) {
    const auto prev = run("schedule", k_a, k_main);
    job(prev, "affected", 1, "regression", {{"t1", "failed"}, {"t2", "passed"}, {"t4", "passed"}});
    job(prev, "affected", 2,
        "regression",  // final: the tier still failed, but t1 and t2 passed here
        {{"t1", "flaky"}, {"t2", "passed"}, {"t3", "failed"}, {"t5", "skipped"}, {"t6", "passed"}});
    job(prev, "full", 1, "passed", {{"t7", "passed"}});
    const auto r = run("schedule", k_b, k_main);
    job(r, "affected", 1, "regression",
        {{"t1", "failed"},
         {"t2", "failed"},
         {"t3", "failed"},
         {"t4", "failed"},
         {"t5", "failed"},
         {"t7", "failed"}});
    const auto in = inputs(r);
    ASSERT_TRUE(in.previous);
    // t3 failed there, t4 passed only in an earlier attempt, t5 was skipped, t7 passed in another
    // tier.
    EXPECT_EQ(in.passed_before, (std::set<TierTest>{{"affected", "t1"}, {"affected", "t2"}}));
}

TEST_F(SelectionMissesTest, ACommitsRunsArePushRunsOnItsShaAndPullRequestRunsOfItsPr) {
    const auto push = run("push", k_a, k_main);  // 1
    job(push, "import", 1, "passed");
    const auto pr1 = run("pull_request", k_c, "refs/pull/7/head", 7);  // 2: another SHA of PR 7
    job(pr1, "import", 1, "passed");
    job(pr1, "affected", 1, "regression");
    run("pull_request", k_c, "refs/pull/7/head", 7, "cancelled");  // 3: no jobs
    run("pull_request", k_a, "refs/pull/8/head", 8);               // 4: another PR
    run("schedule", k_b, k_main);                                  // 5: not push or PR
    run("manual", k_b, "");                                        // 6
    auto runs = read_commit_runs(db_path(), {{k_a, 7}, {k_b, std::nullopt}, {k_a, std::nullopt}});
    ASSERT_TRUE(runs) << runs.error().message;
    ASSERT_EQ(runs->size(), 3u);
    EXPECT_EQ((*runs)[0].run_ids, (std::vector<std::int64_t>{1, 2, 3}));
    EXPECT_EQ((*runs)[0].tiers, (std::set<std::string>{"import", "affected"}));
    EXPECT_TRUE((*runs)[1].run_ids.empty());
    EXPECT_TRUE((*runs)[1].tiers.empty());
    EXPECT_EQ((*runs)[2].run_ids, (std::vector<std::int64_t>{1}));
    EXPECT_EQ((*runs)[2].tiers, (std::set<std::string>{"import"}));
}

TEST_F(SelectionMissesTest, RecordingIsIdempotentAndTheListPagesAndFilters) {
    const auto prev = run("schedule", k_a, k_main);
    const auto r1 = run("schedule", k_b, k_main);
    const auto r2 = run("schedule", k_c, k_main);
    const std::string commits = R"([{"sha":"x","rules":[]}])";
    std::vector<NewSelectionMiss> first = {{r1, prev, "affected", "t1", commits},
                                           {r1, prev, "affected", "t2", commits}};
    EXPECT_EQ(record_selection_misses(*db, first, *parse_rfc3339("2026-12-01T01:00:00.000Z")), 2);
    EXPECT_EQ(record_selection_misses(*db, first, *parse_rfc3339("2026-12-01T02:00:00.000Z")),
              0);  // a second audit adds nothing
    EXPECT_EQ(record_selection_misses(*db, {{r2, r1, "full", "t1", commits}},
                                      *parse_rfc3339("2026-12-01T03:00:00.000Z")),
              1);

    auto reads = AdminReads::for_this_thread(db_path());
    ASSERT_TRUE(reads) << reads.error().message;
    auto ids = [&](const SelectionMissQuery& q) {
        std::vector<std::int64_t> out;
        auto rows = reads->selection_misses(q);
        EXPECT_TRUE(rows) << rows.error().message;
        if (rows)
            for (const auto& m : *rows) out.push_back(m.id);
        return out;
    };
    using Ids = std::vector<std::int64_t>;
    EXPECT_EQ(ids({}), (Ids{3, 2, 1}));
    EXPECT_EQ(ids({r1, std::nullopt, {}}), (Ids{2, 1}));
    EXPECT_EQ(ids({std::nullopt, "t1", {}}), (Ids{3, 1}));
    EXPECT_EQ(ids({r1, "t1", {}}), (Ids{1}));
    EXPECT_EQ(ids({std::nullopt, std::nullopt, {2, std::nullopt}}), (Ids{3, 2}));
    EXPECT_EQ(ids({std::nullopt, std::nullopt, {2, 2}}), (Ids{1}));
    auto rows = reads->selection_misses({r2, std::nullopt, {}});
    ASSERT_TRUE(rows);
    ASSERT_EQ(rows->size(), 1u);
    const auto& m = rows->front();
    EXPECT_EQ(m.run_id, r2);
    EXPECT_EQ(m.previous_run_id, r1);
    EXPECT_EQ(m.tier, "full");
    EXPECT_EQ(m.test, "t1");
    EXPECT_EQ(m.commits_json, commits);
    EXPECT_EQ(m.created_at, "2026-12-01T03:00:00.000Z");
}

}  // namespace
}  // namespace crcrd::store
