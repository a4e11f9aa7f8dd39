// Planning runs end to end: a real git repository plays upstream PyTorch, the real daemon
// receives signed deliveries, and the planner stores the selection and the jobs.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <set>

#include "crcrd/core/time.hpp"
#include "support/certs.hpp"
#include "support/daemon.hpp"
#include "support/fake_github.hpp"
#include "support/process.hpp"
#include "support/state.hpp"

namespace crcrd {
namespace {

using nlohmann::json;

const char* k_rules = R"(tiers:
  - {name: import,   always: true, tests: [tests/test_import.py], timeout: 10m}
  - {name: smoke,    always: true, tests: [tests/smoke]}
  - {name: affected, from_rules: true, timeout: 60m}
  - {name: full,     scheduled: true, tests: ["${PYTORCH_DIR}/test/test_torch.py"]}
rules:
  - {name: dispatch, paths: ["aten/src/ATen/native/**", "c10/core/**"], tests: ["${PYTORCH_DIR}/test/test_ops.py"]}
  - {name: compile,  paths: ["torch/_inductor/**"], tests: ["${PYTORCH_DIR}/test/inductor/test_torchinductor.py"]}
  - {name: docs,     paths: ["docs/**", "**/*.md"], skip: true}
unmatched: all_rules
docs_only: nothing
)";

/// A small upstream repository: main, and a PR branch whose merge-base is not main's tip.
class Upstream {
  public:
    explicit Upstream(const std::filesystem::path& dir) : m_dir(dir) {
        git({"init", "--quiet", "-b", "main", m_dir.string()});
        write("aten/src/ATen/native/BinaryOps.cpp", "int add();\n");
        write("docs/index.rst", "docs\n");
        write("setup.py", "print(1)\n");
        m_fork_point = commit("initial");
        git({"-C", m_dir.string(), "checkout", "--quiet", "-b", "pr"});
        write("aten/src/ATen/native/BinaryOps.cpp", "int add(int);\n");
        m_pr_head = commit("change a kernel");
        git({"-C", m_dir.string(), "checkout", "--quiet", "-b", "docs", m_fork_point});
        write("docs/index.rst", "better docs\n");
        m_docs_head = commit("docs only");
        git({"-C", m_dir.string(), "checkout", "--quiet", "main"});
        write("setup.py", "print(2)\n");
        m_main = commit("main moves on");
    }
    std::string sha(const std::string& which) const {
        if (which == "pr") return m_pr_head;
        if (which == "docs") return m_docs_head;
        if (which == "fork_point") return m_fork_point;
        return m_main;
    }
    const std::filesystem::path& dir() const { return m_dir; }

  private:
    std::string git(std::vector<std::string> args) {
        args.insert(args.begin(),
                    {"git", "-c", "user.name=test", "-c", "user.email=test@example.org"});
        std::string out;
        if (run_command(args, &out) != 0) throw std::runtime_error("git failed: " + out);
        return out;
    }
    void write(const std::string& rel, const std::string& content) {
        write_file(m_dir / rel, content);
    }
    std::string commit(const std::string& msg) {
        git({"-C", m_dir.string(), "add", "-A"});
        git({"-C", m_dir.string(), "commit", "--quiet", "-m", msg});
        return trim_nl(git({"-C", m_dir.string(), "rev-parse", "HEAD"}));
    }
    static std::string trim_nl(std::string s) {
        while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
        return s;
    }
    std::filesystem::path m_dir;
    std::string m_fork_point, m_pr_head, m_docs_head, m_main;
};

std::string pr_delivery(const std::string& crcr_id, const std::string& head,
                        const std::string& base_sha, int pr = 2) {
    json j = json::parse(fixture_text("crcr/pull_request-synchronize.dispatch.json"));
    j["client_payload"]["delivery_id"] = crcr_id;
    auto& p = j["client_payload"]["payload"];
    p["number"] = pr;
    p["pull_request"]["head"]["sha"] = head;
    p["pull_request"]["base"]["sha"] = base_sha;
    p["pull_request"]["base"]["ref"] = "main";
    return j.dump();
}

class SelectionTest : public ::testing::Test {
  protected:
    void SetUp() override {
        upstream = std::make_unique<Upstream>(dir.path() / "upstream");
        write_file(dir.path() / "selection.yaml", k_rules);
        daemon = std::make_unique<TestDaemon>(
            dir.path(), "upstream: {mirror: state/pytorch.git, remote: " +
                            upstream->dir().string() + "}\nselection: {rules: selection.yaml}\n");
        daemon->start();
    }

