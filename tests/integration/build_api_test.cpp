// The build stage as operators see it, through the real daemon (docs/build.md, "Seeing and
// evicting builds"): GET /api/v1/builds with its filters and paging, a build with its builder's
// log tail, POST /api/v1/builds/{id}/evict (who may, which builds, what it removes), crcrctl
// builds list/show/evict, the dashboard's build pages with a session, and the build metrics.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <regex>
#include <sstream>

#include "crcrd/core/crypto.hpp"
#include "crcrd/core/files.hpp"
#include "support/build_stage.hpp"
#include "support/certs.hpp"
#include "support/ci_script.hpp"
#include "support/daemon.hpp"
#include "support/process.hpp"
#include "support/state.hpp"

namespace crcrd {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

// The build: says what it builds, waits while $BUILD_HOLD exists, leaves lib.txt.
constexpr const char* k_build_script = R"SH(#!/bin/sh
echo "compiling torch at $CRCR_PYTORCH_SHA"
while [ -n "${BUILD_HOLD:-}" ] && [ -e "$BUILD_HOLD" ]; do sleep 0.05; done
echo "built $CRCR_PYTORCH_SHA" > "$CRCR_BUILD_OUT/lib.txt"
echo "build finished for $CRCR_PYTORCH_SHA"
)SH";

// A tier: waits while $TIER_HOLD exists (its run's build is then ready and still needed), passes.
constexpr const char* k_test_script = R"SH(#!/bin/sh
while [ -n "${TIER_HOLD:-}" ] && [ -e "$TIER_HOLD" ]; do sleep 0.05; done
echo "<testsuite><testcase classname=\"t\" name=\"ok\"/></testsuite>" > "$CRCR_JUNIT_DIR/r.xml"
)SH";

const std::string k_sha_a = "a1a1000000000000000000000000000000000001";
const std::string k_sha_b = "b2b2000000000000000000000000000000000002";

bool has(const std::string& haystack, const std::string& needle) {
    return haystack.find(needle) != std::string::npos;
}

/// What crcrctl printed and its exit code.
struct Ctl {
    int code = -1;
    std::string out;
};

class BuildApiTest : public ::testing::Test {
  protected:
    void SetUp() override {
        if (auto why = bwrap_unavailable(); !why.empty()) GTEST_SKIP() << why;
        install_script(bin.path() / "build.sh", k_build_script);
        install_script(bin.path() / "test.sh", k_test_script);
        write_file(dir.path() / "ops.token", "ops-token\n");
        write_file(dir.path() / "read.token", "read-token\n");
        BuildStageSetup s;
        s.build_script = bin.path() / "build.sh";
        s.test_script = bin.path() / "test.sh";
        s.tiers = "  - {name: import, always: true, tests: [a]}\n";
        s.env = ", BUILD_HOLD: " + (bin.path() / "build-hold").string() +
                ", TIER_HOLD: " + (bin.path() / "tier-hold").string();
        s.admin_tokens =
            "{name: ops, role: admin, sha256: " + crypto::sha256_hex("ops-token") +
            "}, {name: viewer, role: read, sha256: " + crypto::sha256_hex("read-token") + "}";
        daemon = std::make_unique<TestDaemon>(dir.path(), build_stage_config(dir.path(), s));
        daemon->start();
    }

    fs::path cache() const { return dir.path() / "state" / "builds"; }

    std::int64_t post(const std::string& sha) {
        const int pr = next_pr++;
        return post_sha(*daemon, sha, pr, "build-api-" + std::to_string(pr));
    }
    /// Two passing runs, of SHA a then SHA b: two builds.
    void two_builds() {
        const auto a = post(k_sha_a);
        ASSERT_EQ(daemon->finished(a), "completed/passed");
        const auto b = post(k_sha_b);
        ASSERT_EQ(daemon->finished(b), "completed/passed");
    }

    /// A request with `token` (none when empty), remembered for the schema check.
    http::ClientResponse call(const std::string& method, const std::string& path,
                              const std::string& token = "ops-token") {
        http::Headers headers;
        if (!token.empty()) headers.emplace_back("Authorization", "Bearer " + token);
        auto r = daemon->request(method, path, headers, "");
        EXPECT_TRUE(r) << method << " " << path;
        if (!r) return {};
        seen.push_back(json{
            {"method", method},
            {"path", path},
            {"status", r->status},
            {"content_type", std::string(r->header("Content-Type").value_or(""))},
            {"body",
             r->body}}.dump());
        return *r;
    }
    json get(const std::string& path) {
        auto r = call("GET", path);
        EXPECT_EQ(r.status, 200) << path << ": " << r.body;
        return json::parse(r.body, nullptr, false);
    }
    /// The builds of upstream `sha` (one per key; one here).
    json build_of(const std::string& sha) {
        const json page = get("/api/v1/builds?sha=" + sha);
        EXPECT_EQ(page["items"].size(), 1u) << page.dump();
        return page["items"].empty() ? json::object() : page["items"][0];
    }

