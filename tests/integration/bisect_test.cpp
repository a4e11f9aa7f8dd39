// Bisection of trunk regressions (docs/verdicts.md) end to end: a real upstream repository of
// 24 commits on main, a mirror the daemon keeps, pushes that pass and fail, and a test command
// whose outcome depends on the pinned SHA (present_regressed fails once the culprit added the
// file `regressed`) and honours CRCR_RERUN_FILE.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <set>

#include "crcrd/core/crypto.hpp"
#include "crcrd/core/files.hpp"
#include "support/build_stage.hpp"
#include "support/certs.hpp"
#include "support/ci_script.hpp"
#include "support/daemon.hpp"
#include "support/state.hpp"

namespace crcrd {
namespace {

using nlohmann::json;

/// main: 24 commits; from `culprit` on the tree has the file `regressed`.
class History {
  public:
    History(const std::filesystem::path& dir, std::size_t commits, std::size_t culprit)
        : m_dir(dir) {
        run_test_git({"init", "--quiet", "-b", "main", m_dir.string()});
        for (std::size_t i = 0; i < commits; ++i) {
            write_file(m_dir / ("c" + std::to_string(i) + ".txt"), std::to_string(i) + "\n");
            if (i == culprit)
                write_file(m_dir / "regressed", "since commit " + std::to_string(i) + "\n");
            run_test_git({"-C", m_dir.string(), "add", "-A"});
            run_test_git(
                {"-C", m_dir.string(), "commit", "--quiet", "-m", "commit " + std::to_string(i)});
            m_shas.push_back(run_test_git({"-C", m_dir.string(), "rev-parse", "HEAD"}));
        }
    }
    const std::string& sha(std::size_t i) const { return m_shas.at(i); }
    const std::filesystem::path& dir() const { return m_dir; }

  private:
    std::filesystem::path m_dir;
    std::vector<std::string> m_shas;
};

class BisectTest : public ::testing::Test {
  protected:
    static constexpr std::size_t k_commits = 24;
    static constexpr std::size_t k_culprit = 13;

    /// `build`: lines of a build: section (a build stage, docs/build.md), or none.
    void start(std::uint32_t max_runs, int runners = 1, const std::string& build = "") {
        if (auto why = bwrap_unavailable(); !why.empty()) GTEST_SKIP() << why;
        history = std::make_unique<History>(dir.path() / "upstream", k_commits, k_culprit);
        install_ci_script(bin.path());
        write_file(
            dir.path() / "selection.yaml",
            "tiers:\n"
            "  - {name: import, always: true, tests: [ok_import, present_regressed, ok_more]}\n"
            "  - {name: smoke, always: true, tests: [ok_smoke]}\n"
            "rules: []\n"
            "unmatched: nothing\n");
        write_file(dir.path() / "ops.token", "ops-token\n", 0600);
        daemon = std::make_unique<TestDaemon>(
            dir.path(),
            "selection: {rules: selection.yaml}\n"
            "upstream: {mirror: state/pytorch.git, remote: " +
                history->dir().string() +
                "}\n"
                "runners:\n"
                "  - {name: sim-0, labels: [], health_check: [/bin/true]}\n" +
                (runners > 1 ? "  - {name: sim-1, labels: [], health_check: [/bin/true]}\n" : "") +
                "execution:\n"
                "  command: [" +
                (bin.path() / "ci.sh").string() +
                "]\n"
                "  work_root: state/work\n"
                "  min_free_bytes: 1MiB\n"
                "  env: {CI_HOLD: " +
                hold().string() +
                "}\n"
                "bisect: {max_runs: " +
                std::to_string(max_runs) + ", refs: [main]}\n" + build +
                "report: {file: state/statuses.jsonl, context_prefix: crcr/spyre}\n"
                "admin: {tokens: [{name: ops, role: admin, sha256: " +
                crypto::sha256_hex("ops-token") + "}]}\n");
        daemon->start();
    }
    std::filesystem::path hold() const { return bin.path() / "hold"; }

