// Missed-delivery recovery (docs/ingest.md) end to end: an in-test GitHub holds the hook's
// deliveries that crcrd missed while it was stopped (some failed, one redelivered already, one
// that crcrd did accept although GitHub saw it fail, one too old), lists them with cursor
// paging, and its redelivery endpoint really re-sends the stored request to crcrd.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <condition_variable>
#include <map>
#include <mutex>
#include <thread>

#include "crcrd/core/crypto.hpp"
#include "crcrd/core/time.hpp"
#include "crcrd/ingest/signature.hpp"
#include "support/certs.hpp"
#include "support/daemon.hpp"
#include "support/fake_github.hpp"
#include "support/state.hpp"

namespace crcrd {
namespace {

using nlohmann::json;
using std::chrono::hours;
using std::chrono::system_clock;

/// GitHub's side of one webhook: what it delivers, the log of its attempts, redelivery.
class Hook {
  public:
    struct Attempt {
        std::int64_t id;
        std::string guid;
        std::string delivered_at;
        int status_code;
        bool redelivery;
    };
    explicit Hook(TestDaemon*& daemon)
        : m_daemon(daemon), m_server([this](const http::Request& req) { return handle(req); }) {}
    ~Hook() {
        for (auto& t : m_threads) t.join();
    }
    std::string url() const { return m_server.url(); }
    /// A delivery GitHub attempted at `at` and that was answered `status_code` (0: no answer).
    void attempted(const std::string& guid, const std::string& body, system_clock::time_point at,
                   int status_code) {
        std::lock_guard lk(m_mu);
        m_bodies[guid] = body;
        m_log.insert(m_log.begin(), Attempt{m_next_id++, guid, rfc3339(at).substr(0, 19) + "Z",
                                            status_code, false});
    }
    /// The daemon's start() has returned, so its port is known: redeliveries asked for before
    /// (the daemon's first recovery pass runs as soon as it listens) are sent from now on.
    void daemon_started() {
        {
            std::lock_guard lk(m_mu);
            m_started = true;
        }
        m_started_cv.notify_all();
    }
    std::vector<std::string> redelivery_requests() const {
        std::lock_guard lk(m_mu);
        return m_redelivered;
    }
    void wait_for_redeliveries() {
        std::vector<std::thread> threads;
        {
            std::lock_guard lk(m_mu);
            threads.swap(m_threads);
        }
        for (auto& t : threads) t.join();
    }

  private:
    http::Response handle(const http::Request& req) {
        const std::string base = "/repos/torch-spyre/torch-spyre/hooks/77/deliveries";
        if (req.header("Authorization").value_or("") != "Bearer gh-token") {
            return http::Response::json(401, {{"message", "Bad credentials"}});
        }
        std::lock_guard lk(m_mu);
        if (req.method == "GET" && req.path == base) {
            // Newest first, two per page whatever per_page asks, the next page by cursor.
            const std::size_t from = std::stoul(req.query_param("cursor").value_or("0"));
            json page = json::array();
            for (std::size_t i = from; i < m_log.size() && i < from + 2; ++i) {
                const auto& a = m_log[i];
                page.push_back({{"id", a.id},
                                {"guid", a.guid},
                                {"delivered_at", a.delivered_at},
                                {"redelivery", a.redelivery},
                                {"duration", 0.1},
                                {"status", a.status_code ? "OK" : "Invalid HTTP Response: 0"},
                                {"status_code", a.status_code},
                                {"event", "repository_dispatch"},
                                {"action", "pull_request"}});
            }
            auto r = http::Response::json(200, page);
            if (from + 2 < m_log.size()) {
                r.headers.emplace_back("Link", "<" + m_server.url() + base +
                                                   "?per_page=100&cursor=" +
                                                   std::to_string(from + 2) + ">; rel=\"next\"");
            }
            return r;
        }
        if (req.method == "POST" && req.path.rfind(base + "/", 0) == 0 && req.path.size() > 9 &&
            req.path.substr(req.path.size() - 9) == "/attempts") {
            const std::int64_t id = std::stoll(req.path.substr(base.size() + 1));
            for (const auto& a : m_log) {
                if (a.id != id) continue;
                m_redelivered.push_back(a.guid);
                // GitHub re-sends the stored request, signed with the hook's secret, with the
                // same X-GitHub-Delivery, and logs that attempt too.
                const std::string guid = a.guid, body = m_bodies[a.guid];
                m_threads.emplace_back([this, guid, body] {
                    {
                        std::unique_lock lk2(m_mu);
                        m_started_cv.wait_for(lk2, std::chrono::seconds(60),
                                              [&] { return m_started; });
                    }
                    auto r = m_daemon->post_github(body, guid);
                    std::lock_guard lk2(m_mu);
                    m_log.insert(
                        m_log.begin(),
                        Attempt{m_next_id++, guid, rfc3339(system_clock::now()).substr(0, 19) + "Z",
                                r ? r->status : 0, true});
                });
                return http::Response::json(202, json::object());
            }
            return http::Response::json(404, {{"message", "Not Found"}});
        }
        if (req.path.find("/statuses/") != std::string::npos)
            return http::Response::json(201, {{"id", 1}});
        return http::Response::json(404, {{"message", "Not Found"}});
    }