    /// docs/openapi.yaml's verdict on every call() so far: "ok" or the first problem.
    std::string schema_verdict() {
        std::string lines, out;
        for (const auto& s : seen) lines += s + "\n";
        run_command({"/usr/bin/python3",
                     (fs::path(CRCRD_SOURCE_DIR) / "tests" / "support" / "openapi_check.py"),
                     (fs::path(CRCRD_SOURCE_DIR) / "docs" / "openapi.yaml"), "validate"},
                    &out, lines);
        std::istringstream in(out);
        std::size_t n = 0;
        for (std::string line; std::getline(in, line); ++n) {
            if (line != "ok") return seen.at(n).substr(0, 300) + ": " + line;
        }
        return n == seen.size() ? "ok" : "the checker answered " + out;
    }

    /// crcrctl against this daemon with `token_file` (none when empty).
    Ctl ctl(std::vector<std::string> args, const std::string& token_file = "ops.token") {
        std::vector<std::string> argv = {CRCRCTL_BIN, "--url", daemon->url(""), "--cacert",
                                         test_certs().ca.string()};
        if (!token_file.empty())
            argv.insert(argv.end(), {"--token-file", (dir.path() / token_file).string()});
        argv.insert(argv.end(), args.begin(), args.end());
        Ctl c;
        c.code = run_command(argv, &c.out);
        return c;
    }

    /// /metrics' value of the sample `series` (its name and labels as written), or -1.
    double metric(const std::string& series) {
        auto r = daemon->request("GET", "/metrics", {{"Authorization", "Bearer ops-token"}}, "");
        EXPECT_TRUE(r && r->status == 200);
        std::istringstream in(r ? r->body : "");
        for (std::string line; std::getline(in, line);) {
            if (line.rfind(series + " ", 0) == 0) return std::stod(line.substr(series.size() + 1));
        }
        return -1;
    }

    TempDir dir;
    TempDir bin;
    std::unique_ptr<TestDaemon> daemon;
    std::vector<std::string> seen;
    int next_pr = 500;
};