    std::int64_t push(std::size_t commit, const std::string& id) {
        json j = json::parse(fixture_text("crcr/direct-pytorch-crcr.json"));
        auto& cp = j["client_payload"];
        cp.erase("pr_number");
        cp["upstream_sha"] = history->sha(commit);
        cp["ref"] = "refs/heads/main";
        cp["changed_files"] = json::array({"c" + std::to_string(commit) + ".txt"});
        auto r = daemon->post_standard(j.dump(), id);
        EXPECT_EQ(r->status, 202) << r->body;
        return json::parse(r->body)["run_id"].get<std::int64_t>();
    }
    std::string finished(std::int64_t run) { return daemon->finished(run); }
    /// The bisection of `run` once it ended (not running any more).
    json bisection(std::int64_t run) {
        json shown;
        EXPECT_TRUE(eventually(
            [&] {
                shown = get("/api/v1/runs/" + std::to_string(run));
                return shown.contains("bisect") && shown["bisect"]["state"] != "running";
            },
            std::chrono::seconds(120)))
            << shown.dump(2) << "\n"
            << daemon->log();
        return shown.value("bisect", json::object());
    }
    json get(const std::string& path) {
        auto r = daemon->request("GET", path, {{"Authorization", "Bearer ops-token"}}, "");
        EXPECT_TRUE(r);
        return r ? json::parse(r->body, nullptr, false) : json();
    }
    std::string ctl(const std::vector<std::string>& args) {
        std::vector<std::string> argv = {CRCRCTL_BIN,
                                         "--url",
                                         daemon->url(""),
                                         "--cacert",
                                         test_certs().ca.string(),
                                         "--token-file",
                                         (dir.path() / "ops.token").string()};
        argv.insert(argv.end(), args.begin(), args.end());
        std::string out;
        EXPECT_EQ(run_command(argv, &out), 0) << out;
        return out;
    }

