// One lane per sink, and GitHub's budget, through the real daemon (docs/reporting.md, "Lanes and
// budget"): a GitHub that hangs holds up neither the relay's callbacks nor the report file; after
// a backlog the GitHub lane spends its budget on verdicts first, newest run first, never beyond
// it, and still counts it after a restart.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <condition_variable>
#include <mutex>
#include <sstream>

#include "crcrd/core/crypto.hpp"
#include "crcrd/core/files.hpp"
#include "support/certs.hpp"
#include "support/ci_script.hpp"
#include "support/daemon.hpp"
#include "support/fake_relay.hpp"
#include "support/recording_github.hpp"
#include "support/state.hpp"

namespace crcrd {
namespace {

using nlohmann::json;

constexpr const char* k_rules =
    "tiers:\n"
    "  - {name: import, always: true, tests: [ok_import]}\n"
    "  - {name: affected, from_rules: true}\n"
    "rules:\n"
    "  - {name: pass, paths: [\"pass/**\"], tests: [ok_x]}\n"
    "unmatched: nothing\n";

/// Holds every answer of the stand-in GitHub until opened.
class Gate {
  public:
    void wait() {
        std::unique_lock lk(m_mu);
        m_cv.wait(lk, [&] { return m_open; });
    }
    void open() {
        {
            std::lock_guard lk(m_mu);
            m_open = true;
        }
        m_cv.notify_all();
    }

  private:
    std::mutex m_mu;
    std::condition_variable m_cv;
    bool m_open = false;
};

class LanesTest : public ::testing::Test {
  protected:
    void SetUp() override {
        gh.set([this](const http::Request& req) {
            if (req.method != "POST") return http::Response::json(200, json::array());
            gate.wait();
            return http::Response::json(201, {{"id", 1}});
        });
    }
    void TearDown() override { gate.open(); }

    /// `budget`: report.github.budget.
    void start(const std::string& budget) {
        write_file(dir.path() / "ci" / "ci.sh", k_ci_script, 0755);
        write_file(dir.path() / "selection.yaml", k_rules);
        write_file(dir.path() / "secrets" / "gh.token", "gh-token-1\n", 0600);
        write_file(dir.path() / "secrets" / "relay.token", "relay-oidc-token-1\n", 0600);
        const std::string ca = test_certs().ca.string();
        daemon = std::make_unique<TestDaemon>(
            dir.path(),
            "selection: {rules: selection.yaml}\n"
            "runners: [{name: sim-0, labels: [sim], health_check: [/bin/true]}]\n"
            "execution: {command: [ci/ci.sh], work_root: state/work, isolation: none, "
            "min_free_bytes: 1MiB}\n"
            "report:\n"
            "  github: {api_url: \"" +
                gh.url() + "\", repo: pytorch/pytorch, ca_file: " + ca +
                ", token_file: secrets/gh.token, context_prefix: crcr/spyre, budget: " + budget +
                "}\n"
                "  crcr_callback: {url: \"" +
                relay.url() + "\", ca_file: " + ca +
                ", token_file: secrets/relay.token}\n"
                "  file: state/report.jsonl\n"
                "  min_interval: 0s\n"
                "  timeout: 120s\n"
                "admin: {tokens: [{name: ops, role: admin, sha256: " +
                crypto::sha256_hex("ops-token") + "}]}\n");
        daemon->start();
    }
    /// A run of the direct form on `sha` for PR `pr` (no callbacks: the relay did not dispatch
    /// it).
    std::int64_t direct(const std::string& sha, int pr) {
        json j = json::parse(fixture_text("crcr/direct-pytorch-crcr.json"));
        j["client_payload"]["changed_files"] = {"pass/a.py"};
        j["client_payload"]["pr_number"] = pr;
        j["client_payload"]["upstream_sha"] = sha;
        auto r = daemon->post_standard(j.dump(), "d-" + sha.substr(0, 12));
        EXPECT_EQ(r->status, 202) << r->body;
        return json::parse(r->body)["run_id"].get<std::int64_t>();
    }
    /// The relay's pull_request dispatch (callbacks expected).
    std::int64_t dispatched(const std::string& crcr_id) {
        json j = json::parse(fixture_text("crcr/pull_request-synchronize.dispatch.json"));
        j["client_payload"]["delivery_id"] = crcr_id;
        relay.dispatched(crcr_id);
        auto r = daemon->post_github(j.dump(), "t-" + crcr_id);
        EXPECT_EQ(r->status, 202) << r->body;
        return json::parse(r->body)["run_id"].get<std::int64_t>();
    }
    json lane(const std::string& sink) {
        auto r = daemon->request("GET", "/api/v1/outbox?limit=1",
                                 {{"Authorization", "Bearer ops-token"}}, "");
        EXPECT_TRUE(r && r->status == 200) << (r ? r->body : r.error().message);
        const json body = json::parse(r->body);
        for (const auto& l : body["lanes"])
            if (l["sink"] == sink) return l;
        ADD_FAILURE() << "no lane " << sink << ": " << r->body;
        return json::object();
    }
    /// "<context>=<state>" of every status POST GitHub answered, in order.
    std::vector<std::string> posted() {
        std::vector<std::string> out;
        for (const auto& s : gh.statuses()) {
            auto b = s.body();
            out.push_back(b["context"].get<std::string>() + "=" + b["state"].get<std::string>() +
                          "@" + s.req.path.substr(s.req.path.rfind('/') + 1, 7));
        }
        return out;
    }