TEST_F(BuildApiTest, TheListFiltersAndPagesNewestFirstAndABuildShowsItsBuildersLog) {
    two_builds();
    const json all = get("/api/v1/builds");
    ASSERT_EQ(all["items"].size(), 2u) << all.dump();
    EXPECT_TRUE(all["next_cursor"].is_null());
    // Newest first: b's build, then a's; both ready, each used by one run that has ended.
    const json& b = all["items"][0];
    const json& a = all["items"][1];
    EXPECT_EQ(b["upstream_sha"], k_sha_b);
    EXPECT_EQ(a["upstream_sha"], k_sha_a);
    EXPECT_GT(b["id"].get<std::int64_t>(), a["id"].get<std::int64_t>());
    for (const json* x : {&a, &b}) {
        EXPECT_EQ((*x)["state"], "ready");
        EXPECT_EQ((*x)["key"].get<std::string>().size(), 64u);
        EXPECT_EQ((*x)["attempts"], 1);
        EXPECT_EQ((*x)["runs"], 1);
        EXPECT_EQ((*x)["open_jobs"], 0);
        EXPECT_TRUE((*x)["reason"].is_null());
        EXPECT_TRUE((*x)["finished_at"].is_string());
        // The published folder holds lib.txt, "built <sha>\n": its bytes are the size.
        const auto key = (*x)["key"].get<std::string>();
        EXPECT_EQ((*x)["size_bytes"],
                  static_cast<std::int64_t>(fs::file_size(cache() / key / "lib.txt")));
    }

    // Filters: by state, by upstream SHA (any case); a bad value is refused, naming it.
    EXPECT_EQ(get("/api/v1/builds?state=ready")["items"].size(), 2u);
    EXPECT_TRUE(get("/api/v1/builds?state=failed")["items"].empty());
    std::string upper = k_sha_a;
    for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    const json by_sha = get("/api/v1/builds?sha=" + upper);
    ASSERT_EQ(by_sha["items"].size(), 1u);
    EXPECT_EQ(by_sha["items"][0]["id"], a["id"]);
    auto bad = call("GET", "/api/v1/builds?state=sleeping");
    EXPECT_EQ(bad.status, 400);
    EXPECT_TRUE(has(bad.body, "state must be one of queued, running, ready, failed, evicted"))
        << bad.body;
    EXPECT_EQ(call("GET", "/api/v1/builds?sha=abc").status, 400);
    EXPECT_EQ(call("GET", "/api/v1/builds?limit=0").status, 400);
    EXPECT_TRUE(has(call("GET", "/api/v1/builds?key=x").body, "unknown query parameter 'key'"));
    EXPECT_EQ(call("GET", "/api/v1/builds", "").status, 401);

    // Paging: one a page, the cursor leads to the older one and the last page has none.
    const json first = get("/api/v1/builds?limit=1");
    ASSERT_EQ(first["items"].size(), 1u);
    EXPECT_EQ(first["items"][0]["id"], b["id"]);
    ASSERT_TRUE(first["next_cursor"].is_string());
    const json second =
        get("/api/v1/builds?limit=1&cursor=" + first["next_cursor"].get<std::string>());
    ASSERT_EQ(second["items"].size(), 1u);
    EXPECT_EQ(second["items"][0]["id"], a["id"]);
    ASSERT_TRUE(second["next_cursor"].is_string());  // a full page: one more look
    const json third =
        get("/api/v1/builds?limit=1&cursor=" + second["next_cursor"].get<std::string>());
    EXPECT_TRUE(third["items"].empty());
    EXPECT_TRUE(third["next_cursor"].is_null());
    EXPECT_EQ(call("GET", "/api/v1/builds?cursor=nonsense").status, 400);

    // One build: the same fields, and the end of its builder job's log.
    const json shown = get("/api/v1/builds/" + std::to_string(a["id"].get<std::int64_t>()));
    for (const auto& [k, v] : a.items()) EXPECT_EQ(shown[k], v) << k;
    EXPECT_EQ(shown["job_id"], first_job(*daemon, {.tier = "build"}).id);  // run a's build job
    ASSERT_TRUE(shown["log"].is_string()) << shown.dump();
    EXPECT_TRUE(has(shown["log"], "compiling torch at " + k_sha_a)) << shown["log"];
    EXPECT_TRUE(has(shown["log"], "build finished for " + k_sha_a)) << shown["log"];
    EXPECT_FALSE(has(shown["log"], k_sha_b));
    auto missing = call("GET", "/api/v1/builds/999999");
    EXPECT_EQ(missing.status, 404);
    EXPECT_TRUE(has(missing.body, "no build 999999")) << missing.body;

    EXPECT_EQ(schema_verdict(), "ok");
}