    TempDir dir;
    TempDir bin;
    std::unique_ptr<History> history;
    std::unique_ptr<TestDaemon> daemon;
};

TEST_F(BisectTest, ATrunkRegressionIsBisectedToItsCulpritWithRunsOfOnlyTheFailingTest) {
    start(8);
    auto good = push(0, "b-good");
    EXPECT_EQ(finished(good), "completed/passed");
    auto bad = push(k_commits - 1, "b-bad");
    EXPECT_EQ(finished(bad), "completed/regression");

    auto b = bisection(bad);
    EXPECT_EQ(b["state"], "found") << b.dump(2);
    EXPECT_EQ(b["culprit"], history->sha(k_culprit));
    EXPECT_EQ(b["good"], history->sha(0));
    EXPECT_EQ(b["good_run_id"], good);
    EXPECT_EQ(b["bad"], history->sha(k_commits - 1));
    EXPECT_EQ(b["commits"], k_commits - 1);
    EXPECT_EQ(b["tier"], "import");
    EXPECT_EQ(b["tests"], json::array({"ci::present_regressed"}));
    // 23 commits: at most ceil(log2 23) = 5 runs, each a normal run of event bisect on a commit
    // of the range, judged by the failing test alone.
    const auto& runs = b["runs"];
    ASSERT_GE(runs.size(), 1u);
    EXPECT_LE(runs.size(), 5u);
    for (const auto& r : runs) {
        const auto id = r["run_id"].get<std::int64_t>();
        EXPECT_EQ(run_row(*daemon, id).event, "bisect");
        EXPECT_EQ(r["state"], "completed");
        std::size_t index = 0;
        while (index < k_commits && history->sha(index) != r["sha"].get<std::string>()) ++index;
        ASSERT_LT(index, k_commits) << r.dump();
        EXPECT_EQ(r["verdict"], index >= k_culprit ? "bad" : "good") << r.dump();
        // Only the bisected tier, and in it only the failing test (CRCR_RERUN_FILE).
        std::set<std::string> tiers;
        for (const auto& j : job_rows(*daemon, {.run = id})) tiers.insert(j.tier);
        EXPECT_EQ(tiers, std::set<std::string>{"import"});
        std::set<std::string> tests;
        for (const auto& t : test_result_rows(*daemon, {.run = id, .attempt = 1}))
            tests.insert(t.name);
        EXPECT_EQ(tests, std::set<std::string>{"ci::present_regressed"});
        // No status of its own.
        EXPECT_EQ(count_outbox(*daemon, {.run = id}), 0);
    }
    // The bad run's aggregate status names the culprit.
    auto aggregate = [&] {
        return last_outbox_row(*daemon, {.run = bad, .context = "crcr/spyre"});
    };
    auto descriptions = [&] {
        std::string all;
        for (const auto& row : outbox_rows(*daemon, {.run = bad})) all += row.description + " | ";
        return all;
    };
    EXPECT_TRUE(eventually([&] {
        const auto row = aggregate();
        return row && row->description.find("culprit " + history->sha(k_culprit).substr(0, 7)) !=
                          std::string::npos;
    })) << descriptions();
    ASSERT_TRUE(aggregate());
    EXPECT_EQ(aggregate()->state, "failure");
    // crcrctl runs show prints it.
    auto out = ctl({"runs", "show", std::to_string(bad)});
    EXPECT_NE(out.find("bisection of import"), std::string::npos) << out;
    EXPECT_NE(out.find("culprit " + history->sha(k_culprit)), std::string::npos) << out;
    EXPECT_NE(out.find("VERDICT"), std::string::npos) << out;
}

// A build stage whose build breaks at the culprit (docs/build.md): the build's regression is
// bisected with runs of the build alone, on the build slot, never a card.
TEST_F(BisectTest, ABuildRegressionIsBisectedWithRunsOfTheBuildAlone) {
    install_script(bin.path() / "build.sh",
                   "#!/bin/sh\n"
                   "if [ -e \"$CRCR_PYTORCH_DIR/regressed\" ]; then\n"
                   "  echo \"ops.cpp:1: error: at::regressed was not declared\"; exit 2\n"
                   "fi\n"
                   "echo ok > \"$CRCR_BUILD_OUT/lib.txt\"\n");
    start(8, 1,
          "build: {command: [" + (bin.path() / "build.sh").string() +
              "], cache_dir: state/builds, timeout: 1m}\n");
    auto good = push(0, "bb-good");
    EXPECT_EQ(finished(good), "completed/passed");
    auto bad = push(k_commits - 1, "bb-bad");
    EXPECT_EQ(finished(bad), "completed/regression");
    EXPECT_EQ(
        last_job(*daemon, {.run = bad, .tier = "build"}).reason,
        "the build failed (exit 2), again on rerun; " + history->sha(0).substr(0, 7) + " builds");

    auto b = bisection(bad);
    EXPECT_EQ(b["state"], "found") << b.dump(2);
    EXPECT_EQ(b["tier"], "build");
    EXPECT_EQ(b["tests"], json::array());
    EXPECT_EQ(b["culprit"], history->sha(k_culprit));
    EXPECT_EQ(b["good_run_id"], good);
    const auto& runs = b["runs"];
    ASSERT_GE(runs.size(), 1u);
    EXPECT_LE(runs.size(), 5u);
    for (const auto& r : runs) {
        const auto id = r["run_id"].get<std::int64_t>();
        std::size_t index = 0;
        while (index < k_commits && history->sha(index) != r["sha"].get<std::string>()) ++index;
        ASSERT_LT(index, k_commits) << r.dump();
        EXPECT_EQ(r["verdict"], index >= k_culprit ? "bad" : "good") << r.dump();
        // The build alone, on the build slot: no card was leased.
        for (const auto& j : job_rows(*daemon, {.run = id})) {
            EXPECT_EQ(j.tier, "build") << r.dump();
            EXPECT_EQ(j.slot, "build-1") << r.dump();
        }
        EXPECT_EQ(count_outbox(*daemon, {.run = id}), 0);
    }
    auto out = ctl({"runs", "show", std::to_string(bad)});
    EXPECT_NE(out.find("bisection of build"), std::string::npos) << out;
    EXPECT_NE(out.find("culprit " + history->sha(k_culprit)), std::string::npos) << out;
}

TEST_F(BisectTest, WithASmallBudgetTheBisectionStopsAndNamesTheRangeLeft) {
    start(2);
    EXPECT_EQ(finished(push(0, "s-good")), "completed/passed");
    auto bad = push(k_commits - 1, "s-bad");
    EXPECT_EQ(finished(bad), "completed/regression");
    auto b = bisection(bad);
    EXPECT_EQ(b["state"], "budget_spent") << b.dump(2);
    EXPECT_TRUE(b["culprit"].is_null());
    EXPECT_EQ(b["runs"].size(), 2u);
    // 23 suspects, halved twice: 6 are left, and the range still holds the culprit.
    EXPECT_NE(b["reason"].get<std::string>().find("one of 6 commits"), std::string::npos)
        << b.dump(2);
}

TEST_F(BisectTest, WithoutABudgetOnlyTheRangeIsReported) {
    start(0);
    EXPECT_EQ(finished(push(0, "r-good")), "completed/passed");
    auto bad = push(k_commits - 1, "r-bad");
    EXPECT_EQ(finished(bad), "completed/regression");
    auto b = bisection(bad);
    EXPECT_EQ(b["state"], "range") << b.dump(2);
    EXPECT_EQ(b["commits"], k_commits - 1);
    EXPECT_TRUE(b["runs"].empty());
    EXPECT_EQ(count_runs(*daemon, {.event = "bisect"}), 0);
}

TEST_F(BisectTest, ARegressionWithNoEarlierPassHasNoRange) {
    start(8);
    auto bad = push(k_commits - 1, "n-bad");
    EXPECT_EQ(finished(bad), "completed/regression");
    auto b = bisection(bad);
    EXPECT_EQ(b["state"], "no_good") << b.dump(2);
    EXPECT_TRUE(b["good"].is_null());
}

TEST_F(BisectTest, ABranchBrokenOverTwoPushesIsBisectedOnceAndCancellingABisectRunEndsIt) {
    start(8, 2);
    // The bisect runs' command waits while the hold file is there.
    write_file(hold(), "");
    EXPECT_EQ(finished(push(0, "c-good")), "completed/passed");
    auto bad = push(k_commits - 2, "c-bad");
    EXPECT_EQ(finished(bad), "completed/regression");
    std::string running;
    ASSERT_TRUE(eventually(
        [&] {
            const auto bisecting = run_rows(*daemon, {.event = "bisect", .state = "running"});
            running = bisecting.empty() ? "" : std::to_string(bisecting.back().id);
            return !running.empty();
        },
        std::chrono::seconds(60)))
        << daemon->log();
    // The next push fails too while the first bisection runs: its range is reported, no second
    // bisection spends devices on the same commits.
    auto again = push(k_commits - 1, "c-again");
    EXPECT_EQ(finished(again), "completed/regression");
    auto second = bisection(again);
    EXPECT_EQ(second["state"], "range") << second.dump(2);
    EXPECT_NE(second["reason"].get<std::string>().find("(of run " + std::to_string(bad) +
                                                       ") is bisecting import"),
              std::string::npos)
        << second.dump(2);
    EXPECT_EQ(second["commits"], k_commits - 1);
    ctl({"runs", "cancel", running});
    std::filesystem::remove(hold());
    auto b = bisection(bad);
    EXPECT_EQ(b["state"], "cancelled") << b.dump(2);
    EXPECT_EQ(b["runs"].size(), 1u);
    EXPECT_EQ(count_runs(*daemon, {.event = "bisect"}), 1);
}

}  // namespace
}  // namespace crcrd
