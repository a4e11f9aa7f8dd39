// The read side of the admin API (docs/operations.md, "Admin API") and run cancellation,
// against the real daemon: tokens, roles, filters, cursor paging, shapes.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <regex>
#include <set>

#include "crcrd/core/crypto.hpp"
#include "support/certs.hpp"
#include "support/daemon.hpp"

namespace crcrd {
namespace {

using nlohmann::json;

const char* k_rules = R"(tiers:
  - {name: import, always: true, tests: [tests/test_import.py], timeout: 10m}
  - {name: affected, from_rules: true}
rules:
  - {name: all, paths: ["**"], tests: [test/test_ops.py]}
)";

class AdminTest : public ::testing::Test {
  protected:
    void SetUp() override {
        write_file(dir.path() / "selection.yaml", k_rules);
        daemon = std::make_unique<TestDaemon>(
            dir.path(),
            "selection: {rules: selection.yaml}\nadmin:\n  tokens:\n    - {name: viewer, sha256: " +
                crypto::sha256_hex("read-token") + ", role: read}\n    - {name: ops, sha256: " +
                crypto::sha256_hex("admin-token") + ", role: admin}\n");
        daemon->start();
    }

    Result<http::ClientResponse> get(const std::string& path,
                                     const std::string& token = "read-token") {
        return daemon->request("GET", path, {{"Authorization", "Bearer " + token}}, "");
    }
    json get_json(const std::string& path, int status = 200) {
        auto r = get(path);
        EXPECT_TRUE(r);
        EXPECT_EQ(r->status, status) << path << ": " << r->body;
        return json::parse(r->body);
    }
    std::int64_t queue_pr(int pr, const std::string& sha) {
        json j = json::parse(fixture_text("crcr/pull_request-synchronize.dispatch.json"));
        j["client_payload"]["delivery_id"] = "pr-" + std::to_string(pr) + "-" + sha.substr(0, 4);
        j["client_payload"]["payload"]["number"] = pr;
        j["client_payload"]["payload"]["pull_request"]["head"]["sha"] = sha;
        auto r = daemon->post_github(j.dump(), "d-" + std::to_string(pr) + sha.substr(0, 4));
        EXPECT_EQ(r->status, 202) << r->body;
        return json::parse(r->body)["run_id"].get<std::int64_t>();
    }