    TestDaemon*& m_daemon;
    mutable std::mutex m_mu;
    std::condition_variable m_started_cv;
    bool m_started = false;
    std::vector<Attempt> m_log;  // newest first
    std::map<std::string, std::string> m_bodies;
    std::vector<std::string> m_redelivered;
    std::vector<std::thread> m_threads;
    std::int64_t m_next_id = 1000;
    FakeGithub m_server;  // last: it calls handle() until destroyed
};

std::string dispatch_body(const std::string& crcr_id, int pr) {
    json j = json::parse(fixture_text("crcr/pull_request-synchronize.dispatch.json"));
    j["client_payload"]["delivery_id"] = crcr_id;
    j["client_payload"]["payload"]["number"] = pr;
    return j.dump();
}

TEST(Recovery, AfterOnePassEveryMissedDeliveryHasExactlyOneRun) {
    TempDir dir;
    TestDaemon* daemon_ptr = nullptr;
    Hook hook(daemon_ptr);
    write_file(dir.path() / "secrets" / "gh.token", "gh-token\n", 0600);
    const std::string report =
        "report:\n  github: {api_url: \"" + hook.url() +
        "\", repo: pytorch/pytorch, token_file: secrets/gh.token, ca_file: " +
        test_certs().ca.string() + ", context_prefix: crcr/spyre}\n";
    TestDaemon daemon(dir.path(), report);
    daemon_ptr = &daemon;
    const auto now = system_clock::now();
    // Before: crcrd got two deliveries, one of which GitHub saw as failed (a timeout).
    daemon.start();
    ASSERT_EQ(daemon.post_github(dispatch_body("crcr-B", 2), "guid-B")->status, 202);
    ASSERT_EQ(daemon.post_github(dispatch_body("crcr-C", 3), "guid-C")->status, 202);
    EXPECT_EQ(daemon.stop(), 0);
    hook.attempted("guid-E", dispatch_body("crcr-E", 5), now - hours(80),
                   0);  // older than the lookback
    hook.attempted("guid-D", dispatch_body("crcr-D", 4), now - hours(30), 502);  // failed
    hook.attempted("guid-B", dispatch_body("crcr-B", 2), now - hours(20), 0);    // failed...
    hook.attempted("guid-B", dispatch_body("crcr-B", 2), now - hours(19),
                   202);  // ...redelivered by hand since
    hook.attempted("guid-C", dispatch_body("crcr-C", 3), now - hours(10),
                   0);  // crcrd has it all the same
    hook.attempted("guid-A", dispatch_body("crcr-A", 1), now - hours(1), 0);  // crcrd was down
    hook.attempted("guid-A", dispatch_body("crcr-A", 1), now - hours(1) + std::chrono::minutes(1),
                   0);  // and again

    daemon.write_config(
        report +
        "recovery:\n  github_hook: {repo: torch-spyre/torch-spyre, hook_id: 77}\n  interval: 1h\n"
        "admin: {tokens: [{name: ops, role: admin, sha256: " +
        crypto::sha256_hex("ops-token") + "}]}\n");
    daemon.start();
    hook.daemon_started();
    ASSERT_TRUE(
        eventually([&] { return count_recovery_passes(daemon) == 1; }, std::chrono::seconds(30)))
        << daemon.log();
    hook.wait_for_redeliveries();
    // Exactly the two guids that never got through were asked for, once each (A's newest try).
    auto asked = hook.redelivery_requests();
    std::sort(asked.begin(), asked.end());
    EXPECT_EQ(asked, (std::vector<std::string>{"guid-A", "guid-D"}));
    for (const char* crcr : {"crcr-A", "crcr-B", "crcr-C", "crcr-D"}) {
        EXPECT_EQ(count_deliveries(
                      daemon, {.crcr_delivery_id = crcr, .verdict = "queued", .has_run = true}),
                  1)
            << crcr;
    }
    EXPECT_EQ(count_deliveries(daemon, {.crcr_delivery_id = "crcr-E"}), 0);
    EXPECT_EQ(count_runs(daemon), 4);
    auto passes =
        daemon.request("GET", "/api/v1/recovery", {{"Authorization", "Bearer ops-token"}}, "");
    ASSERT_EQ(passes->status, 200) << passes->body;
    auto p = json::parse(passes->body);
    EXPECT_EQ(p["enabled"], true);
    ASSERT_EQ(p["items"].size(), 1u);
    EXPECT_EQ(p["items"][0]["listed"], 6);  // E is older than the watermark: not listed
    EXPECT_EQ(p["items"][0]["failed"], 3);  // A, C, D (B succeeded once)
    EXPECT_EQ(p["items"][0]["redelivered"], 2);
    EXPECT_EQ(p["items"][0]["errors"], json::array());
    EXPECT_TRUE(p["watermark"].is_string());

    // A second pass, through crcrctl: the redeliveries are in (crcrd accepted them), and a
    // guid is never asked for twice.
    write_file(dir.path() / "ops.token", "ops-token\n", 0600);
    std::string out;
    EXPECT_EQ(
        run_command({CRCRCTL_BIN, "--url", daemon.url(""), "--cacert", test_certs().ca.string(),
                     "--token-file", (dir.path() / "ops.token").string(), "recover"},
                    &out),
        0)
        << out;
    EXPECT_NE(out.find("REDELIVERED"), std::string::npos) << out;
    hook.wait_for_redeliveries();
    EXPECT_EQ(hook.redelivery_requests().size(), 2u);
    EXPECT_EQ(count_runs(daemon), 4);
    EXPECT_EQ(count_recovery_passes(daemon), 2);
}

TEST(Recovery, ConfigNeedsAHookAndGithubCredentials) {
    TempDir dir;
    TestDaemon d(dir.path(), "recovery: {github_hook: {repo: torch-spyre/torch-spyre}}\n");
    std::string out;
    EXPECT_EQ(
        run_command({CRCRD_BIN, "--check-config", "--config", d.config_path().string()}, &out), 2);
    EXPECT_NE(out.find("recovery.github_hook.repo: required with hook_id"), std::string::npos)
        << out;
    EXPECT_NE(out.find("recovery.github_hook: needs report.github"), std::string::npos) << out;
}

}  // namespace
}  // namespace crcrd