TEST_F(BuildApiTest, OnlyAnAdminEvictsAndOnlyAReadyBuildNoOpenJobNeeds) {
    write_file(bin.path() / "build-hold", "");
    write_file(bin.path() / "tier-hold", "");
    const auto run = post(k_sha_a);
    // While it builds: not ready, 409.
    ASSERT_TRUE(eventually([&] {
        auto p = json::parse(call("GET", "/api/v1/builds").body, nullptr, false);
        return p.is_object() && !p["items"].empty() && p["items"][0]["state"] == "running";
    }));
    const std::string id = std::to_string(build_of(k_sha_a)["id"].get<std::int64_t>());
    auto running = call("POST", "/api/v1/builds/" + id + "/evict");
    EXPECT_EQ(running.status, 409);
    EXPECT_TRUE(has(running.body, "build " + id + " is running: only a ready build"))
        << running.body;
    // Ready, while its run's tier still runs on it: needed, 409.
    fs::remove(bin.path() / "build-hold");
    ASSERT_TRUE(eventually([&] {
        const json b = build_of(k_sha_a);
        return b["state"] == "ready" && b["open_jobs"] == 1;
    }));
    auto needed = call("POST", "/api/v1/builds/" + id + "/evict");
    EXPECT_EQ(needed.status, 409);
    EXPECT_TRUE(has(needed.body, "needed by 1 queued or running jobs")) << needed.body;
    fs::remove(bin.path() / "tier-hold");
    ASSERT_EQ(daemon->finished(run), "completed/passed");
    const json ready = build_of(k_sha_a);
    const std::string key = ready["key"];
    ASSERT_TRUE(fs::exists(cache() / key / "lib.txt"));
    EXPECT_EQ(metric("crcrd_builds{state=\"ready\"}"), 1);
    EXPECT_EQ(metric("crcrd_build_cache_bytes"), ready["size_bytes"].get<double>());

    // A read token may look, not evict.
    EXPECT_EQ(call("POST", "/api/v1/builds/" + id + "/evict", "read-token").status, 403);
    EXPECT_EQ(build_of(k_sha_a)["state"], "ready");
    EXPECT_TRUE(fs::exists(cache() / key));

    // An admin evicts it: the row says who, the folder is gone, the cache counts it no more.
    auto evicted = call("POST", "/api/v1/builds/" + id + "/evict");
    ASSERT_EQ(evicted.status, 200) << evicted.body;
    const json after = json::parse(evicted.body);
    EXPECT_EQ(after["state"], "evicted");
    EXPECT_EQ(after["reason"], "evicted by ops");
    EXPECT_EQ(build_of(k_sha_a)["state"], "evicted");
    EXPECT_FALSE(fs::exists(cache() / key));
    EXPECT_TRUE(has(daemon->log(), "evicted by ops"));
    EXPECT_EQ(metric("crcrd_builds{state=\"evicted\"}"), 1);
    EXPECT_EQ(metric("crcrd_builds{state=\"ready\"}"), 0);
    EXPECT_EQ(metric("crcrd_build_cache_bytes"), 0);
    EXPECT_EQ(metric("crcrd_build_evictions_total"), 1);

    // Again: it is no longer ready. No such build: 404.
    auto again = call("POST", "/api/v1/builds/" + id + "/evict");
    EXPECT_EQ(again.status, 409);
    EXPECT_TRUE(has(again.body, "is evicted")) << again.body;
    EXPECT_EQ(call("POST", "/api/v1/builds/999999/evict").status, 404);

    // The next run of the SHA builds it again (a miss), and the one after finds it (a hit).
    const auto rebuilt = post(k_sha_a);
    ASSERT_EQ(daemon->finished(rebuilt), "completed/passed");
    EXPECT_EQ(build_of(k_sha_a)["state"], "ready");
    EXPECT_EQ(build_of(k_sha_a)["attempts"], 2);
    EXPECT_TRUE(fs::exists(cache() / key / "lib.txt"));
    const auto hit = post(k_sha_a);
    ASSERT_EQ(daemon->finished(hit), "completed/passed");
    EXPECT_EQ(build_of(k_sha_a)["runs"], 3);
    EXPECT_EQ(metric("crcrd_build_cache_lookups_total{result=\"miss\"}"), 2);
    EXPECT_EQ(metric("crcrd_build_cache_lookups_total{result=\"hit\"}"), 1);
    EXPECT_EQ(metric("crcrd_build_duration_seconds_count{outcome=\"ready\"}"), 2);
    EXPECT_EQ(metric("crcrd_builds{state=\"failed\"}"), 0);

    EXPECT_EQ(schema_verdict(), "ok");
}

TEST_F(BuildApiTest, EvictionIsRefusedWithoutABuildSection) {
    two_builds();
    const std::string id = std::to_string(build_of(k_sha_a)["id"].get<std::int64_t>());
    // The same daemon after the build section is removed and the configuration reloaded.
    std::string config = read_file(daemon->config_path()).value();
    const auto from = config.find("build:\n");
    const auto to = config.find("report:");
    ASSERT_NE(from, std::string::npos);
    config.erase(from, to - from);
    write_file(daemon->config_path(), config);
    daemon->process().signal(SIGHUP);
    ASSERT_TRUE(eventually([&] { return has(daemon->log(), "reloaded "); })) << daemon->log();
    auto refused = call("POST", "/api/v1/builds/" + id + "/evict");
    EXPECT_EQ(refused.status, 409);
    EXPECT_TRUE(has(refused.body, "the configuration has no build section")) << refused.body;
    // The build and its folder stay; reading goes on.
    const json b = build_of(k_sha_a);
    EXPECT_EQ(b["state"], "ready");
    EXPECT_TRUE(fs::exists(cache() / b["key"].get<std::string>()));
    EXPECT_EQ(schema_verdict(), "ok");
}

