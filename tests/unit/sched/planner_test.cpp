// The planner's changed-path look-ups: those that need the GitHub API go out concurrently,
// not one run after the other, and every run is still planned from its own answer.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <condition_variable>
#include <mutex>
#include <set>

#include "crcrd/core/time.hpp"
#include "crcrd/sched/planner.hpp"
#include "crcrd/store/runs.hpp"
#include "crcrd/store/sqlite.hpp"
#include "crcrd/store/writer.hpp"
#include "support/certs.hpp"
#include "support/fake_github.hpp"
#include "support/temp_dir.hpp"

namespace crcrd::sched {
namespace {

using nlohmann::json;

TEST(Planner, PullRequestFilesOfABurstAreLookedUpConcurrently) {
    TempDir dir;
    // PR n changed one file, under a rule of its own.
    FakeGithub gh([](const http::Request& req) {
        const std::string prefix = "/repos/pytorch/pytorch/pulls/";
        if (req.path.rfind(prefix, 0) != 0)
            return http::Response::json(404, {{"message", "Not Found"}});
        const std::string pr =
            req.path.substr(prefix.size(), req.path.find('/', prefix.size()) - prefix.size());
        return http::Response::json(
            200, json::array({{{"filename", "area" + pr + "/f.cpp"}, {"status", "modified"}}}));
    });
    write_file(dir.path() / "gh.token", "ghs_test_token\n", 0600);
    std::string yaml = "tiers:\n  - {name: affected, from_rules: true}\nrules:\n";
    for (int pr = 1; pr <= 8; ++pr)
        yaml += "  - {name: r" + std::to_string(pr) + ", paths: [\"area" + std::to_string(pr) +
                "/**\"], tests: [t" + std::to_string(pr) + ".py]}\n";
    std::vector<std::string> errors;
    auto rules = select::parse_rules(yaml, "rules.yaml", &errors);
    ASSERT_TRUE(rules) << (errors.empty() ? "" : errors[0]);

    const auto db_path = dir.path() / "crcrd.db";
    auto writer = store::open_writer(db_path, 5000, {});
    ASSERT_TRUE(writer) << writer.error().message;
    // Eight pull requests stored before the planner looks: one pass reads them all.
    ASSERT_TRUE((*writer)->run_sync([](store::Db& db) {
        for (int pr = 1; pr <= 8; ++pr) {
            store::NewRun r;
            r.event = RunEvent::pull_request;
            r.sha = std::string(39, '0') + std::to_string(pr);
            r.pr = pr;
            r.ref = "refs/pull/" + std::to_string(pr) + "/head";
            r.delivery_id = "d-" + std::to_string(pr);
            store::insert_run(db, r, std::chrono::system_clock::now());
        }
    }));

    auto cfg = std::make_shared<PlannerConfig>();
    cfg->rules = std::make_shared<const select::Rules>(std::move(*rules));
    config::GithubReportConfig github;
    github.api_url = gh.url();
    github.repo = "pytorch/pytorch";
    github.token_file = dir.path() / "gh.token";
    github.ca_file = test_certs().ca;
    cfg->sources.github = github;
    Planner planner(**writer, db_path, cfg);
    std::mutex mu;
    std::condition_variable cv;
    int planned = 0;
    planner.on_planned([&] {
        std::lock_guard lk(mu);
        ++planned;
        cv.notify_all();
    });
    planner.start();
    {
        std::unique_lock lk(mu);
        // The bound only ends a broken run; the wait ends at the eighth commit.
        ASSERT_TRUE(cv.wait_for(lk, std::chrono::seconds(60), [&] { return planned == 8; }))
            << planned << " planned";
    }
    planner.stop();

    // One after the other, the look-ups would all go over one kept-alive connection.
    std::set<std::string> connections;
    for (const auto& req : gh.requests()) connections.insert(req.remote);
    EXPECT_EQ(gh.requests().size(), 8u);
    EXPECT_GE(connections.size(), 2u)
        << "the eight look-ups shared one connection: they were not concurrent";

    // Each run was planned from its own pull request's files.
    auto checked = (*writer)->run_sync([](store::Db& db) {
        for (int pr = 1; pr <= 8; ++pr) {
            auto st = db.prepare("SELECT selection FROM runs WHERE pr = ?");
            st.bind(1, std::int64_t{pr});
            ASSERT_TRUE(st.step());
            const auto sel = json::parse(st.text(0));
            EXPECT_EQ(sel["source"], "github_api");
            ASSERT_EQ(sel["rules"].size(), 1u) << sel.dump();
            EXPECT_EQ(sel["rules"][0]["name"], "r" + std::to_string(pr));
        }
    });
    EXPECT_TRUE(checked) << checked.error().message;
}

}  // namespace
}  // namespace crcrd::sched
