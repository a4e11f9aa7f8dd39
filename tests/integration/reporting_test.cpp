// Classification and reporting through the real daemon: runs of every class, the statuses
// GitHub receives (an in-test HTTPS server plays GitHub and the relay), failures of that
// server, rate limits, dead letters, a restart with statuses still waiting, a GitHub App.
#include <gtest/gtest.h>

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <algorithm>
#include <nlohmann/json.hpp>

#include <chrono>
#include <map>
#include <mutex>
#include <thread>

#include "crcrd/core/crypto.hpp"
#include "crcrd/core/files.hpp"
#include "crcrd/core/time.hpp"
#include "support/certs.hpp"
#include "support/ci_script.hpp"
#include "support/daemon.hpp"
#include "support/recording_github.hpp"
#include "support/reset_server.hpp"
#include "support/state.hpp"

namespace crcrd {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

const char* k_rules =
    "tiers:\n"
    "  - {name: import, always: true, tests: [ok_import]}\n"
    "  - {name: affected, from_rules: true}\n"
    "rules:\n"
    "  - {name: pass, paths: [\"pass/**\"], tests: [ok_x]}\n"
    "  - {name: fail, paths: [\"fail/**\"], tests: [fail_x, ok_y]}\n"
    "  - {name: flaky, paths: [\"flaky/**\"], tests: [flaky_x, ok_y]}\n"
    "  - {name: device, paths: [\"device/**\"], tests: [device_x]}\n"
    "  - {name: crash, paths: [\"crash/**\"], tests: [crash]}\n"
    "  - {name: stall, paths: [\"stall/**\"], tests: [stall]}\n"
    "unmatched: nothing\n";

std::string sha_of(int n) {
    auto h = crypto::sha256_hex("sha-" + std::to_string(n));
    return h.substr(0, 40);
}

class ReportingTest : public ::testing::Test {
  protected:
    /// `github_yaml`: the body of report.github after api_url, repo and ca_file.
    std::string config(const std::string& api_url, const std::string& github_yaml,
                       const std::string& extra = "") {
        return "selection: {rules: selection.yaml}\n"
               "runners:\n"
               "  - {name: sim-0, labels: [sim], health_check: [/bin/true]}\n"
               "  - {name: sim-1, labels: [sim], health_check: [/bin/true]}\n"
               "execution:\n"
               "  command: [ci/ci.sh]\n"
               "  work_root: state/work\n"
               "  isolation: none\n"  // reporting is under test here; isolation is in
                                      // execution_test
               "  min_free_bytes: 1MiB\n"
               "  infra_retries: 1\n"
               "  device_wait: 30s\n"
               "  health_interval: 1s\n"
               "  stall_timeout: 2s\n"
               "report:\n"
               "  github: {api_url: \"" +
               api_url + "\", repo: pytorch/pytorch, ca_file: " + test_certs().ca.string() +
               ", context_prefix: crcr/spyre, " + github_yaml +
               "}\n"
               "  target_url: \"https://ci.example/runs/{run_id}\"\n"
               "  retry_initial: 100ms\n"
               "  min_interval: " +
               min_interval +
               "\n"
               "  retry_max: 1s\n"
               "  timeout: 2s\n" +
               extra + "admin: {tokens: [{name: ops, role: admin, sha256: " +
               crypto::sha256_hex("ops-token") + "}]}\n";
    }
    void start(const std::string& api_url,
               const std::string& github_yaml = "token_file: secrets/gh.token",
               const std::string& extra = "") {
        write_file(dir.path() / "ci" / "ci.sh", k_ci_script, 0755);
        write_file(dir.path() / "selection.yaml", k_rules);
        write_file(dir.path() / "secrets" / "gh.token", "gh-token-1\n", 0600);
        daemon = std::make_unique<TestDaemon>(dir.path(), config(api_url, github_yaml, extra));
        daemon->start();
    }
    std::int64_t post(const std::vector<std::string>& changed, const std::string& sha, int pr) {
        json j = json::parse(fixture_text("crcr/direct-pytorch-crcr.json"));
        j["client_payload"]["changed_files"] = changed;
        j["client_payload"]["pr_number"] = pr;
        j["client_payload"]["upstream_sha"] = sha;
        auto r = daemon->post_standard(j.dump(), "d-" + sha.substr(0, 12));
        EXPECT_EQ(r->status, 202) << r->body;
        return json::parse(r->body)["run_id"].get<std::int64_t>();
    }
    std::string finished(std::int64_t run) {
        EXPECT_TRUE(eventually(
            [&] {
                return run_state(*daemon, run).rfind("completed/", 0) == 0 ||
                       run_state(*daemon, run).rfind("cancelled/", 0) == 0;
            },
            std::chrono::seconds(90)))
            << run_state(*daemon, run) << "\n"
            << daemon->log();
        return run_state(*daemon, run);
    }
    /// Every outbox row of the GitHub sink is sent, dead or coalesced.
    bool outbox_settled() {
        return count_outbox(*daemon, {.sink = "github", .delivery = "waiting"}) == 0;
    }
    json get(const std::string& path) {
        auto r = daemon->request("GET", path, {{"Authorization", "Bearer ops-token"}}, "");
        EXPECT_TRUE(r && r->status == 200) << (r ? r->body : r.error().message);
        return json::parse(r->body);
    }