TEST_F(BuildApiTest, CrcrctlListsShowsAndEvictsBuilds) {
    two_builds();
    const json a = build_of(k_sha_a);
    const std::string id = std::to_string(a["id"].get<std::int64_t>());
    const std::string key = a["key"];

    auto list = ctl({"builds", "list"});
    EXPECT_EQ(list.code, 0) << list.out;
    EXPECT_TRUE(std::regex_search(
        list.out, std::regex("ID +KEY +STATE +SHA +SIZE +ATTEMPTS +RUNS +FINISHED +REASON\n")))
        << list.out;
    EXPECT_TRUE(
        std::regex_search(list.out, std::regex(id + " +" + key.substr(0, 12) + " +ready +" +
                                               k_sha_a.substr(0, 12) + " +[0-9]+ B +1 +1 ")))
        << list.out;
    EXPECT_TRUE(has(list.out, k_sha_b.substr(0, 12)));
    // Filters and paging as the API's; --json is the API's page.
    auto by_sha = ctl({"builds", "list", "--sha", k_sha_b, "--json"});
    ASSERT_EQ(by_sha.code, 0) << by_sha.out;
    const json page = json::parse(by_sha.out);
    ASSERT_EQ(page["items"].size(), 1u);
    EXPECT_EQ(page["items"][0]["upstream_sha"], k_sha_b);
    auto limited = ctl({"builds", "list", "--limit", "1"});
    EXPECT_TRUE(has(limited.out, "(more: --cursor ")) << limited.out;
    EXPECT_FALSE(has(ctl({"builds", "list", "--state", "failed"}).out, k_sha_a.substr(0, 12)));
    EXPECT_EQ(ctl({"builds", "list", "--state", "sleeping"}).code, 2);

    auto shown = ctl({"builds", "show", id});
    EXPECT_EQ(shown.code, 0) << shown.out;
    EXPECT_TRUE(has(shown.out, "build " + id + "  ready  key " + key)) << shown.out;
    EXPECT_TRUE(has(shown.out, "upstream " + k_sha_a)) << shown.out;
    EXPECT_TRUE(has(shown.out, "compiling torch at " + k_sha_a)) << shown.out;
    EXPECT_EQ(ctl({"builds", "show", "999999"}).code, 5);

    // Evict: a read token is refused (4), an admin's works, a second time conflicts (1).
    EXPECT_EQ(ctl({"builds", "evict", id}, "read.token").code, 4);
    EXPECT_TRUE(fs::exists(cache() / key));
    auto evicted = ctl({"builds", "evict", id});
    EXPECT_EQ(evicted.code, 0) << evicted.out;
    EXPECT_TRUE(has(evicted.out, R"("state":"evicted")")) << evicted.out;
    EXPECT_FALSE(fs::exists(cache() / key));
    auto again = ctl({"builds", "evict", id});
    EXPECT_EQ(again.code, 1);
    EXPECT_TRUE(has(again.out, "HTTP 409: conflict: build " + id + " is evicted")) << again.out;
    EXPECT_TRUE(has(ctl({"builds", "list", "--state", "evicted"}).out, "evicted by ops"));

    // Every command says its options.
    for (const auto& [words, options] :
         std::vector<std::pair<std::vector<std::string>, std::vector<std::string>>>{
             {{"builds"}, {"list", "show", "evict"}},
             {{"builds", "list"}, {"--state", "evicted", "--sha", "--limit", "--cursor", "--json"}},
             {{"builds", "show"}, {"ID", "--json"}},
             {{"builds", "evict"}, {"ID"}}}) {
        auto args = words;
        args.push_back("--help");
        auto help = ctl(args, "");
        EXPECT_EQ(help.code, 0);
        for (const auto& o : options) EXPECT_TRUE(has(help.out, o)) << o << "\n" << help.out;
    }
}