    /// The stored selection of a run, once planned.
    json planned(std::int64_t run_id) {
        EXPECT_TRUE(eventually([&] { return !run_row(*daemon, run_id).selection.is_null(); },
                               std::chrono::seconds(60)))
            << daemon->log();
        return run_row(*daemon, run_id).selection;
    }

    std::int64_t post(const std::string& body, const std::string& id) {
        auto r = daemon->post_github(body, id);
        EXPECT_TRUE(r && r->status == 202) << (r ? r->body : r.error().message);
        return json::parse(r->body)["run_id"].get<std::int64_t>();
    }

    TempDir dir;
    std::unique_ptr<Upstream> upstream;
    std::unique_ptr<TestDaemon> daemon;
};

TEST_F(SelectionTest, MirrorDiffsAgainstTheMergeBaseAndQueuesOneJobPerTier) {
    auto run = post(pr_delivery("sel-1", upstream->sha("pr"), upstream->sha("main")), "d-1");
    auto sel = planned(run);
    EXPECT_EQ(sel["source"], "git");
    // Only the PR's own change: main's later change to setup.py is not the PR's.
    EXPECT_EQ(sel["changed_paths"], 1);
    ASSERT_EQ(sel["rules"].size(), 1u);
    EXPECT_EQ(sel["rules"][0]["name"], "dispatch");
    EXPECT_EQ(sel["rules"][0]["paths"], json::array({"aten/src/ATen/native/BinaryOps.cpp"}));
    EXPECT_EQ(sel["tiers"].size(), 3u);
    EXPECT_EQ(count_jobs(*daemon, {.run = run, .state = "queued"}), 3);
    std::string tiers;
    for (const auto& j : job_rows(*daemon, {.run = run}))
        tiers += (tiers.empty() ? "" : ",") + j.tier;
    EXPECT_EQ(tiers, "import,smoke,affected");
    EXPECT_EQ(first_job(*daemon, {.run = run, .tier = "affected"}).tests,
              R"(["${PYTORCH_DIR}/test/test_ops.py"])");
    EXPECT_EQ(first_job(*daemon, {.run = run, .tier = "import"}).timeout_ms, 600000);
    EXPECT_EQ(run_row(*daemon, run).state, "queued");
}

TEST_F(SelectionTest, DocsOnlyChangeWithNothingPolicyCompletesAtOnce) {
    auto run =
        post(pr_delivery("sel-2", upstream->sha("docs"), upstream->sha("fork_point"), 3), "d-2");
    auto sel = planned(run);
    EXPECT_EQ(sel["source"], "git");
    EXPECT_EQ(sel["docs_only"], true);
    EXPECT_TRUE(sel["tiers"].empty());
    EXPECT_EQ(run_state(*daemon, run), "completed/passed");
    EXPECT_NE(run_row(*daemon, run).reason.find("documentation-only"), std::string::npos);
    EXPECT_EQ(count_jobs(*daemon, {.run = run}), 0);
}

TEST_F(SelectionTest, AShaTheMirrorCannotFetchIsRecordedAndEveryRuleRuns) {
    auto run = post(
        pr_delivery("sel-3", "1234567890abcdef1234567890abcdef12345678", upstream->sha("main"), 4),
        "d-3");
    auto sel = planned(run);
    EXPECT_EQ(sel["source"], "unknown");
    EXPECT_NE(sel["note"].get<std::string>().find("git fetch"), std::string::npos) << sel.dump();
    ASSERT_EQ(sel["tiers"].size(), 3u);
    EXPECT_EQ(sel["tiers"][2]["tests"].size(), 2u);
    EXPECT_NE(sel["tiers"][2]["reason"].get<std::string>().find("fail safe"), std::string::npos);
}

TEST_F(SelectionTest, PayloadChangedFilesWinAndClosedPrCancelsJobs) {
    json j = json::parse(fixture_text("crcr/direct-pytorch-crcr.json"));
    j["client_payload"]["changed_files"] = json::array({"torch/_inductor/ir.py"});
    auto run =
        json::parse(daemon->post_standard(j.dump(), "msg-1")->body)["run_id"].get<std::int64_t>();
    auto sel = planned(run);
    EXPECT_EQ(sel["source"], "payload");
    EXPECT_EQ(sel["rules"][0]["name"], "compile");
    EXPECT_EQ(count_jobs(*daemon, {.run = run}), 3);

    auto closed =
        daemon->post_github(fixture_text("crcr/pull_request-closed.dispatch.json"), "close-1");
    ASSERT_EQ(closed->status, 200);
    EXPECT_EQ(count_jobs(*daemon, {.run = run, .state = "cancelled", .reason = "PR closed"}), 3);
}

// Issue 16: a run whose changed paths need no look-up (here the payload's) is stored with its
// plan and its jobs in one commit, so the 202 comes with its jobs queued; a run whose paths
// are in the mirror is planned after that commit, on the planner's thread (git may take
// seconds, the writer never waits for it).
TEST_F(SelectionTest, ARunWithItsPathsInThePayloadIsAcceptedWithItsJobsAlreadyQueued) {
    // The log line that says a run was planned.
    auto planned_line = [&](const std::string& run) {
        std::string line;
        EXPECT_TRUE(eventually([&] {
            const auto log = daemon->log();
            const auto at = log.find("planned run_id=" + run + " sha=");
            if (at == std::string::npos) return false;
            line = log.substr(at, log.find('\n', at) - at);
            return true;
        })) << daemon->log();
        return line;
    };
    json j = json::parse(fixture_text("crcr/direct-pytorch-crcr.json"));
    j["client_payload"]["changed_files"] = json::array({"torch/_inductor/ir.py"});
    auto r = daemon->post_standard(j.dump(), "msg-with-paths");
    ASSERT_TRUE(r && r->status == 202) << (r ? r->body : r.error().message);
    const auto run_id = json::parse(r->body)["run_id"].get<std::int64_t>();
    const auto run = std::to_string(run_id);
    // Read at once, not eventually: the answer came after the commit.
    auto selection = run_row(*daemon, run_id).selection;
    EXPECT_EQ(selection["source"], "payload");
    EXPECT_EQ(count_jobs(*daemon, {.run = run_id, .state = "queued"}), 3);
    EXPECT_NE(planned_line(run).find("(with its run)"), std::string::npos);

    const auto mirrored =
        post(pr_delivery("sel-late", upstream->sha("pr"), upstream->sha("main"), 11), "d-late");
    EXPECT_EQ(planned(mirrored)["source"], "git");
    EXPECT_EQ(planned_line(std::to_string(mirrored)).find("(with its run)"), std::string::npos);
}

TEST_F(SelectionTest, ANewerShaSupersedesThePrsQueuedWork) {
    auto first = post(pr_delivery("sup-1", upstream->sha("pr"), upstream->sha("main"), 9), "s-1");
    planned(first);
    auto r = daemon->post_github(
        pr_delivery("sup-2", upstream->sha("docs"), upstream->sha("main"), 9), "s-2");
    ASSERT_EQ(r->status, 202);
    auto body = json::parse(r->body);
    EXPECT_EQ(body["superseded"], json::array({first}));
    EXPECT_EQ(run_summary(*daemon, first),
              "cancelled/cancelled: superseded by " + upstream->sha("docs"));
    const auto cancelled = job_rows(*daemon, {.run = first, .state = "cancelled"});
    EXPECT_EQ(
        std::count_if(cancelled.begin(), cancelled.end(),
                      [](const JobRow& j) { return j.reason.rfind("superseded by ", 0) == 0; }),
        3);
    // Another PR and the same SHA again are left alone.
    auto other = post(pr_delivery("sup-3", upstream->sha("pr"), upstream->sha("main"), 10), "s-3");
    auto same = daemon->post_github(
        pr_delivery("sup-4", upstream->sha("docs"), upstream->sha("main"), 9), "s-4");
    EXPECT_FALSE(json::parse(same->body).contains("superseded"));
    EXPECT_EQ(run_row(*daemon, other).state, "queued");
}

TEST(FullMatrix, AMissedSlotRunsOnceAtStartUpOnTheNewestShaOfTheRef) {
    TempDir dir;
    Upstream upstream(dir.path() / "upstream");
    write_file(dir.path() / "selection.yaml",
               std::string(k_rules) + "full_matrix: {schedule: \"0 3 * * *\", ref: main}\n");
    TestDaemon d(dir.path(),
                 "upstream: {mirror: state/pytorch.git, remote: " + upstream.dir().string() +
                     "}\nselection: {rules: selection.yaml}\n");
    d.start();
    ASSERT_TRUE(eventually([&] { return full_matrix_next(d).has_value(); }));
    EXPECT_EQ(d.stop(), 0);
    EXPECT_EQ(count_runs(d), 0);
    // The daemon was down over three slots.
    auto three_days_ago =
        std::chrono::duration_cast<std::chrono::seconds>(
            (std::chrono::system_clock::now() - std::chrono::hours(72)).time_since_epoch())
            .count();
    set_full_matrix_next(d, three_days_ago);
    d.start();
    ASSERT_TRUE(
        eventually([&] { return count_runs(d, {.event = "schedule", .planned = true}) == 1; },
                   std::chrono::seconds(30)))
        << d.log();
    const auto scheduled = run_rows(d, {.event = "schedule"});
    ASSERT_FALSE(scheduled.empty());
    EXPECT_EQ(scheduled.front().sha, upstream.sha("main"));
    auto sel = scheduled.front().selection;
    EXPECT_EQ(sel["source"], "schedule");
    EXPECT_EQ(sel["tiers"].size(), 4u);  // every tier, the scheduled one included
    EXPECT_EQ(count_jobs(d), 4);
    // One run for the missed slots, not three.
    EXPECT_EQ(d.stop(), 0);
    EXPECT_EQ(count_runs(d, {.event = "schedule"}), 1);
}

TEST(Concurrency, GroupKeyIsConfigurablePerEvent) {
    TempDir dir;
    TestDaemon d(dir.path(), "selection: {concurrency: {pull_request: none, push: branch}}\n");
    d.start();
    auto push = [&](const std::string& id, const std::string& sha) {
        json j = json::parse(fixture_text("crcr/push.dispatch.json"));
        j["client_payload"]["delivery_id"] = id;
        j["client_payload"]["payload"]["after"] = sha;
        return json::parse(d.post_github(j.dump(), id)->body);
    };
    auto p1 = push("push-1", "1111111111111111111111111111111111111111");
    auto p2 = push("push-2", "2222222222222222222222222222222222222222");
    EXPECT_EQ(p2["superseded"], json::array({p1["run_id"]}));
    auto pr = [&](const std::string& id, const std::string& sha) {
        return json::parse(
            d.post_github(pr_delivery(id, sha, "f95f852bd8fca8fcc58a9a2d6c842781e32a215e"), id)
                ->body);
    };
    auto a = pr("pr-1", "3333333333333333333333333333333333333333");
    auto b = pr("pr-2", "4444444444444444444444444444444444444444");
    EXPECT_FALSE(b.contains("superseded"));  // pull_request: none
    EXPECT_EQ(count_runs(d, {.state = "queued"}), 3);
    (void)a;
}

TEST(SelectionGithubApi, PrFilesAreReadFromEveryPage) {
    TempDir dir;
    // 250 files over three pages, linked as GitHub does (Link: <...&page=2>; rel="next").
    auto base_url = std::make_shared<std::string>();
    FakeGithub gh([base_url](const http::Request& req) {
        if (req.path != "/repos/pytorch/pytorch/pulls/7/files")
            return http::Response::json(404, {{"message", "Not Found"}});
        int page = std::stoi(req.query_param("page").value_or("1"));
        json files = json::array();
        for (int i = 0; i < (page < 3 ? 100 : 50); ++i) {
            files.push_back(
                {{"filename", "c10/core/F" + std::to_string((page - 1) * 100 + i) + ".h"},
                 {"status", "modified"}});
        }
        auto r = http::Response::json(200, files);
        std::string link = "<" + *base_url + req.path + "?per_page=100&page=1>; rel=\"first\"";
        if (page < 3)
            link += ", <" + *base_url + req.path +
                    "?per_page=100&page=" + std::to_string(page + 1) + ">; rel=\"next\"";
        r.headers.emplace_back("Link", link);
        return r;
    });
    *base_url = gh.url();
    write_file(dir.path() / "secrets" / "gh.token", "ghs_test_token\n", 0600);
    write_file(dir.path() / "selection.yaml", k_rules);
    TestDaemon d(dir.path(),
                 "selection: {rules: selection.yaml}\nreport:\n  github: {api_url: \"" + gh.url() +
                     "\", repo: pytorch/pytorch, token_file: secrets/gh.token, ca_file: " +
                     test_certs().ca.string() + "}\n");
    d.start();
    // No mirror is configured, so the API answers.
    auto r = d.post_github(pr_delivery("api-1", "ec26c3e57ca3a959ca5aad62de7213c562f8c821",
                                       "f95f852bd8fca8fcc58a9a2d6c842781e32a215e", 7),
                           "api-d1");
    ASSERT_EQ(r->status, 202);
    auto run = json::parse(r->body)["run_id"].get<std::int64_t>();
    ASSERT_TRUE(
        eventually([&] { return !run_row(d, run).selection.is_null(); }, std::chrono::seconds(60)))
        << d.log();
    auto sel = run_row(d, run).selection;
    EXPECT_EQ(sel["source"], "github_api");
    EXPECT_EQ(sel["changed_paths"], 250);
    EXPECT_EQ(sel["rules"][0]["name"], "dispatch");
    EXPECT_EQ(sel["rules"][0]["matched"], 250);
    // Only the files API: the statuses crcrd reports go to the same server.
    std::vector<http::Request> seen;
    for (auto& req : gh.requests())
        if (req.path.rfind("/repos/pytorch/pytorch/pulls/", 0) == 0) seen.push_back(req);
    ASSERT_EQ(seen.size(), 3u);
    for (const auto& req : seen) {
        EXPECT_EQ(req.header("Authorization").value_or(""), "Bearer ghs_test_token");
        EXPECT_EQ(req.header("Accept").value_or(""), "application/vnd.github+json");
        EXPECT_EQ(req.header("X-GitHub-Api-Version").value_or(""), "2022-11-28");
    }
    EXPECT_EQ(seen[2].query_param("page"), "3");
}

TEST(SelectionGithub, ALinkToAnotherHostIsNotFollowedWithTheToken) {
    TempDir dir;
    // The second server stands for any other host a Link header might name.
    FakeGithub elsewhere(
        [](const http::Request&) { return http::Response::json(200, json::array()); });
    const std::string other = elsewhere.url();
    FakeGithub gh([other](const http::Request& req) {
        if (req.path != "/repos/pytorch/pytorch/pulls/8/files")
            return http::Response::json(404, {{"message", "Not Found"}});
        auto r = http::Response::json(200, json::array({{{"filename", "c10/core/A.h"}}}));
        r.headers.emplace_back("Link", "<" + other + req.path + "?page=2>; rel=\"next\"");
        return r;
    });
    write_file(dir.path() / "secrets" / "gh.token", "ghs_test_token\n", 0600);
    write_file(dir.path() / "selection.yaml", k_rules);
    TestDaemon d(dir.path(),
                 "selection: {rules: selection.yaml}\nreport:\n  github: {api_url: \"" + gh.url() +
                     "\", repo: pytorch/pytorch, token_file: secrets/gh.token, ca_file: " +
                     test_certs().ca.string() + "}\n");
    d.start();
    auto r = d.post_github(pr_delivery("api-2", "ec26c3e57ca3a959ca5aad62de7213c562f8c821",
                                       "f95f852bd8fca8fcc58a9a2d6c842781e32a215e", 8),
                           "api-d2");
    ASSERT_EQ(r->status, 202);
    auto run = json::parse(r->body)["run_id"].get<std::int64_t>();
    ASSERT_TRUE(
        eventually([&] { return !run_row(d, run).selection.is_null(); }, std::chrono::seconds(60)))
        << d.log();
    auto sel = run_row(d, run).selection;
    EXPECT_EQ(sel["source"], "unknown") << sel.dump();  // fails safe: every rule's tests
    EXPECT_NE(sel.dump().find("not followed with the token"), std::string::npos) << sel.dump();
    EXPECT_TRUE(elsewhere.requests().empty()) << "the token went to " << other;
}

// Runs of one PR head stored while a look-up is under way (a label added, a redelivery under a
// new id, a relay retry) are planned in one pass and share one look-up: GitHub is asked once
// for them, not once each, and each run gets the answer.
TEST(SelectionGithubApi, RunsOfOnePrHeadStoredTogetherShareOneLookUp) {
    TempDir dir;
    struct Gate {
        std::mutex mu;
        std::condition_variable cv;
        bool open = false;
        int asked = 0;
        void release() {
            {
                std::lock_guard lk(mu);
                open = true;
            }
            cv.notify_all();
        }
    };
    auto gate = std::make_shared<Gate>();
    FakeGithub gh([gate](const http::Request& req) {
        if (req.path != "/repos/pytorch/pytorch/pulls/31/files")
            return http::Response::json(201, {{"id", 1}});
        std::unique_lock lk(gate->mu);
        ++gate->asked;
        // The first look-up is answered once the other runs are stored.
        gate->cv.wait_for(lk, std::chrono::seconds(60), [&] { return gate->open; });
        return http::Response::json(
            200, json::array({{{"filename", "c10/core/A.h"}}, {{"filename", "docs/x.md"}}}));
    });
    write_file(dir.path() / "secrets" / "gh.token", "ghs_test_token\n", 0600);
    write_file(dir.path() / "selection.yaml", k_rules);
    TestDaemon d(dir.path(),
                 "selection: {rules: selection.yaml}\nreport:\n  github: {api_url: \"" + gh.url() +
                     "\", repo: pytorch/pytorch, token_file: secrets/gh.token, ca_file: " +
                     test_certs().ca.string() + "}\n");
    // Declared after the daemon: a held look-up is answered before the daemon stops.
    struct ReleaseOnExit {
        std::shared_ptr<Gate> gate;
        ~ReleaseOnExit() { gate->release(); }
    } release_on_exit{gate};
    d.start();
    auto post = [&](const std::string& id) -> std::int64_t {
        auto r = d.post_github(pr_delivery(id, "ec26c3e57ca3a959ca5aad62de7213c562f8c821",
                                           "f95f852bd8fca8fcc58a9a2d6c842781e32a215e", 31),
                               id);
        EXPECT_EQ(r->status, 202) << r->body;
        return r->status == 202 ? json::parse(r->body)["run_id"].get<std::int64_t>() : 0;
    };
    std::vector<std::int64_t> runs{post("head-1")};
    ASSERT_TRUE(eventually([&] {
        std::lock_guard lk(gate->mu);
        return gate->asked == 1;
    })) << d.log();
    for (const char* id : {"head-2", "head-3", "head-4"}) runs.push_back(post(id));
    gate->release();
    for (auto run : runs) {
        ASSERT_TRUE(eventually([&] { return !run_row(d, run).selection.is_null(); },
                               std::chrono::seconds(60)))
            << d.log();
        auto sel = run_row(d, run).selection;
        EXPECT_EQ(sel["source"], "github_api") << sel.dump();
        EXPECT_EQ(sel["changed_paths"], 2) << sel.dump();
        EXPECT_EQ(sel["rules"][0]["name"], "dispatch") << sel.dump();
    }
    std::lock_guard lk(gate->mu);
    EXPECT_EQ(gate->asked, 2)
        << "the first run's look-up, then one for the three stored while it ran";
}

// A GitHub App's installation token is exchanged once and serves the look-ups of every run
// after it, not one exchange per run (each exchange here hands out a new token).
TEST(SelectionGithubApi, AnAppsInstallationTokenServesEveryLookUp) {
    TempDir dir;
    std::filesystem::create_directories(dir.path() / "secrets");
    std::string out;
    ASSERT_EQ(run_command({"openssl", "genrsa", "-out",
                           (dir.path() / "secrets" / "app.pem").string(), "2048"},
                          &out),
              0)
        << out;
    std::atomic<int> exchanges{0};
    FakeGithub gh([&exchanges](const http::Request& req) {
        if (req.path == "/app/installations/4242/access_tokens") {
            const int n = ++exchanges;
            const auto expires = std::chrono::system_clock::now() + std::chrono::hours(1);
            return http::Response::json(201,
                                        {{"token", "ghs_installation_" + std::to_string(n)},
                                         {"expires_at", rfc3339(expires).substr(0, 19) + "Z"}});
        }
        if (req.path.rfind("/repos/pytorch/pytorch/pulls/", 0) == 0)
            return http::Response::json(200, json::array({{{"filename", "c10/core/A.h"}}}));
        return http::Response::json(201, {{"id", 1}});  // the statuses crcrd reports
    });
    write_file(dir.path() / "selection.yaml", k_rules);
    TestDaemon d(dir.path(),
                 "selection: {rules: selection.yaml}\nreport:\n  github: {api_url: \"" + gh.url() +
                     "\", repo: pytorch/pytorch, app_id: 777, private_key_file: secrets/app.pem, "
                     "installation_id: 4242, ca_file: " +
                     test_certs().ca.string() + "}\n");
    d.start();
    for (int pr : {21, 22, 23}) {
        const std::string id = "app-" + std::to_string(pr);
        auto r = d.post_github(pr_delivery(id, std::string(38, 'a') + std::to_string(pr),
                                           "f95f852bd8fca8fcc58a9a2d6c842781e32a215e", pr),
                               id);
        ASSERT_EQ(r->status, 202) << r->body;
        auto run = json::parse(r->body)["run_id"].get<std::int64_t>();
        ASSERT_TRUE(eventually([&] { return !run_row(d, run).selection.is_null(); },
                               std::chrono::seconds(60)))
            << d.log();
        auto sel = run_row(d, run).selection;
        EXPECT_EQ(sel["source"], "github_api") << d.log();
    }
    std::set<std::string> tokens;
    for (const auto& req : gh.requests())
        if (req.path.rfind("/repos/pytorch/pytorch/pulls/", 0) == 0)
            tokens.insert(std::string(req.header("Authorization").value_or("")));
    EXPECT_EQ(tokens.size(), 1u) << "the look-ups exchanged a token each";
}

}  // namespace
}  // namespace crcrd