    TempDir dir;
    std::unique_ptr<TestDaemon> daemon;
    std::string min_interval = "0s";  // report.min_interval: no pacing unless a test wants it
};

TEST_F(ReportingTest, EveryClassReachesGithubAsExactlyTheContractsRequests) {
    RecordingGithub gh;
    start(gh.url());
    struct Case {
        std::string path, run_class, run_state, tier_state, description_part, run_description;
    };
    const std::vector<Case> cases = {
        {"pass/a.py", "passed", "success", "success", "tests passed", "every selected tier passed"},
        {"flaky/a.py", "flaky", "success", "success", "1 test failed, then passed on rerun",
         "flaky: 1 test failed, then passed on rerun"},
        // The rerun runs only the failed test (execution.rerun: failed_tests); the reason counts
        // the tier's tests, the passed one carried over from the first attempt.
        {"fail/a.py", "regression", "failure", "failure", "1 of 2 tests failed, again on rerun",
         "regression: affected: 1 of 2 tests failed, again on rerun"},
        {"crash/a.py", "infra_error", "error", "error", "exit status 3",
         "infra_error: affected: exit status 3"},
        {"device/a.py", "device_unavailable", "error", "error", "RAS::VFIO::DeviceOpenFail",
         "device_unavailable: affected: device failure in the log: RAS::VFIO::DeviceOpenFail"},
        {"stall/a.py", "timeout", "error", "error", "no output for the stall timeout",
         "timeout: affected: no output for the stall timeout"},
    };
    std::vector<std::pair<std::int64_t, std::string>> runs;
    for (std::size_t i = 0; i < cases.size(); ++i)
        runs.emplace_back(
            post({cases[i].path}, sha_of(static_cast<int>(i)), 10 + static_cast<int>(i)),
            sha_of(static_cast<int>(i)));
    for (std::size_t i = 0; i < cases.size(); ++i) {
        EXPECT_EQ(finished(runs[i].first), "completed/" + cases[i].run_class) << cases[i].path;
    }
    ASSERT_TRUE(eventually([&] { return outbox_settled(); }, std::chrono::seconds(30)))
        << daemon->log();

    for (std::size_t i = 0; i < cases.size(); ++i) {
        const auto& sha = runs[i].second;
        auto accepted = gh.accepted(sha);
        ASSERT_EQ(accepted.size(), 3u) << cases[i].path;  // the run and its two tiers
        // Pending states (when one was sent before the next replaced it in the outbox) come
        // before the final one, and only one final state is sent: none is left pending.
        for (const auto& [ctx, states] : accepted) {
            auto first_final = std::find_if(states.begin(), states.end(),
                                            [](const std::string& st) { return st != "pending"; });
            ASSERT_NE(first_final, states.end()) << ctx;
            EXPECT_EQ(first_final + 1, states.end()) << ctx << ": " << json(states).dump();
        }
        EXPECT_EQ(accepted["crcr/spyre"].back(), cases[i].run_state) << cases[i].path;
        EXPECT_EQ(accepted["crcr/spyre/import"].back(), "success");
        EXPECT_EQ(accepted["crcr/spyre/affected"].back(), cases[i].tier_state) << cases[i].path;
        // The descriptions of the final statuses say why.
        std::string last_description, run_description;
        for (const auto& s : gh.statuses()) {
            auto b = s.body();
            if (s.req.path.find(sha) == std::string::npos) continue;
            if (b["context"] == "crcr/spyre/affected") last_description = b["description"];
            if (b["context"] == "crcr/spyre") run_description = b["description"];
        }
        EXPECT_NE(last_description.find(cases[i].description_part), std::string::npos)
            << last_description;
        EXPECT_EQ(run_description.rfind(cases[i].run_description, 0), 0u) << run_description;
    }
    // The requests themselves (docs/reporting.md, "The sender").
    for (const auto& s : gh.statuses()) {
        const auto& r = s.req;
        EXPECT_EQ(r.method, "POST");
        EXPECT_EQ(r.path.rfind("/repos/pytorch/pytorch/statuses/", 0), 0u) << r.path;
        EXPECT_EQ(r.header("Authorization").value_or(""), "Bearer gh-token-1");
        EXPECT_EQ(r.header("Accept").value_or(""), "application/vnd.github+json");
        EXPECT_EQ(r.header("X-GitHub-Api-Version").value_or(""), "2022-11-28");
        EXPECT_EQ(r.header("User-Agent").value_or(""), std::string("crcrd/") + CRCRD_VERSION);
        auto b = s.body();
        ASSERT_TRUE(b.is_object());
        EXPECT_EQ(b.size(), 4u) << b.dump();
        EXPECT_LE(b["description"].get<std::string>().size(), 140u);
        EXPECT_EQ(b["target_url"].get<std::string>().rfind("https://ci.example/runs/", 0), 0u);
    }
    // The flaky test is marked and counted; the device failure left its evidence.
    auto flaky_run = get("/api/v1/runs/" + std::to_string(runs[1].first));
    const auto& flaky_job = flaky_run["jobs"].back();
    EXPECT_EQ(flaky_job["conclusion"], "flaky");
    EXPECT_EQ(flaky_job["tests"]["flaky"], 1);
    auto flaky_tests = get("/api/v1/jobs/" + std::to_string(flaky_job["id"].get<std::int64_t>()) +
                           "/tests?outcome=flaky");
    ASSERT_EQ(flaky_tests["items"].size(), 1u);
    EXPECT_EQ(flaky_tests["items"][0]["name"], "ci::flaky_x");
    auto device_run = get("/api/v1/runs/" + std::to_string(runs[4].first));
    const auto& device_job = device_run["jobs"].back();
    EXPECT_EQ(device_job["evidence"]["log_lines"][0],
              "RAS::VFIO::DeviceOpenFail: cannot open /dev/vfio/0");
    EXPECT_EQ(device_job["attempt"], 2);  // an infra-class failure is retried (infra_retries: 1)
    // Each run shows its statuses with their delivery state.
    ASSERT_EQ(flaky_run["statuses"].size(), 3u);
    for (const auto& st : flaky_run["statuses"]) {
        EXPECT_EQ(st["delivery"], "sent");
        EXPECT_EQ(st["state"], "success");
    }
}

TEST_F(ReportingTest, ASupersededRunEndsEveryContextCancelled) {
    RecordingGithub gh;
    start(gh.url());
    auto old_run = post({"stall/a.py"}, sha_of(100), 7);
    ASSERT_TRUE(eventually(
        [&] {
            return count_jobs(*daemon, {.run = old_run, .tier = "affected", .state = "running"}) ==
                   1;
        },
        std::chrono::seconds(30)));
    auto new_run = post({"pass/a.py"}, sha_of(101), 7);
    EXPECT_EQ(finished(new_run), "completed/passed");
    ASSERT_TRUE(eventually([&] { return outbox_settled(); }, std::chrono::seconds(30)));
    auto accepted = gh.accepted(sha_of(100));
    ASSERT_EQ(accepted.size(), 3u);
    EXPECT_EQ(accepted["crcr/spyre/import"].back(), "success");  // it had passed before
    EXPECT_EQ(accepted["crcr/spyre/affected"].back(), "error");
    EXPECT_EQ(accepted["crcr/spyre"].back(), "error");
    std::string run_description;
    for (const auto& s : gh.statuses()) {
        auto b = s.body();
        if (s.req.path.find(sha_of(100)) != std::string::npos && b["context"] == "crcr/spyre")
            run_description = b["description"];
    }
    EXPECT_EQ(run_description.rfind("cancelled: superseded by " + sha_of(101), 0), 0u)
        << run_description;
}

TEST_F(ReportingTest, ServerErrorsResetsAndSlowAnswersAreRetriedUntilEveryStatusArrivesInOrder) {
    ResetServer reset;
    start(reset.url());
    auto run = post({"pass/a.py"}, sha_of(200), 20);
    EXPECT_EQ(finished(run), "completed/passed");
    // Connections reset: nothing is delivered, everything waits with the error.
    ASSERT_TRUE(eventually(
        [&] {
            return count_outbox(*daemon,
                                {.sink = "github", .delivery = "waiting", .min_attempts = 2}) >= 3;
        },
        std::chrono::seconds(30)));
    EXPECT_EQ(count_outbox(*daemon, {.delivery = "sent"}), 0);
    auto waiting = get("/api/v1/outbox?state=waiting");
    ASSERT_FALSE(waiting["items"].empty());
    EXPECT_FALSE(waiting["items"][0]["last_error"].get<std::string>().empty());
    EXPECT_GE(reset.accepted(), 3);

    // GitHub comes back, but answers 500 twice and once too slowly first.
    RecordingGithub gh;
    std::atomic<int> calls{0};
    gh.set([&](const http::Request&) {
        int n = ++calls;
        if (n <= 2) return http::Response::json(500, {{"message", "Server Error"}});
        if (n == 3)
            std::this_thread::sleep_for(std::chrono::milliseconds(2500));  // beyond report.timeout
        return http::Response::json(201, {{"id", n}});
    });
    daemon->write_config(config(gh.url(), "token_file: secrets/gh.token"));
    daemon->process().signal(SIGHUP);
    ASSERT_TRUE(eventually([&] { return outbox_settled(); }, std::chrono::seconds(60)))
        << daemon->log();
    auto accepted = gh.accepted(sha_of(200));
    ASSERT_EQ(accepted.size(), 3u);
    for (const auto& [ctx, states] : accepted) {
        // The newest state last, and never an older one after it. (The answer that came too
        // late was stored by GitHub and sent again: the same state twice is what GitHub tolerates.)
        auto first_final = std::find(states.begin(), states.end(), "success");
        EXPECT_TRUE(std::all_of(first_final, states.end(), [](const std::string& st) {
            return st == "success";
        })) << ctx;
        EXPECT_EQ(states.back(), "success") << ctx;
    }
    // Superseded states that waited were coalesced rather than sent late.
    EXPECT_GT(count_outbox(*daemon, {.delivery = "coalesced"}), 0);
    EXPECT_EQ(count_outbox(*daemon, {.delivery = "dead"}), 0);
}

TEST_F(ReportingTest, RateLimitsWaitForRetryAfterAndForTheReset) {
    RecordingGithub gh;
    std::atomic<int> calls{0};
    std::atomic<std::int64_t> reset_at{0};
    gh.set([&](const http::Request&) {
        int n = ++calls;
        if (n == 1) {
            auto r = http::Response::json(429, {{"message", "Too Many Requests"}});
            r.headers.emplace_back("Retry-After", "2");
            return r;
        }
        if (n == 2) {
            auto r = http::Response::json(403, {{"message", "API rate limit exceeded"}});
            auto at = std::chrono::duration_cast<std::chrono::seconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count() +
                      3;
            reset_at = at;
            r.headers.emplace_back("x-ratelimit-remaining", "0");
            r.headers.emplace_back("x-ratelimit-reset", std::to_string(at));
            return r;
        }
        return http::Response::json(201, {{"id", n}});
    });
    start(gh.url());
    auto run = post({"pass/a.py"}, sha_of(300), 30);
    EXPECT_EQ(finished(run), "completed/passed");
    ASSERT_TRUE(eventually([&] { return outbox_settled(); }, std::chrono::seconds(60)))
        << daemon->log();
    auto seen = gh.statuses();
    ASSERT_GE(seen.size(), 4u);
    // Nothing was sent before Retry-After passed, nor before the rate limit's reset.
    EXPECT_GE(seen[1].at - seen[0].at, std::chrono::milliseconds(1900));
    auto reset_time = std::chrono::system_clock::time_point(std::chrono::seconds(reset_at.load()));
    auto third_wall = std::chrono::system_clock::now() - (Clock::now() - seen[2].at);
    EXPECT_GE(third_wall, reset_time - std::chrono::milliseconds(100));
    for (const auto& [ctx, states] : gh.accepted(sha_of(300)))
        EXPECT_EQ(states.back(), "success") << ctx;
}

TEST_F(ReportingTest, PostsToGithubArePacedAndASecondaryRateLimitPausesForAMinute) {
    RecordingGithub gh;
    std::atomic<bool> limited{false};
    gh.set([&](const http::Request&) {
        if (limited)
            return http::Response::json(403,
                                        {{"message", "You have exceeded a secondary rate limit."}});
        return http::Response::json(201, {{"id", 1}});
    });
    min_interval = "300ms";
    start(gh.url(), "token_file: secrets/gh.token", "  file: state/statuses.jsonl\n");
    auto run = post({"pass/a.py"}, sha_of(450), 45);
    EXPECT_EQ(finished(run), "completed/passed");
    ASSERT_TRUE(eventually([&] { return outbox_settled(); }, std::chrono::seconds(30)));
    auto seen = gh.statuses();
    ASSERT_GE(seen.size(), 3u);  // at least the final state of the run and its two tiers
    for (std::size_t i = 1; i < seen.size(); ++i) {
        // Counted from the previous answer, which leaves the server after it was recorded.
        EXPECT_GE(seen[i].at - seen[i - 1].at, std::chrono::milliseconds(300)) << i;
    }
    // A 403 naming a secondary rate limit, without headers: not a dead letter; the GitHub
    // sink waits at least a minute, as GitHub asks.
    limited = true;
    auto second = post({"pass/b.py"}, sha_of(451), 46);
    EXPECT_EQ(finished(second), "completed/passed");
    ASSERT_TRUE(eventually([&] { return count_outbox(*daemon, {.http_status = 403}) == 1; },
                           std::chrono::seconds(30)));
    auto waiting = get("/api/v1/outbox?state=waiting&sink=github");
    ASSERT_FALSE(waiting["items"].empty());
    EXPECT_EQ(count_outbox(*daemon, {.delivery = "dead"}), 0);
    const auto limited_row = outbox_rows(*daemon, {.http_status = 403});
    ASSERT_FALSE(limited_row.empty());
    auto next = parse_rfc3339(limited_row.front().next_attempt_at);
    ASSERT_TRUE(next);
    EXPECT_GE(*next - std::chrono::system_clock::now(), std::chrono::seconds(50));
    // The paused GitHub sink does not hold up the report file: the run's final state is there.
    auto report_file = [&] {
        auto text = read_file(dir.path() / "state" / "statuses.jsonl");
        return text ? *text : std::string();
    };
    ASSERT_TRUE(eventually([&] {
        return report_file().find(
                   "\"context\":\"crcr/spyre\",\"description\":\"every selected tier "
                   "passed\",\"run_id\":" +
                   std::to_string(second)) != std::string::npos;
    })) << report_file();
    // Nothing else was sent to GitHub meanwhile.
    std::size_t after = 0;
    for (const auto& s : gh.statuses())
        if (s.answered == 403) ++after;
    EXPECT_EQ(after, 1u);
}

TEST_F(ReportingTest, ATokenFileRotatedInPlaceIsUsedForTheNextStatuses) {
    RecordingGithub gh;
    start(gh.url());
    auto first = post({"pass/a.py"}, sha_of(460), 47);
    EXPECT_EQ(finished(first), "completed/passed");
    ASSERT_TRUE(eventually([&] { return outbox_settled(); }, std::chrono::seconds(30)));
    write_file(dir.path() / "secrets" / "gh.token", "gh-token-2\n", 0600);  // no reload
    auto second = post({"pass/b.py"}, sha_of(461), 48);
    EXPECT_EQ(finished(second), "completed/passed");
    ASSERT_TRUE(eventually([&] { return outbox_settled(); }, std::chrono::seconds(30)));
    std::size_t old_token = 0, new_token = 0;
    for (const auto& s : gh.statuses()) {
        const auto auth = s.req.header("Authorization").value_or("");
        if (s.req.path.find(sha_of(460)) != std::string::npos) {
            EXPECT_EQ(auth, "Bearer gh-token-1");
            ++old_token;
        }
        if (s.req.path.find(sha_of(461)) != std::string::npos) {
            EXPECT_EQ(auth, "Bearer gh-token-2");
            ++new_token;
        }
    }
    EXPECT_GE(old_token, 3u);
    EXPECT_GE(new_token, 3u);
}

TEST_F(ReportingTest, ARevokedTokenIsRetriedUntilARotatedOneWorksAndNoStatusIsLeftPending) {
    // GitHub answers 401 to the revoked token and 403 (not a rate limit) to a token without the
    // scope: neither makes a dead letter (docs/reporting.md); the statuses wait, counted in
    // /metrics, and arrive once the operator rotates the token file.
    RecordingGithub gh;
    gh.set([](const http::Request& req) {
        const auto auth = req.header("Authorization").value_or("");
        if (auth == "Bearer gh-token-1")
            return http::Response::json(401, {{"message", "Bad credentials"}});
        if (auth == "Bearer gh-token-scopeless") {
            return http::Response::json(403,
                                        {{"message", "Resource not accessible by integration"}});
        }
        return http::Response::json(201, {{"id", 1}});
    });
    start(gh.url());
    auto run = post({"pass/a.py"}, sha_of(470), 49);
    EXPECT_EQ(finished(run), "completed/passed");
    ASSERT_TRUE(eventually(
        [&] {
            return count_outbox(*daemon,
                                {.sink = "github", .http_status = 401, .min_attempts = 2}) > 0;
        },
        std::chrono::seconds(30)))
        << daemon->log();
    auto metrics = daemon->request("GET", "/metrics", {{"Authorization", "Bearer ops-token"}}, "");
    EXPECT_NE(metrics->body.find("crcrd_outbox_credentials_rejected{sink=\"github\"}"),
              std::string::npos)
        << metrics->body;
    write_file(dir.path() / "secrets" / "gh.token", "gh-token-scopeless\n", 0600);
    ASSERT_TRUE(eventually(
        [&] { return count_outbox(*daemon, {.sink = "github", .http_status = 403}) > 0; },
        std::chrono::seconds(30)))
        << daemon->log();
    write_file(dir.path() / "secrets" / "gh.token", "gh-token-2\n", 0600);
    ASSERT_TRUE(eventually([&] { return outbox_settled(); }, std::chrono::seconds(60)))
        << daemon->log();
    EXPECT_EQ(count_outbox(*daemon, {.sink = "github", .delivery = "dead"}), 0);
    // The newest state of every context reached GitHub with the new token: nothing pending.
    std::map<std::string, std::string> last;
    for (const auto& st : gh.statuses()) {
        if (st.req.header("Authorization").value_or("") == "Bearer gh-token-2")
            last[st.body()["context"]] = st.body()["state"];
    }
    ASSERT_FALSE(last.empty());
    for (const auto& [context, state] : last) EXPECT_EQ(state, "success") << context;
}

TEST_F(ReportingTest, A422IsADeadLetterKeepingGithubsMessageAndIsNotRetried) {
    RecordingGithub gh;
    gh.set([](const http::Request& req) {
        auto b = json::parse(req.body, nullptr, false);
        if (b.value("context", "") == "crcr/spyre/import") {
            return http::Response::json(
                422, {{"message", "Validation Failed"},
                      {"errors", json::array({{{"message", "No commit found for SHA"}}})}});
        }
        return http::Response::json(201, {{"id", 1}});
    });
    start(gh.url());
    auto run = post({"pass/a.py"}, sha_of(400), 40);
    EXPECT_EQ(finished(run), "completed/passed");
    ASSERT_TRUE(eventually([&] { return outbox_settled(); }, std::chrono::seconds(30)));
    auto dead = get("/api/v1/outbox?state=dead");
    ASSERT_FALSE(dead["items"].empty());
    for (const auto& row : dead["items"]) {
        EXPECT_EQ(row["context"], "crcr/spyre/import");
        EXPECT_EQ(row["http_status"], 422);
        EXPECT_EQ(row["attempts"], 1);
        EXPECT_NE(row["last_error"].get<std::string>().find("Validation Failed"),
                  std::string::npos);
        EXPECT_NE(row["last_error"].get<std::string>().find("No commit found for SHA"),
                  std::string::npos);
    }
    // One request per dead row: none was retried.
    std::size_t import_requests = 0;
    for (const auto& s : gh.statuses())
        if (s.body()["context"] == "crcr/spyre/import") ++import_requests;
    EXPECT_EQ(import_requests, dead["items"].size());
    auto shown = get("/api/v1/runs/" + std::to_string(run));
    bool found = false;
    for (const auto& st : shown["statuses"]) {
        if (st["context"] == "crcr/spyre/import") {
            EXPECT_EQ(st["delivery"], "dead");
            found = true;
        }
    }
    EXPECT_TRUE(found) << shown["statuses"].dump();

    // Once the cause is fixed, an operator re-sends the newest dead letter of the context.
    gh.set(nullptr);
    auto post_admin = [&](const std::string& path) {
        auto r = daemon->request("POST", path, {{"Authorization", "Bearer ops-token"}}, "");
        EXPECT_TRUE(r);
        return r->status;
    };
    const auto newest = dead["items"][0]["id"].get<std::int64_t>();
    EXPECT_EQ(post_admin("/api/v1/outbox/" + std::to_string(newest) + "/retry"), 200);
    ASSERT_TRUE(eventually([&] { return outbox_row(*daemon, newest).delivery == "sent"; },
                           std::chrono::seconds(30)));
    EXPECT_EQ(gh.accepted(sha_of(400))["crcr/spyre/import"].back(), "success");
    // An older dead letter of that context would now overwrite a newer state: refused.
    if (dead["items"].size() > 1) {
        EXPECT_EQ(
            post_admin("/api/v1/outbox/" +
                       std::to_string(dead["items"].back()["id"].get<std::int64_t>()) + "/retry"),
            409);
    }
    EXPECT_EQ(post_admin("/api/v1/outbox/" + std::to_string(newest) + "/retry"),
              409);  // not dead any more
    EXPECT_EQ(post_admin("/api/v1/outbox/999999/retry"), 404);
}

TEST_F(ReportingTest, StatusesStillWaitingAtAStopAllArriveAfterTheRestartInOrder) {
    RecordingGithub gh;
    std::atomic<bool> down{true};
    gh.set([&](const http::Request&) {
        return down ? http::Response::json(503, {{"message", "Service Unavailable"}})
                    : http::Response::json(201, {{"id", 1}});
    });
    start(gh.url());
    auto run = post({"flaky/a.py"}, sha_of(500), 50);
    EXPECT_EQ(finished(run), "completed/flaky");
    ASSERT_TRUE(eventually(
        [&] { return count_outbox(*daemon, {.sink = "github", .delivery = "waiting"}) >= 3; }));
    EXPECT_EQ(daemon->stop(), 0);
    const auto waiting = count_outbox(*daemon, {.sink = "github", .delivery = "waiting"});
    EXPECT_GE(waiting, 3);
    down = false;
    daemon->start();
    ASSERT_TRUE(eventually([&] { return outbox_settled(); }, std::chrono::seconds(30)))
        << daemon->log();
    auto accepted = gh.accepted(sha_of(500));
    ASSERT_EQ(accepted.size(), 3u);
    for (const auto& [ctx, states] : accepted) {
        EXPECT_EQ(states.size(), 1u) << ctx;  // only the newest state of each context, once
        EXPECT_EQ(states.back(), "success") << ctx;
    }
    EXPECT_EQ(count_outbox(*daemon, {.sink = "github", .delivery = "sent"}), 3);
}

/// Verifies an RS256 JWT with the public key; returns its claims or null.
json verify_jwt(const std::string& jwt, const std::string& public_pem) {
    auto dot1 = jwt.find('.');
    auto dot2 = jwt.rfind('.');
    if (dot1 == std::string::npos || dot1 == dot2) return nullptr;
    auto unb64 = [](std::string s) {
        for (char& c : s) c = c == '-' ? '+' : c == '_' ? '/' : c;
        while (s.size() % 4) s.push_back('=');
        return crypto::base64_decode(s).value_or("");
    };
    auto header = json::parse(unb64(jwt.substr(0, dot1)), nullptr, false);
    if (!header.is_object() || header.value("alg", "") != "RS256") return nullptr;
    const std::string input = jwt.substr(0, dot2);
    const std::string sig = unb64(jwt.substr(dot2 + 1));
    BIO* bio = BIO_new_mem_buf(public_pem.data(), static_cast<int>(public_pem.size()));
    EVP_PKEY* key = PEM_read_bio_PUBKEY(bio, nullptr, nullptr, nullptr);
    BIO_free(bio);
    if (!key) return nullptr;
    EVP_MD_CTX* ctx = EVP_MD_CTX_new();
    bool ok =
        EVP_DigestVerifyInit(ctx, nullptr, EVP_sha256(), nullptr, key) == 1 &&
        EVP_DigestVerify(ctx, reinterpret_cast<const unsigned char*>(sig.data()), sig.size(),
                         reinterpret_cast<const unsigned char*>(input.data()), input.size()) == 1;
    EVP_MD_CTX_free(ctx);
    EVP_PKEY_free(key);
    if (!ok) return nullptr;
    return json::parse(unb64(jwt.substr(dot1 + 1, dot2 - dot1 - 1)), nullptr, false);
}

TEST_F(ReportingTest, AGithubAppJwtIsExchangedForAnInstallationTokenThatIsCached) {
    std::string out;
    std::filesystem::create_directories(dir.path() / "secrets");
    ASSERT_EQ(run_command({"openssl", "genrsa", "-out",
                           (dir.path() / "secrets" / "app.pem").string(), "2048"},
                          &out),
              0)
        << out;
    ASSERT_EQ(run_command({"openssl", "rsa", "-in", (dir.path() / "secrets" / "app.pem").string(),
                           "-pubout", "-out", (dir.path() / "app.pub").string()},
                          &out),
              0)
        << out;
    const std::string public_pem = read_file(dir.path() / "app.pub").value();
    RecordingGithub gh;
    std::atomic<int> exchanges{0};
    std::atomic<int> bad_jwts{0};
    gh.set([&](const http::Request& req) {
        if (req.path == "/app/installations/4242/access_tokens") {
            auto auth = std::string(req.header("Authorization").value_or(""));
            auto claims = auth.rfind("Bearer ", 0) == 0 ? verify_jwt(auth.substr(7), public_pem)
                                                        : json(nullptr);
            const auto now = std::chrono::duration_cast<std::chrono::seconds>(
                                 std::chrono::system_clock::now().time_since_epoch())
                                 .count();
            if (!claims.is_object() || claims.value("iss", "") != "777" ||
                claims["exp"].get<std::int64_t>() > now + 600 ||
                claims["iat"].get<std::int64_t>() > now || req.method != "POST") {
                ++bad_jwts;
                return http::Response::json(401,
                                            {{"message", "A JSON web token could not be decoded"}});
            }
            ++exchanges;
            auto expires = std::chrono::system_clock::now() + std::chrono::hours(1);
            return http::Response::json(201,
                                        {{"token", "ghs_installation_1"},
                                         {"expires_at", rfc3339(expires).substr(0, 19) + "Z"}});
        }
        if (req.header("Authorization").value_or("") != "Bearer ghs_installation_1") {
            return http::Response::json(401, {{"message", "Bad credentials"}});
        }
        return http::Response::json(201, {{"id", 1}});
    });
    start(gh.url(), "app_id: 777, private_key_file: secrets/app.pem, installation_id: 4242");
    auto run = post({"pass/a.py"}, sha_of(600), 60);
    EXPECT_EQ(finished(run), "completed/passed");
    ASSERT_TRUE(eventually([&] { return outbox_settled(); }, std::chrono::seconds(30)))
        << daemon->log();
    EXPECT_EQ(bad_jwts.load(), 0);
    EXPECT_EQ(exchanges.load(), 1);  // cached for every status after the first
    auto accepted = gh.accepted(sha_of(600));
    ASSERT_EQ(accepted.size(), 3u);
    for (const auto& [ctx, states] : accepted) EXPECT_EQ(states.back(), "success") << ctx;
}

TEST_F(ReportingTest, TheReportFileGetsEveryStatus) {
    // (The relay callback has its own stand-in and tests: relay_test.cpp.)
    RecordingGithub gh;
    start(gh.url(), "token_file: secrets/gh.token", "  file: state/statuses.jsonl\n");
    auto run = post({"fail/a.py"}, sha_of(700), 70);
    EXPECT_EQ(finished(run), "completed/regression");
    ASSERT_TRUE(eventually([&] { return count_outbox(*daemon, {.delivery = "waiting"}) == 0; },
                           std::chrono::seconds(30)))
        << daemon->log();
    // The file has a line per status, ending with the final state of each context.
    auto text = read_file(dir.path() / "state" / "statuses.jsonl").value();
    std::map<std::string, std::string> last_state;
    std::size_t lines = 0;
    for (std::size_t pos = 0; pos < text.size();) {
        auto end = text.find('\n', pos);
        auto line = json::parse(text.substr(pos, end - pos));
        EXPECT_EQ(line["sha"], sha_of(700));
        last_state[line["context"]] = line["state"];
        ++lines;
        pos = end + 1;
    }
    // A pending status still waiting when a newer one of its context is written is replaced
    // (coalesced), so how many pending lines precede the finals depends on timing: at least
    // one line per context.
    EXPECT_GE(lines, last_state.size());
    EXPECT_EQ(last_state.size(), 3u) << text;
    EXPECT_EQ(last_state["crcr/spyre"], "failure");
    EXPECT_EQ(last_state["crcr/spyre/import"], "success");
    EXPECT_EQ(last_state["crcr/spyre/affected"], "failure");
}

}  // namespace
}  // namespace crcrd
