// The selection-miss audit end to end below the daemon (docs/verdicts.md): a real git upstream
// and mirror, a real SQLite file filled through the store's own functions, the real writer,
// and audit_scheduled_run as the planner's followup calls it.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "crcrd/core/files.hpp"
#include "crcrd/core/time.hpp"
#include "crcrd/sched/audit.hpp"
#include "crcrd/store/admin_reads.hpp"
#include "crcrd/store/deliveries.hpp"
#include "crcrd/store/jobs.hpp"
#include "crcrd/store/runs.hpp"
#include "crcrd/store/sqlite.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"

namespace crcrd::sched {
namespace {

using nlohmann::json;
using Outcomes = std::vector<std::pair<std::string, std::string>>;  // test, outcome

const char* k_rules = R"(tiers:
  - {name: import,   always: true, tests: [tests/test_import.py]}
  - {name: affected, from_rules: true}
  - {name: full,     scheduled: true, tests: [test/test_nn.py]}
rules:
  - {name: dispatch, paths: ["aten/src/ATen/native/**"], tests: [test/test_ops.py]}
  - {name: compile,  paths: ["torch/_inductor/**"], tests: [test/inductor/test_torchinductor.py]}
  - {name: docs,     paths: ["docs/**"], skip: true}
unmatched: all_rules
)";

class AuditRunTest : public ::testing::Test {
  protected:
    void SetUp() override {
        up = dir.path() / "upstream";
        run_test_git({"init", "--quiet", "-b", "main", up.string()});
        write_file(up / "aten/src/ATen/native/BinaryOps.cpp", "int add();\n");
        write_file(up / "torch/_inductor/fuse.py", "x = 1\n");
        write_file(up / "docs/index.rst", "docs\n");
        write_file(up / "setup.py", "print(1)\n");
        c0 = commit("initial");
        write_file(up / "torch/_inductor/fuse.py", "x = 2\n");
        c1 = commit(
            "[inductor] fuse more (#11)\n\nPull Request resolved: "
            "https://github.com/pytorch/pytorch/pull/11\n");
        write_file(up / "setup.py", "print(2)\n");
        for (int i = 0; i < 201; ++i)
            write_file(up / ("tools/gen/f" + std::to_string(i) + ".txt"), "x\n");
        c2 = commit("Generate the tools (#12)");
        write_file(up / "docs/index.rst", "better docs\n");
        c3 = commit("Direct push to the docs");

        sources.upstream.mirror = dir.path() / "mirror.git";
        sources.upstream.remote = up.string();
        sources.upstream.git_timeout = std::chrono::seconds(60);
        std::vector<std::string> errors;
        auto r = select::parse_rules(k_rules, "selection.yaml", &errors);
        ASSERT_TRUE(r) << (errors.empty() ? "" : errors.front());
        rules = *r;
        auto w = store::open_writer(db_path(), 5000, {});
        ASSERT_TRUE(w) << w.error().message;
        writer = std::move(*w);
    }
    std::filesystem::path db_path() const { return dir.path() / "crcrd.db"; }
    std::string commit(const std::string& message) {
        run_test_git({"-C", up.string(), "add", "-A"});
        run_test_git({"-C", up.string(), "commit", "--quiet", "--allow-empty", "-m", message});
        return run_test_git({"-C", up.string(), "rev-parse", "HEAD"});
    }
    /// A completed run with one job per tier, each with its tests; a tier ends regression when
    /// one of its tests failed, the run when one of its tiers did.
    std::int64_t run(const std::string& event, const std::string& sha,
                     std::optional<std::int64_t> pr,
                     const std::vector<std::pair<std::string, Outcomes>>& tiers) {
        std::int64_t id = 0;
        auto s = writer->run_sync([&](store::Db& db) {
            store::NewRun r;
            r.event = *from_string<RunEvent>(event);
            r.sha = sha;
            r.pr = pr;
            r.ref = event == "pull_request"
                        ? "refs/pull/" + std::to_string(pr.value_or(0)) + "/head"
                        : "refs/heads/main";
            r.delivery_id = "d-" + std::to_string(++deliveries);
            const auto now = std::chrono::system_clock::now();
            id = store::insert_run(db, r, now);
            std::vector<store::PlannedJob> jobs;
            for (std::size_t i = 0; i < tiers.size(); ++i) {
                jobs.push_back({tiers[i].first, static_cast<std::int64_t>(i), "[]", 60000, "[]"});
            }
            store::RunsRepo(db).store_plan(id, store::JsonText(nlohmann::json::object()), jobs,
                                           "nothing", now);
            const auto last_job = db.last_insert_rowid();
            bool failed_run = false;
            for (std::size_t i = 0; i < tiers.size(); ++i) {
                const auto job = last_job - static_cast<std::int64_t>(tiers.size() - 1 - i);
                std::vector<store::TestRow> rows;
                bool failed = false;
                for (const auto& [name, outcome] : tiers[i].second) {
                    rows.push_back({name, *from_string<TestOutcome>(outcome), 0.1, ""});
                    failed = failed || outcome == "failed";
                }
                store::JobsRepo jobs_repo(db);
                jobs_repo.record_results(job, rows, store::JsonText(nlohmann::json::object()), "",
                                         store::JsonText(nlohmann::json::object()),
                                         store::JsonText(nlohmann::json::object()));
                jobs_repo.complete(job, failed ? Conclusion::regression : Conclusion::passed, "", 0,
                                   now);
                failed_run = failed_run || failed;
            }
            store::RunsRepo(db).complete(
                id, failed_run ? Conclusion::regression : Conclusion::passed, "", now);
        });
        EXPECT_TRUE(s) << s.error().message;
        return id;
    }
    Status audit(std::int64_t run_id) {
        FollowupContext ctx{*writer, db_path(), rules, sources, bisect};
        return audit_scheduled_run(ctx, run_id);
    }
    std::vector<store::SelectionMissRow> misses() {
        auto reads = store::AdminReads::for_this_thread(db_path());
        EXPECT_TRUE(reads);
        auto rows = reads->selection_misses({});
        EXPECT_TRUE(rows) << rows.error().message;
        return rows ? *rows : std::vector<store::SelectionMissRow>{};
    }