    TempDir dir;
    std::unique_ptr<TestDaemon> daemon;
};

TEST_F(AdminTest, TokensAndRoles) {
    auto none = daemon->request("GET", "/api/v1/runs", {}, "");
    EXPECT_EQ(none->status, 401);
    EXPECT_EQ(json::parse(none->body)["error"], "unauthorized");
    EXPECT_EQ(get("/api/v1/runs", "not-a-token")->status, 401);
    EXPECT_EQ(get("/api/v1/runs", "admin-token")->status, 200);
    auto run = queue_pr(2, "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa");
    auto cancel = "/api/v1/runs/" + std::to_string(run) + "/cancel";
    auto as_reader = daemon->request("POST", cancel, {{"Authorization", "Bearer read-token"}}, "");
    EXPECT_EQ(as_reader->status, 403);
    EXPECT_EQ(json::parse(as_reader->body)["error"], "forbidden");
    auto as_admin = daemon->request("POST", cancel, {{"Authorization", "Bearer admin-token"}}, "");
    EXPECT_EQ(as_admin->status, 200) << as_admin->body;
    auto shown = get_json("/api/v1/runs/" + std::to_string(run));
    EXPECT_EQ(shown["state"], "cancelled");
    EXPECT_EQ(shown["conclusion"], "cancelled");
    EXPECT_EQ(shown["reason"], "cancelled by ops");
    for (const auto& j : shown["jobs"]) EXPECT_EQ(j["state"], "cancelled");
    EXPECT_EQ(
        daemon->request("POST", cancel, {{"Authorization", "Bearer admin-token"}}, "")->status,
        409);
    EXPECT_EQ(daemon
                  ->request("POST", "/api/v1/runs/99999/cancel",
                            {{"Authorization", "Bearer admin-token"}}, "")
                  ->status,
              404);
    EXPECT_EQ(get("/api/v1/nothing")->status, 404);
}

TEST_F(AdminTest, RunsAreListedNewestFirstWithFiltersAndCursors) {
    std::vector<std::int64_t> ids;
    for (int pr = 10; pr < 15; ++pr) {
        ids.push_back(queue_pr(pr, std::string(40, static_cast<char>('a' + pr - 10))));
    }
    std::vector<std::int64_t> seen;
    std::string path = "/api/v1/runs?limit=2";
    for (int pages = 0; pages < 10; ++pages) {
        auto page = get_json(path);
        for (const auto& item : page["items"]) {
            seen.push_back(item["id"].get<std::int64_t>());
            EXPECT_FALSE(item.contains("jobs"));
        }
        if (page["next_cursor"].is_null()) break;
        path = "/api/v1/runs?limit=2&cursor=" + page["next_cursor"].get<std::string>();
    }
    EXPECT_EQ(seen, (std::vector<std::int64_t>{ids[4], ids[3], ids[2], ids[1], ids[0]}));

    auto by_pr = get_json("/api/v1/runs?pr=12");
    ASSERT_EQ(by_pr["items"].size(), 1u);
    EXPECT_EQ(by_pr["items"][0]["id"], ids[2]);
    EXPECT_EQ(by_pr["items"][0]["pr"], 12);
    auto by_sha = get_json("/api/v1/runs?sha=" + std::string(40, 'D'));  // upper case is accepted
    ASSERT_EQ(by_sha["items"].size(), 1u);
    EXPECT_EQ(by_sha["items"][0]["id"], ids[3]);
    EXPECT_EQ(get_json("/api/v1/runs?event=push")["items"].size(), 0u);
    EXPECT_EQ(get_json("/api/v1/runs?state=queued&event=pull_request")["items"].size(), 5u);
    EXPECT_EQ(get_json("/api/v1/runs?since=2000-01-01T00:00:00Z&until=2100-01-01")["items"].size(),
              5u);
    EXPECT_EQ(get_json("/api/v1/runs?until=2000-01-01")["items"].size(), 0u);
    // Any RFC 3339 offset (docs/operations.md, "Admin API"): the same instant in another zone. A
    // minute ago at +05:00 reads five hours ahead as UTC text, so ignoring the offset would find
    // nothing.
    auto at_offset = [](std::chrono::system_clock::time_point t, int minutes_east) {
        const std::time_t s =
            std::chrono::system_clock::to_time_t(t + std::chrono::minutes(minutes_east));
        std::tm tm{};
        gmtime_r(&s, &tm);
        char when[32], zone[8];
        std::strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S", &tm);
        std::snprintf(zone, sizeof zone, "%c%02d:%02d", minutes_east < 0 ? '-' : '+',
                      std::abs(minutes_east) / 60, std::abs(minutes_east) % 60);
        return std::string(when) + zone;
    };
    auto url_encode = [](std::string v) {  // only '+' needs it here
        for (auto p = v.find('+'); p != std::string::npos; p = v.find('+', p))
            v.replace(p, 1, "%2B");
        return v;
    };
    const auto now = std::chrono::system_clock::now();
    EXPECT_EQ(get_json("/api/v1/runs?since=" +
                       url_encode(at_offset(now - std::chrono::minutes(1), 300)))["items"]
                  .size(),
              5u);
    EXPECT_EQ(get_json("/api/v1/runs?since=" +
                       url_encode(at_offset(now + std::chrono::hours(1), -180)))["items"]
                  .size(),
              0u);
    // An unencoded '+' arrives as a space; it still means +.
    EXPECT_EQ(
        get_json("/api/v1/runs?since=" + at_offset(now - std::chrono::minutes(1), 120))["items"]
            .size(),
        5u);
    EXPECT_EQ(
        get(std::string("/api/v1/runs?since=") + url_encode("2026-12-01T10:00:00+25:00"))->status,
        400);

    for (const char* bad :
         {"/api/v1/runs?limit=500", "/api/v1/runs?limit=0", "/api/v1/runs?cursor=garbage",
          "/api/v1/runs?sha=abc", "/api/v1/runs?state=sleeping", "/api/v1/runs?pr=x",
          "/api/v1/runs?since=yesterday", "/api/v1/outbox?run_id=12abc",
          "/api/v1/outbox?run_id=-1"}) {
        auto r = get(bad);
        EXPECT_EQ(r->status, 400) << bad;
        EXPECT_EQ(json::parse(r->body)["error"], "bad_request") << bad;
    }
}

TEST_F(AdminTest, RunDetailHasSelectionJobsAndStatuses) {
    auto id = queue_pr(20, "abcdefabcdefabcdefabcdefabcdefabcdefabcd");
    // No mirror and no API are configured: the source is unknown and every rule is selected.
    ASSERT_TRUE(eventually(
        [&] { return get_json("/api/v1/runs/" + std::to_string(id))["jobs"].size() == 2; }));
    auto run = get_json("/api/v1/runs/" + std::to_string(id));
    for (const char* key :
         {"id", "event", "sha", "pr", "ref", "base_sha", "delivery_id", "state", "conclusion",
          "reason", "created_at", "finished_at", "selection", "jobs", "statuses"}) {
        EXPECT_TRUE(run.contains(key)) << key;
    }
    EXPECT_EQ(run["event"], "pull_request");
    EXPECT_EQ(run["sha"], "abcdefabcdefabcdefabcdefabcdefabcdefabcd");
    EXPECT_EQ(run["ref"], "refs/pull/20/head");
    EXPECT_EQ(run["selection"]["source"], "unknown");
    EXPECT_EQ(run["selection"]["tiers"][0]["name"], "import");
    EXPECT_EQ(run["selection"]["tiers"][0]["reason"], "always");
    const auto& job = run["jobs"][0];
    EXPECT_EQ(job["tier"], "import");
    EXPECT_EQ(job["state"], "queued");
    EXPECT_EQ(job["attempt"], 1);
    EXPECT_TRUE(job["slot"].is_null());
    EXPECT_EQ(job["metadata"]["tests"], json::array({"tests/test_import.py"}));
    EXPECT_TRUE(run["statuses"].is_array());
    EXPECT_EQ(get("/api/v1/runs/424242")->status, 404);
}

TEST_F(AdminTest, DeliveriesAreListedWithVerdicts) {
    queue_pr(30, "1111111111111111111111111111111111111111");
    EXPECT_EQ(daemon->post_github("{}", "bad-sig", "repository_dispatch", "wrong")->status, 401);
    auto all = get_json("/api/v1/deliveries");
    ASSERT_EQ(all["items"].size(), 2u);
    EXPECT_EQ(all["items"][0]["verdict"], "rejected");
    EXPECT_EQ(all["items"][0]["http_status"], 401);
    EXPECT_EQ(all["items"][1]["verdict"], "queued");
    for (const char* key : {"id", "delivery_id", "received_at", "scheme", "event", "verdict",
                            "http_status", "reason", "run_id"}) {
        EXPECT_TRUE(all["items"][1].contains(key)) << key;
    }
    auto rejected = get_json("/api/v1/deliveries?verdict=rejected");
    ASSERT_EQ(rejected["items"].size(), 1u);
    EXPECT_EQ(rejected["items"][0]["delivery_id"], "bad-sig");
    EXPECT_EQ(get("/api/v1/deliveries?verdict=maybe")->status, 400);
}

}  // namespace
}  // namespace crcrd