    Gate gate;
    RecordingGithub gh;
    FakeRelay relay;
    TempDir dir;
    std::unique_ptr<TestDaemon> daemon;
};

TEST_F(LanesTest, AGithubThatHangsHoldsUpNeitherTheRelayNorTheReportFile) {
    start("[]");
    const auto run = dispatched("guid-lanes-1");
    EXPECT_EQ(daemon->finished(run), "completed/passed");
    // GitHub holds its first POST unanswered: the GitHub lane waits in it, the others go on.
    ASSERT_TRUE(eventually([&] { return relay.accepted().size() == 2; }, std::chrono::seconds(30)))
        << relay.accepted().size() << " callbacks\n"
        << daemon->log();
    ASSERT_TRUE(eventually(
        [&] {
            return count_outbox(*daemon, {.run = run, .sink = "file", .delivery = "waiting"}) == 0;
        },
        std::chrono::seconds(30)));
    const auto lines = read_file(dir.path() / "state" / "report.jsonl").value();
    bool verdict = false;
    std::istringstream in(lines);
    for (std::string line; std::getline(in, line);) {
        const auto j = json::parse(line);
        verdict = verdict || (j["context"] == "crcr/spyre" && j["state"] == "success");
    }
    EXPECT_TRUE(verdict) << lines;
    EXPECT_TRUE(gh.statuses().empty()) << "the first POST is still unanswered";
    EXPECT_GT(lane("github")["waiting"].get<int>(), 0);
    EXPECT_EQ(lane("callback")["waiting"], 0);
    EXPECT_EQ(lane("file")["waiting"], 0);
    // Once GitHub answers, its lane catches up: the run's verdict arrives there too.
    gate.open();
    ASSERT_TRUE(eventually(
        [&] {
            return count_outbox(*daemon, {.run = run, .sink = "github", .delivery = "waiting"}) ==
                   0;
        },
        std::chrono::seconds(30)))
        << daemon->log();
    const auto p = posted();
    EXPECT_NE(
        std::find_if(p.begin(), p.end(),
                     [](const std::string& s) { return s.rfind("crcr/spyre=success", 0) == 0; }),
        p.end());
}

TEST_F(LanesTest, AfterABacklogTheBudgetGoesToVerdictsNewestRunFirstAndHoldsAcrossARestart) {
    start("[{requests: 5, per: 1h}]");
    const std::string sha[3] = {crypto::sha256_hex("lane-1").substr(0, 40),
                                crypto::sha256_hex("lane-2").substr(0, 40),
                                crypto::sha256_hex("lane-3").substr(0, 40)};
    std::int64_t runs[3];
    for (int i = 0; i < 3; ++i) runs[i] = direct(sha[i], 71 + i);
    for (auto run : runs) EXPECT_EQ(daemon->finished(run), "completed/passed");
    // The lane's first POST (a first state of run 1) still hangs; the three runs ended meanwhile.
    gate.open();
    ASSERT_TRUE(eventually([&] { return lane("github")["budget_spent"] == true; },
                           std::chrono::seconds(30)))
        << daemon->log();
    auto p = posted();
    ASSERT_EQ(p.size(), 5u) << testing::PrintToString(p);
    // After the one that hung: each run's verdict, newest first, then the newest run's tiers'.
    EXPECT_EQ(p[1], "crcr/spyre=success@" + sha[2].substr(0, 7));
    EXPECT_EQ(p[2], "crcr/spyre=success@" + sha[1].substr(0, 7));
    EXPECT_EQ(p[3], "crcr/spyre=success@" + sha[0].substr(0, 7));
    EXPECT_EQ(p[4].substr(p[4].rfind('@')), "@" + sha[2].substr(0, 7));
    EXPECT_NE(p[4].find("=success"), std::string::npos) << p[4];
    auto github = lane("github");
    EXPECT_EQ(github["budget"][0]["used"], 5);
    EXPECT_EQ(github["budget"][0]["left"], 0);
    EXPECT_GT(github["waiting"].get<int>(), 0);
    EXPECT_TRUE(github["oldest_final_waiting_at"].is_string());
    // A restart does not start the hour afresh: the new process counts the five and sends none.
    EXPECT_EQ(daemon->stop(), 0);
    daemon->start();
    ASSERT_TRUE(eventually([&] { return lane("github")["budget_spent"] == true; },
                           std::chrono::seconds(30)))
        << daemon->log();
    EXPECT_EQ(lane("github")["budget"][0]["used"], 5);
    EXPECT_EQ(gh.statuses().size(), 5u);
}

}  // namespace
}  // namespace crcrd