    TempDir dir;
    std::filesystem::path up;
    std::string c0, c1, c2, c3;
    select::SourceSettings sources;
    select::Rules rules;
    config::BisectConfig bisect;
    std::unique_ptr<store::Writer> writer;
    int deliveries = 0;
};

TEST_F(AuditRunTest, AFailureThatNoPrOrPushRunSelectedIsRecordedWithTheCommitsBetween) {
    const auto prev =
        run("schedule", c0, std::nullopt,
            {{"import", {{"test_import", "passed"}}},
             {"affected", {{"test_ops::a", "passed"}, {"test_inductor::b", "passed"}}},
             {"full", {{"test_nn::c", "passed"}, {"test_nn::d", "flaky"}}}});
    // PR 11 (c1's) ran the affected tier on its own head; PR 12 (c2) had no run; c3's push ran
    // import only.
    const auto pr11 = run(
        "pull_request", "4444444444444444444444444444444444444444", 11,
        {{"import", {{"test_import", "passed"}}}, {"affected", {{"test_inductor::b", "passed"}}}});
    const auto push3 = run("push", c3, std::nullopt, {{"import", {{"test_import", "passed"}}}});
    const auto bad =
        run("schedule", c3, std::nullopt,
            {{"import", {{"test_import", "passed"}}},
             {"affected", {{"test_ops::a", "passed"}, {"test_inductor::b", "failed"}}},
             {"full",
              {{"test_nn::c", "failed"}, {"test_nn::d", "failed"}, {"test_nn::new", "failed"}}}});

    ASSERT_TRUE(audit(bad)) << "audit";
    auto rows = misses();
    // test_inductor::b: PR 11 ran its tier. test_nn::new: it never passed before. The full tier
    // ran in no PR or push run: c and d (flaky there counts as passed) are misses.
    ASSERT_EQ(rows.size(), 2u);
    EXPECT_EQ(rows[0].test, "test_nn::d");
    EXPECT_EQ(rows[1].test, "test_nn::c");
    for (const auto& m : rows) {
        EXPECT_EQ(m.run_id, bad);
        EXPECT_EQ(m.previous_run_id, prev);
        EXPECT_EQ(m.tier, "full");
    }
    const json commits = json::parse(rows[0].commits_json);
    ASSERT_EQ(commits.size(), 3u);
    EXPECT_EQ(commits[0]["sha"], c1);
    EXPECT_EQ(commits[0]["subject"], "[inductor] fuse more (#11)");
    EXPECT_EQ(commits[0]["pr"], 11);
    EXPECT_EQ(commits[0]["paths"], json::array({"torch/_inductor/fuse.py"}));
    EXPECT_EQ(commits[0]["rules"], json::array({"compile"}));
    EXPECT_EQ(commits[0]["runs"], json::array({pr11}));
    EXPECT_FALSE(commits[0].contains("paths_total"));
    EXPECT_EQ(commits[1]["sha"], c2);
    EXPECT_EQ(commits[1]["pr"], 12);
    EXPECT_EQ(commits[1]["paths"].size(), 200u);  // capped
    EXPECT_EQ(commits[1]["paths_total"], 202);
    EXPECT_EQ(commits[1]["rules"], json::array());  // tools/ and setup.py match no rule
    EXPECT_EQ(commits[1]["runs"], json::array());
    EXPECT_EQ(commits[2]["sha"], c3);
    EXPECT_TRUE(commits[2]["pr"].is_null());
    EXPECT_EQ(commits[2]["paths"], json::array({"docs/index.rst"}));
    EXPECT_EQ(commits[2]["rules"], json::array({"docs"}));
    EXPECT_EQ(commits[2]["runs"], json::array({push3}));

    // Idempotent: the lead's followup may run it again after a crash.
    ASSERT_TRUE(audit(bad));
    EXPECT_EQ(misses().size(), 2u);
}

TEST_F(AuditRunTest, NothingIsRecordedWithoutAnEarlierPassOrAnEarlierScheduledRun) {
    const auto first = run("schedule", c0, std::nullopt, {{"full", {{"test_nn::c", "failed"}}}});
    ASSERT_TRUE(audit(first));  // no earlier scheduled run
    const auto second = run("schedule", c3, std::nullopt, {{"full", {{"test_nn::c", "failed"}}}});
    ASSERT_TRUE(audit(second));  // it failed before too
    const auto push = run("push", c3, std::nullopt, {{"full", {{"test_nn::c", "failed"}}}});
    ASSERT_TRUE(audit(push));   // not a scheduled run
    ASSERT_TRUE(audit(12345));  // no such run
    EXPECT_TRUE(misses().empty());
}

TEST_F(AuditRunTest, AGitFailureIsAnErrorSoTheFollowupIsTriedAgain) {
    run("schedule", "5555555555555555555555555555555555555555", std::nullopt,
        {{"full", {{"test_nn::c", "passed"}}}});
    const auto bad = run("schedule", c3, std::nullopt, {{"full", {{"test_nn::c", "failed"}}}});
    auto s = audit(bad);
    ASSERT_FALSE(s);
    EXPECT_EQ(s.error().code, Errc::git);
    EXPECT_TRUE(misses().empty());
}

TEST_F(AuditRunTest, MoreCommitsThanTheCapRecordNothing) {
    run("schedule", c0, std::nullopt, {{"full", {{"test_nn::c", "passed"}}}});
    std::string tip;
    for (std::size_t i = 0; i < k_audit_max_commits; ++i)
        tip = commit("empty " + std::to_string(i));
    const auto bad = run("schedule", tip, std::nullopt, {{"full", {{"test_nn::c", "failed"}}}});
    ASSERT_TRUE(audit(bad));  // 503 commits since c0
    EXPECT_TRUE(misses().empty());
}

}  // namespace
}  // namespace crcrd::sched
