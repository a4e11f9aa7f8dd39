// Pre-existing failures (docs/verdicts.md), the store's part: which of a PR tier's failed tests
// failed before on its base, on a real, migrated SQLite file, case by case.
#include <gtest/gtest.h>

#include "crcrd/store/jobs.hpp"
#include "crcrd/store/schema.hpp"
#include "crcrd/store/sqlite.hpp"
#include "support/migrated_db.hpp"

namespace crcrd::store {
namespace {

constexpr const char* k_base = "1111111111111111111111111111111111111111";
constexpr const char* k_newer = "2222222222222222222222222222222222222222";
constexpr const char* k_other = "3333333333333333333333333333333333333333";
constexpr const char* k_head = "4444444444444444444444444444444444444444";

class BaseFailuresTest : public MigratedDbTest {
  protected:
    /// A completed run with one tier; each attempt's failed and passed tests. Its last job's id.
    std::int64_t run(const std::string& event, const std::string& sha, const std::string& ref,
                     const std::string& finished,
                     const std::vector<std::vector<std::string>>& failed_per_attempt,
                     std::optional<int> pr = std::nullopt, const std::string& base_sha = "",
                     const std::string& base_ref = "", const std::string& last_conclusion = "") {
        auto q = [](const std::string& s) {
            return s.empty() ? std::string("NULL") : "'" + s + "'";
        };
        db->exec(
            "INSERT INTO runs (event, sha, pr, ref, base_ref, base_sha, state, created_at, "
            "finished_at) VALUES ('" +
            event + "', '" + sha + "', " + (pr ? std::to_string(*pr) : "NULL") + ", " + q(ref) +
            ", " + q(base_ref) + ", " + q(base_sha) + ", 'completed', '" + finished + "', '" +
            finished + "')");
        const auto run_id = db->last_insert_rowid();
        std::int64_t job = 0;
        for (std::size_t a = 0; a < failed_per_attempt.size(); ++a) {
            db->exec(
                "INSERT INTO jobs (run_id, tier, position, attempt, state, conclusion, tests, "
                "timeout_ms, created_at) VALUES (" +
                std::to_string(run_id) + ", 'unit', 0, " + std::to_string(a + 1) +
                ", 'completed', '" +
                (a + 1 == failed_per_attempt.size() && !last_conclusion.empty() ? last_conclusion
                 : failed_per_attempt[a].empty()                                ? "passed"
                                                                                : "regression") +
                "', '[]', 1000, '" + finished + "')");
            job = db->last_insert_rowid();
            for (const auto& t : failed_per_attempt[a]) {
                db->exec("INSERT INTO test_results (job_id, name, outcome) VALUES (" +
                         std::to_string(job) + ", '" + t + "', 'failed')");
            }
            db->exec("INSERT INTO test_results (job_id, name, outcome) VALUES (" +
                     std::to_string(job) + ", 'ok', 'passed')");
        }
        return job;
    }
    std::int64_t pr_job(const std::vector<std::string>& failed) {
        return run("pull_request", k_head, "refs/pull/7/head", "2026-12-01T12:00:00.000Z", {failed},
                   7, k_base, "main");
    }
    std::string found(std::int64_t job, const std::vector<std::string>& tests,
                      SystemTime since = *parse_rfc3339("2026-12-01T00:00:00.000Z")) {
        std::string out;
        for (const auto& f : JobsRepo(*db).failed_on_base(job, tests, since)) {
            out += (out.empty() ? "" : " ") + f.test + "@" + std::to_string(f.run_id) + ":" +
                   f.sha.substr(0, 1);
        }
        return out;
    }
};

TEST_F(BaseFailuresTest, ATestThatFailedOnTheBaseShaIsFound) {
    run("push", k_base, "refs/heads/main", "2026-11-20T00:00:00.000Z",
        {{"t1"}});  // run 1, older than the window: the SHA counts
    auto job = pr_job({"t1", "t2"});
    EXPECT_EQ(found(job, {"t1", "t2"}), "t1@1:1");
    EXPECT_EQ(JobsRepo(*db).failed_tests(job), (std::vector<std::string>{"t1", "t2"}));
}

TEST_F(BaseFailuresTest, ANewerRunOfTheBaseBranchCountsWithinTheWindowOnly) {
    run("push", k_newer, "refs/heads/main", "2026-12-01T06:00:00.000Z", {{"t1"}});  // run 1: within
    run("schedule", k_other, "refs/heads/main", "2026-11-29T06:00:00.000Z",
        {{"t2"}});  // run 2: before the window
    run("push", k_other, "refs/heads/release", "2026-12-01T06:00:00.000Z",
        {{"t3"}});  // run 3: another branch
    auto job = pr_job({"t1", "t2", "t3"});
    EXPECT_EQ(found(job, {"t1", "t2", "t3"}), "t1@1:2");
}

TEST_F(BaseFailuresTest, ATestThatFailedThenPassedOnTheBaseWasFlakyThereAndDoesNotCount) {
    run("push", k_base, "refs/heads/main", "2026-12-01T06:00:00.000Z",
        {{"t1"}, {}});  // failed, passed on rerun
    auto job = pr_job({"t1"});
    EXPECT_EQ(found(job, {"t1"}), "");
}

TEST_F(BaseFailuresTest, OtherPullRequestsDoNotCount) {
    run("pull_request", k_other, "refs/pull/9/head", "2026-12-01T06:00:00.000Z", {{"t1"}}, 9,
        k_base, "main");
    auto job = pr_job({"t1"});
    EXPECT_EQ(found(job, {"t1"}), "");
}

TEST_F(BaseFailuresTest, OnlyAPullRequestRunIsLookedUpNotAPushThatCarriesItsPrNumber) {
    run("push", k_base, "refs/heads/main", "2026-12-01T01:00:00.000Z",
        {{"t1"}});  // run 1: the base fails t1
    // A post-merge run (or a ciflow tag push): a push with the PR's number and base.
    auto merged = run("push", k_head, "refs/heads/main", "2026-12-01T12:00:00.000Z", {{"t1"}}, 7,
                      k_base, "main");
    EXPECT_EQ(found(merged, {"t1"}), "");
    auto job = pr_job({"t1"});
    EXPECT_EQ(found(job, {"t1"}), "t1@1:1");
}

TEST_F(BaseFailuresTest, ABaseTierThatEndedInfraOrDeviceSaysNothingOfItsTests) {
    run("push", k_base, "refs/heads/main", "2026-12-01T01:00:00.000Z", {{"t1"}}, std::nullopt, "",
        "", "device_unavailable");
    run("push", k_base, "refs/heads/main", "2026-12-01T02:00:00.000Z", {{"t2"}}, std::nullopt, "",
        "", "infra_error");
    run("manual", k_newer, "refs/heads/main", "2026-12-01T03:00:00.000Z",
        {{"t3"}});  // not a push or schedule
    auto job = pr_job({"t1", "t2", "t3"});
    EXPECT_EQ(found(job, {"t1", "t2", "t3"}), "");
}

TEST_F(BaseFailuresTest,
       ABranchGivenAsARefOrAsANameMatchesAndAPrWithoutABaseShaStillLooksAtTheBranch) {
    run("schedule", k_newer, "refs/heads/main", "2026-12-01T06:00:00.000Z", {{"t1"}});  // run 1
    auto job = run("pull_request", k_head, "refs/pull/8/head", "2026-12-01T12:00:00.000Z", {{"t1"}},
                   8, "", "main");
    EXPECT_EQ(found(job, {"t1"}), "t1@1:2");
    auto by_ref = run("pull_request", k_other, "refs/pull/9/head", "2026-12-01T12:00:00.000Z",
                      {{"t1"}}, 9, "", "refs/heads/main");
    EXPECT_EQ(found(by_ref, {"t1"}), "t1@1:2");
}

TEST_F(BaseFailuresTest, TheBaseShaComesBeforeANewerBranchRun) {
    run("push", k_base, "refs/heads/main", "2026-12-01T01:00:00.000Z",
        {{"t1"}});  // run 1: the base
    run("push", k_newer, "refs/heads/main", "2026-12-01T06:00:00.000Z", {{"t1"}});  // run 2: newer
    auto job = pr_job({"t1"});
    EXPECT_EQ(found(job, {"t1"}), "t1@1:1");
}

}  // namespace
}  // namespace crcrd::store