TEST_F(BuildApiTest, TheDashboardListsBuildsShowsOneAndEvictsItWithASession) {
    two_builds();
    const json a = build_of(k_sha_a);
    const std::string id = std::to_string(a["id"].get<std::int64_t>());
    const std::string key = a["key"];
    // Sign in as the admin: the session cookie.
    auto login = daemon->request("POST", "/ui/login",
                                 {{"Content-Type", "application/x-www-form-urlencoded"}},
                                 "token=ops-token&next=%2Fui%2Fbuilds");
    ASSERT_TRUE(login);
    ASSERT_EQ(login->status, 303);
    EXPECT_EQ(login->header("Location").value_or(""), "/ui/builds");
    std::string cookie(login->header("Set-Cookie").value_or(""));
    cookie = cookie.substr(0, cookie.find(';'));
    ASSERT_EQ(cookie.rfind("crcrd_session=", 0), 0u) << cookie;
    auto page = [&](const std::string& path) {
        auto r = daemon->request("GET", path, {{"Cookie", cookie}}, "");
        EXPECT_TRUE(r);
        return r ? *r : http::ClientResponse{};
    };

    // The list: both builds with their short key, state, SHA and size, linked; in the menu.
    auto list = page("/ui/builds");
    ASSERT_EQ(list.status, 200) << list.body;
    EXPECT_TRUE(has(std::string(list.header("Content-Security-Policy").value_or("")),
                    "default-src 'none'"));
    EXPECT_FALSE(has(list.body, "<script"));
    EXPECT_TRUE(has(list.body, "<a href=\"/ui/builds\" class=\"active\">Builds</a>")) << list.body;
    EXPECT_TRUE(has(list.body, "<a href=\"/ui/builds/" + id + "\">" + id + "</a>"));
    EXPECT_TRUE(has(list.body, ">" + key.substr(0, 12) + "</code>"));
    EXPECT_TRUE(has(list.body, "<span class=\"badge b-ready\">ready</span>"));
    EXPECT_TRUE(has(list.body, k_sha_a.substr(0, 7)));
    EXPECT_TRUE(has(list.body, k_sha_b.substr(0, 7)));
    EXPECT_TRUE(has(list.body, " B</td>"));
    // Its filters: the SHA's build alone, no failed build, a refused state said above the table.
    auto filtered = page("/ui/builds?state=&sha=" + k_sha_b);
    EXPECT_EQ(filtered.status, 200);
    EXPECT_FALSE(has(filtered.body, "/ui/builds/" + id + "\""));
    EXPECT_TRUE(has(page("/ui/builds?state=failed").body, "No builds."));
    auto refused = page("/ui/builds?state=sleeping");
    EXPECT_EQ(refused.status, 400);
    EXPECT_TRUE(has(refused.body, "state must be one of")) << refused.body;

    // One build: its facts, the builder's log and, for an admin, the Evict form.
    auto one = page("/ui/builds/" + id);
    ASSERT_EQ(one.status, 200);
    EXPECT_TRUE(has(one.body, "<code>" + key + "</code>"));
    EXPECT_TRUE(has(one.body, "compiling torch at " + k_sha_a)) << one.body;
    EXPECT_TRUE(has(one.body, "action=\"/ui/builds/" + id + "/evict\"")) << one.body;
    EXPECT_EQ(page("/ui/builds/999999").status, 404);
    // A read token's page has no form.
    auto as_reader =
        daemon->request("GET", "/ui/builds/" + id, {{"Authorization", "Bearer read-token"}}, "");
    EXPECT_FALSE(has(as_reader->body, "/evict"));

    // The form: without the CSRF token nothing happens; with it the build is evicted.
    const std::regex k_csrf("name=\"csrf\" value=\"([^\"]+)\"");
    std::smatch m;
    ASSERT_TRUE(std::regex_search(one.body, m, k_csrf));
    const std::string csrf = m[1];
    auto forged = daemon->request(
        "POST", "/ui/builds/" + id + "/evict",
        {{"Cookie", cookie}, {"Content-Type", "application/x-www-form-urlencoded"}}, "csrf=wrong");
    EXPECT_EQ(forged->status, 403);
    EXPECT_TRUE(fs::exists(cache() / key));
    auto done =
        daemon->request("POST", "/ui/builds/" + id + "/evict",
                        {{"Cookie", cookie}, {"Content-Type", "application/x-www-form-urlencoded"}},
                        "csrf=" + csrf);
    ASSERT_EQ(done->status, 303) << done->body;
    EXPECT_EQ(done->header("Location").value_or(""), "/ui/builds/" + id + "?done=evict");
    EXPECT_FALSE(fs::exists(cache() / key));
    auto after = page("/ui/builds/" + id + "?done=evict");
    EXPECT_TRUE(has(after.body, "Evicted: its folder was removed")) << after.body;
    EXPECT_TRUE(has(after.body, "<span class=\"badge b-evicted\">evicted</span>"));
    EXPECT_TRUE(has(after.body, "evicted by ops"));
    EXPECT_FALSE(has(after.body, "/evict\""));
    // Evicting again answers the API's conflict as a page.
    auto twice =
        daemon->request("POST", "/ui/builds/" + id + "/evict",
                        {{"Cookie", cookie}, {"Content-Type", "application/x-www-form-urlencoded"}},
                        "csrf=" + csrf);
    EXPECT_EQ(twice->status, 409);
}

}  // namespace
}  // namespace crcrd