namespace crcrd {
namespace {

TEST_F(AdminTest, MetricsInPrometheusTextFormatForReadTokensOrEveryoneWhenPublic) {
    queue_pr(31, "1111111111111111111111111111111111111111");
    queue_pr(32, "2222222222222222222222222222222222222222");
    auto bad = daemon->post_github("{}", "bad-sig", "repository_dispatch", "wrong-secret");
    EXPECT_EQ(bad->status, 401);
    EXPECT_EQ(daemon->request("GET", "/metrics", {}, "")->status, 401);
    auto r = get("/metrics");
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200) << r->body;
    EXPECT_EQ(r->header("Content-Type").value_or(""), "text/plain; version=0.0.4; charset=utf-8");
    for (const char* want :
         {"# TYPE crcrd_deliveries_total counter\n",
          "crcrd_deliveries_total{verdict=\"queued\"} 2\n",
          "crcrd_deliveries_total{verdict=\"rejected\"} 1\n", "crcrd_build_info{version=\"",
          "crcrd_outbox_oldest_waiting_seconds 0\n", "crcrd_writer_pending "}) {
        EXPECT_NE(r->body.find(want), std::string::npos) << want << " in:\n" << r->body;
    }
    // Two runs were created; counted when their deliveries committed, before the 202s.
    EXPECT_NE(r->body.find("crcrd_runs_created_total{event=\"pull_request\"} 2\n"),
              std::string::npos)
        << r->body;
    // admin.metrics_public opens it, on reload.
    daemon->write_config(
        "selection: {rules: selection.yaml}\nadmin:\n  metrics_public: true\n  tokens:\n"
        "    - {name: viewer, sha256: " +
        crypto::sha256_hex("read-token") + ", role: read}\n");
    daemon->process().signal(SIGHUP);
    EXPECT_TRUE(
        eventually([&] { return daemon->request("GET", "/metrics", {}, "")->status == 200; }));
    EXPECT_EQ(daemon->request("GET", "/api/v1/runs", {}, "")->status,
              401);  // only /metrics is public
}

TEST(AdminListen, TheAdminApiMovesToItsOwnListener) {
    TempDir dir;
    TestDaemon d(dir.path(),
                 "admin:\n  listen: \"127.0.0.1:0\"\n  metrics_public: true\n  tokens:\n    - "
                 "{name: ops, sha256: " +
                     crypto::sha256_hex("admin-token") + ", role: admin}\n");
    d.start();
    // The admin listener starts after the public one, which start() waits for.
    std::smatch m;
    std::string log;
    const std::regex listening(R"(admin API, /metrics and /ui/ on https://127\.0\.0\.1:([0-9]+))");
    ASSERT_TRUE(eventually([&] {
        log = d.log();
        return std::regex_search(log, m, listening);
    })) << log;
    const std::string admin_url = "https://127.0.0.1:" + m[1].str();
    http::ClientOptions o;
    o.ca_file = test_certs().ca;
    auto at_admin = [&](const std::string& method, const std::string& path,
                        const http::Headers& h = {}) {
        auto r = http::send(method, admin_url + path, h, method == "POST" ? "{}" : "", o);
        EXPECT_TRUE(r) << r.error().message;
        return r ? r->status : 0;
    };
    const http::Headers auth = {{"Authorization", "Bearer admin-token"}};
    // The admin listener serves the API, /metrics, health; not the webhook.
    EXPECT_EQ(at_admin("GET", "/api/v1/runs", auth), 200);
    EXPECT_EQ(at_admin("GET", "/metrics"), 200);
    EXPECT_EQ(at_admin("GET", "/readyz"), 200);
    EXPECT_EQ(at_admin("POST", "/webhook", {{"Content-Type", "application/json"}}), 404);
    // The public listener serves the webhook and health, not the API.
    EXPECT_EQ(d.request("GET", "/api/v1/runs", auth, "")->status, 404);
    EXPECT_EQ(d.request("GET", "/metrics", {}, "")->status, 404);
    EXPECT_EQ(d.request("GET", "/healthz", {}, "")->status, 200);
    EXPECT_EQ(
        d.post_github(fixture_text("crcr/pull_request-synchronize.dispatch.json"), "al-1")->status,
        202);

    // A plain listener off loopback is refused by --check-config.
    TestDaemon plain(dir.path() / "plain", "admin: {listen: \"0.0.0.0:9443\"}\n", false);
    std::string out;
    EXPECT_EQ(
        run_command({CRCRD_BIN, "--check-config", "--config", plain.config_path().string()}, &out),
        2);
    EXPECT_NE(out.find("admin.listen: plain HTTP is only allowed on a loopback address"),
              std::string::npos)
        << out;
}

}  // namespace
}  // namespace crcrd
