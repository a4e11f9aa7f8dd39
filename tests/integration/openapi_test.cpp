// docs/openapi.yaml against the real daemon (docs/operations.md, "The API description"): it is
// served byte for byte at /api/v1/openapi.yaml, it documents exactly the routes the daemon has,
// and real responses of every JSON route (after real runs) validate against its schemas. The
// validator is tests/support/openapi_check.py on Debian's python3-jsonschema (JSON Schema
// 2020-12).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <set>
#include <sstream>

#include "crcrd/core/crypto.hpp"
#include "crcrd/core/files.hpp"
#include "support/ci_script.hpp"
#include "support/daemon.hpp"
#include "support/state.hpp"

namespace crcrd {
namespace {

using nlohmann::json;

const std::filesystem::path k_spec =
    std::filesystem::path(CRCRD_SOURCE_DIR) / "docs" / "openapi.yaml";
const std::filesystem::path k_checker =
    std::filesystem::path(CRCRD_SOURCE_DIR) / "tests" / "support" / "openapi_check.py";
// Debian's interpreter, with python3-jsonschema and python3-yaml; not whichever python3 is first on
// PATH.
constexpr const char* k_python = "/usr/bin/python3";

/// Every route of the daemon, as documented: kept in step with src/admin/api.cpp (routes()),
/// src/app/router.cpp and the dashboard. The test fails when the document and this table
/// differ, or when the daemon does not serve an entry.
const std::set<std::string> k_routes = {
    "GET /healthz",
    "GET /readyz",
    "GET /metrics",
    "POST /webhook",
    "GET /api/v1/openapi.yaml",
    "GET /api/v1/runs",
    "POST /api/v1/runs",
    "GET /api/v1/runs/{id}",
    "POST /api/v1/runs/{id}/cancel",
    "POST /api/v1/runs/{id}/retry",
    "GET /api/v1/jobs/{id}",
    "GET /api/v1/jobs/{id}/tests",
    "GET /api/v1/jobs/{id}/log",
    "GET /api/v1/runners",
    "POST /api/v1/runners/{name}/drain",
    "POST /api/v1/runners/{name}/undrain",
    "GET /api/v1/deliveries",
    "GET /api/v1/outbox",
    "POST /api/v1/outbox/{id}/retry",
    "GET /api/v1/recovery",
    "POST /api/v1/recovery/run",
    "GET /api/v1/selection-misses",
    "GET /api/v1/builds",
    "GET /api/v1/builds/{id}",
    "POST /api/v1/builds/{id}/evict",
    "GET /api/v1/trunk",
    "GET /api/v1/tests",
    "GET /api/v1/tests/{name}/history",
    "GET /api/v1/stats/daily",
    "POST /api/v1/stats/rebuild",
    "GET /ui/",
    "GET /ui/runs",
    "GET /ui/trunk",
    "GET /ui/tests",
    "GET /ui/tests/{name}",
    "GET /ui/trends",
    "GET /ui/style.css",
    "POST /ui/logout",
    "GET /ui/login",
    "POST /ui/login",
    "GET /ui/runs/{id}",
    "POST /ui/runs/{id}/cancel",
    "POST /ui/runs/{id}/retry",
    "GET /ui/jobs/{id}",
    "GET /ui/runners",
    "POST /ui/runners/{name}/drain",
    "POST /ui/runners/{name}/undrain",
    "GET /ui/deliveries",
    "GET /ui/builds",
    "GET /ui/builds/{id}",
    "POST /ui/builds/{id}/evict",
};

/// One answer as the checker takes it.
struct Seen {
    std::string method, path;
    int status;
    std::string content_type, body;
};

/// The checker's verdict on each of `seen`, in order: "ok" or "error: ...".
std::vector<std::string> check(const std::vector<Seen>& seen) {
    std::string lines;
    for (const auto& s : seen) {
        lines += json{{"method", s.method},
                      {"path", s.path},
                      {"status", s.status},
                      {"content_type", s.content_type},
                      {"body", s.body}}
                     .dump() +
                 "\n";
    }
    std::string out;
    run_command({k_python, k_checker.string(), k_spec.string(), "validate"}, &out, lines);
    std::vector<std::string> verdicts;
    std::istringstream in(out);
    for (std::string line; std::getline(in, line);) verdicts.push_back(line);
    return verdicts;
}

/// Runs a command of the checker without input; its output.
std::string checker(const std::string& command, int* code = nullptr) {
    std::string out;
    const int rc = run_command({k_python, k_checker.string(), k_spec.string(), command}, &out);
    if (code) *code = rc;
    return out;
}

std::string rules() {
    return "tiers:\n"
           "  - {name: import, always: true, tests: [ok_import], labels: [sim]}\n"
           "  - {name: affected, from_rules: true, timeout: 10m}\n"
           "rules:\n"
           "  - {name: dispatch, paths: [\"aten/**\"], tests: [fail_ops, ok_other]}\n"
           "  - {name: compile, paths: [\"torch/_inductor/**\"], tests: [ok_compile]}\n"
           "unmatched: nothing\n";
}

class OpenApiTest : public ::testing::Test {
  protected:
    void SetUp() override {
        write_file(dir.path() / "ci" / "ci.sh", k_ci_script, 0755);
        write_file(dir.path() / "selection.yaml", rules());
        daemon = std::make_unique<TestDaemon>(
            dir.path(),
            "selection: {rules: selection.yaml}\n"
            "runners:\n"
            "  - {name: sim-0, labels: [sim], health_check: [/bin/true], device_model: Simulated}\n"
            "execution:\n"
            "  command: [ci/ci.sh]\n"
            "  work_root: state/work\n"
            "  isolation: none\n"  // isolation is execution_test's subject; this one is about
                                   // shapes
            "  min_free_bytes: 1MiB\n"
            "  device_wait: 30s\n"
            "  health_interval: 1s\n"
            "report:\n"
            "  file: state/statuses.jsonl\n"
            "admin:\n  tokens:\n    - {name: viewer, role: read, sha256: " +
                crypto::sha256_hex("read-token") + "}\n    - {name: ops, role: admin, sha256: " +
                crypto::sha256_hex("ops-token") + "}\n");
        daemon->start();
    }

    /// A request with `token` (none when empty), remembered for check().
    http::ClientResponse call(const std::string& method, const std::string& path,
                              const std::string& token = "ops-token", const std::string& body = "",
                              http::Headers headers = {}) {
        if (!token.empty()) headers.emplace_back("Authorization", "Bearer " + token);
        if (!body.empty()) headers.emplace_back("Content-Type", "application/json");
        auto r = daemon->request(method, path, headers, body);
        EXPECT_TRUE(r) << method << " " << path;
        if (!r) return {};
        seen.push_back({method, path, r->status,
                        std::string(r->header("Content-Type").value_or("")), r->body});
        return *r;
    }

    std::int64_t post_run(const std::vector<std::string>& changed, const std::string& id) {
        json j = json::parse(fixture_text("crcr/direct-pytorch-crcr.json"));
        j["client_payload"]["changed_files"] = changed;
        j["client_payload"]["pr_number"] = next_pr++;
        auto r = daemon->post_standard(j.dump(), id);
        EXPECT_EQ(r->status, 202) << r->body;
        seen.push_back({"POST", "/webhook", r->status,
                        std::string(r->header("Content-Type").value_or("")), r->body});
        return json::parse(r->body)["run_id"].get<std::int64_t>();
    }

    TempDir dir;
    std::unique_ptr<TestDaemon> daemon;
    std::vector<Seen> seen;
    int next_pr = 300;
};

TEST_F(OpenApiTest, TheServedDocumentIsDocsOpenapiYamlAndItIsAValidOpenApi31Description) {
    auto r = daemon->request("GET", "/api/v1/openapi.yaml", {}, "");  // no token
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->header("Content-Type").value_or(""), "application/yaml");
    EXPECT_TRUE(r->body == read_file(k_spec).value())
        << "the binary serves another docs/openapi.yaml than the source tree's";
    EXPECT_EQ(daemon->request("POST", "/api/v1/openapi.yaml", {}, "")->status, 405);

    int code = 0;
    EXPECT_EQ(checker("lint", &code), "ok\n");
    EXPECT_EQ(code, 0);
    std::set<std::string> documented;
    std::istringstream ops(checker("operations"));
    for (std::string line; std::getline(ops, line);) documented.insert(line);
    EXPECT_EQ(documented, k_routes) << "docs/openapi.yaml and this test's route table differ";
}

TEST_F(OpenApiTest, EveryDocumentedRouteIsServedAndNoOtherMethodOrPath) {
    auto concrete = [](std::string path) {
        for (auto [from, to] :
             {std::pair<std::string, std::string>{"{id}", "999999"}, {"{name}", "sim-0"}})
            if (auto p = path.find(from); p != std::string::npos) path.replace(p, from.size(), to);
        return path;
    };
    auto no_route = [](const http::ClientResponse& r) {
        return r.status == 404 && r.body.find("no route") != std::string::npos;
    };
    for (const auto& route : k_routes) {
        const std::string method = route.substr(0, route.find(' '));
        const std::string path = concrete(route.substr(route.find(' ') + 1));
        auto r = daemon->request(method, path, {{"Authorization", "Bearer ops-token"}}, "");
        ASSERT_TRUE(r) << route;
        EXPECT_FALSE(no_route(*r)) << route << " is documented but not served";
        EXPECT_NE(r->status, 405) << route << " is documented but its method is not served";
        // Any method the document does not list on a served API path is refused.
        if (path.rfind("/api/", 0) != 0) continue;
        for (const char* other : {"GET", "POST", "PUT", "DELETE", "PATCH"}) {
            if (k_routes.count(std::string(other) + " " + route.substr(route.find(' ') + 1)))
                continue;
            auto o = daemon->request(other, path, {{"Authorization", "Bearer ops-token"}}, "");
            EXPECT_EQ(o->status, 405)
                << other << " " << path << " answers although undocumented: " << o->body;
        }
    }
    EXPECT_TRUE(no_route(*daemon->request("GET", "/api/v1/undocumented",
                                          {{"Authorization", "Bearer ops-token"}}, "")));
    EXPECT_TRUE(no_route(*daemon->request("GET", "/elsewhere", {}, "")));
}

TEST_F(OpenApiTest, RealResponsesOfEveryRouteMatchTheirSchemas) {
    const auto regression = post_run({"aten/src/ATen/native/BinaryOps.cpp"}, "oa-1");
    const auto passing = post_run({"torch/_inductor/ir.py"}, "oa-2");
    ASSERT_EQ(daemon->finished(regression), "completed/regression");
    ASSERT_EQ(daemon->finished(passing), "completed/passed");
    const std::string job =
        std::to_string(first_job(*daemon, {.run = regression, .tier = "affected"}).id);
    const std::string run = std::to_string(regression);
    ASSERT_TRUE(eventually([&] { return count_outbox(*daemon, {.delivery = "sent"}) > 0; }));

    call("GET", "/healthz", "");
    call("GET", "/readyz", "");
    call("GET", "/metrics");
    call("GET", "/api/v1/runs");
    auto page = json::parse(call("GET", "/api/v1/runs?limit=1").body);
    ASSERT_TRUE(page["next_cursor"].is_string());
    call("GET", "/api/v1/runs?limit=1&cursor=" + page["next_cursor"].get<std::string>());
    call(
        "GET",
        "/api/v1/"
        "runs?state=completed&conclusion=regression&event=pull_request&since=2000-01-01T00:00:00Z");
    auto detail = json::parse(call("GET", "/api/v1/runs/" + run).body);
    EXPECT_FALSE(detail["jobs"].empty());
    EXPECT_FALSE(detail["statuses"].empty());
    EXPECT_TRUE(detail["selection"].is_object());
    call("GET", "/api/v1/jobs/" + job);
    EXPECT_FALSE(json::parse(call("GET", "/api/v1/jobs/" + job + "/tests").body)["items"].empty());
    call("GET", "/api/v1/jobs/" + job + "/tests?outcome=failed&limit=1");
    EXPECT_EQ(call("GET", "/api/v1/jobs/" + job + "/log?tail=100").status, 200);
    call("GET", "/api/v1/runners");
    EXPECT_FALSE(json::parse(call("GET", "/api/v1/deliveries").body)["items"].empty());
    call("GET", "/api/v1/deliveries?verdict=queued&limit=1");
    EXPECT_FALSE(json::parse(call("GET", "/api/v1/outbox").body)["items"].empty());
    call("GET", "/api/v1/outbox?state=sent&sink=file&run_id=" + run);
    call("GET", "/api/v1/recovery");
    call("GET", "/api/v1/selection-misses");
    call("GET", "/api/v1/selection-misses?run_id=" + run + "&test=ci::fail_ops");
    call("GET", "/api/v1/builds?state=ready&sha=" + std::string(40, 'A') + "&limit=1");
    call("GET", "/api/v1/openapi.yaml", "");

    // Writes, and what they answer.
    EXPECT_EQ(call("POST", "/api/v1/runs", "ops-token",
                   json{{"sha", std::string(40, 'e')}, {"tiers", {"import"}}}.dump())
                  .status,
              201);
    auto retried = call("POST", "/api/v1/runs/" + run + "/retry");
    EXPECT_EQ(retried.status, 201);
    auto retry_id = json::parse(retried.body)["run_id"].get<std::int64_t>();
    EXPECT_EQ(call("POST", "/api/v1/runs/" + std::to_string(retry_id) + "/cancel").status, 200);
    EXPECT_EQ(call("POST", "/api/v1/runners/sim-0/drain").status, 200);
    EXPECT_EQ(call("POST", "/api/v1/runners/sim-0/undrain").status, 200);
    EXPECT_EQ(call("POST", "/api/v1/outbox/1/retry").status, 409);  // sent, not dead
    EXPECT_EQ(call("POST", "/api/v1/recovery/run").status, 409);    // recovery is not configured
    EXPECT_EQ(call("POST", "/api/v1/builds/1/evict").status, 409);  // no build section

    // The errors: one body shape everywhere.
    EXPECT_EQ(call("GET", "/api/v1/runs?limit=500").status, 400);
    EXPECT_EQ(call("GET", "/api/v1/runs?state=sleeping").status, 400);
    EXPECT_EQ(call("POST", "/api/v1/runs", "ops-token", "{\"sha\": 12}").status, 400);
    EXPECT_EQ(call("GET", "/api/v1/runs", "").status, 401);
    EXPECT_EQ(call("GET", "/api/v1/runs", "wrong-token").status, 401);
    EXPECT_EQ(call("GET", "/metrics", "").status, 401);
    EXPECT_EQ(call("POST", "/api/v1/runs/" + run + "/cancel", "read-token").status, 403);
    EXPECT_EQ(call("GET", "/api/v1/runs/999999").status, 404);
    EXPECT_EQ(call("GET", "/api/v1/jobs/999999").status, 404);
    EXPECT_EQ(call("POST", "/api/v1/runs/999999/cancel").status, 404);
    EXPECT_EQ(call("POST", "/api/v1/runners/nope/drain").status, 404);
    EXPECT_EQ(call("POST", "/api/v1/runs/" + run + "/cancel").status, 409);
    EXPECT_EQ(call("GET", "/readyz", "", "", {}).status, 200);
    EXPECT_EQ(call("PUT", "/healthz", "").status, 405);

    // The webhook's answers.
    json dup = json::parse(fixture_text("crcr/direct-pytorch-crcr.json"));
    dup["client_payload"]["changed_files"] = json::array({"torch/_inductor/ir.py"});
    dup["client_payload"]["pr_number"] = 301;
    auto again = daemon->post_standard(dup.dump(), "oa-2");
    seen.push_back({"POST", "/webhook", again->status,
                    std::string(again->header("Content-Type").value_or("")), again->body});
    auto unsigned_post =
        daemon->request("POST", "/webhook", {{"Content-Type", "application/json"}}, "{}");
    seen.push_back({"POST", "/webhook", unsigned_post->status,
                    std::string(unsigned_post->header("Content-Type").value_or("")),
                    unsigned_post->body});
    EXPECT_EQ(unsigned_post->status, 401);

    const auto verdicts = check(seen);
    ASSERT_EQ(verdicts.size(), seen.size()) << (verdicts.empty() ? "" : verdicts.front());
    for (std::size_t i = 0; i < seen.size(); ++i) {
        EXPECT_EQ(verdicts[i], "ok") << seen[i].method << " " << seen[i].path << " "
                                     << seen[i].status << ": " << seen[i].body.substr(0, 2000);
    }
}

// The checker is strict enough to catch drift: a real body passes, the same body with a field
// retyped, renamed or out of its enum fails.
TEST(OpenApiChecker, ABodyThatDriftedFromTheDocumentIsRejected) {
    json run = {{"id", 3},
                {"event", "push"},
                {"sha", std::string(40, 'a')},
                {"pr", nullptr},
                {"ref", "refs/heads/main"},
                {"base_sha", nullptr},
                {"delivery_id", "d-1"},
                {"state", "completed"},
                {"conclusion", "passed"},
                {"reason", nullptr},
                {"created_at", "2026-11-29T17:54:47.120Z"},
                {"finished_at", "2026-11-29T17:55:00Z"},
                {"selection", nullptr},
                {"base_ref", nullptr},
                {"head_repo", nullptr},
                {"a_new_field", true}};
    auto page = [](const json& item) {
        return json{{"items", json::array({item})}, {"next_cursor", nullptr}}.dump();
    };
    json retyped = run, renamed = run, unknown_state = run, bad_time = run;
    retyped["id"] = "3";
    renamed.erase("conclusion");
    renamed["outcome"] = "passed";
    unknown_state["state"] = "sleeping";
    bad_time["created_at"] = "yesterday";
    const std::string t = "application/json";
    auto verdicts =
        check({{"GET", "/api/v1/runs", 200, t, page(run)},
               {"GET", "/api/v1/runs?limit=1", 200, t, page(retyped)},
               {"GET", "/api/v1/runs", 200, t, page(renamed)},
               {"GET", "/api/v1/runs", 200, t, page(unknown_state)},
               {"GET", "/api/v1/runs", 200, t, page(bad_time)},
               {"GET", "/api/v1/runs/7", 404, t, R"({"error": "not_found", "detail": 7})"},
               {"GET", "/api/v1/runs/7", 418, t, R"({"error": "teapot"})"},
               {"GET", "/api/v1/nowhere", 200, t, "{}"},
               {"GET", "/api/v1/runs", 200, "text/html", "<p>"}});
    ASSERT_EQ(verdicts.size(), 9u);
    EXPECT_EQ(verdicts[0], "ok");
    for (std::size_t i = 1; i < verdicts.size(); ++i)
        EXPECT_EQ(verdicts[i].rfind("error: ", 0), 0u) << i << ": " << verdicts[i];
    EXPECT_NE(verdicts[1].find("'3' is not of type 'integer'"), std::string::npos) << verdicts[1];
    EXPECT_NE(verdicts[2].find("'conclusion' is a required property"), std::string::npos)
        << verdicts[2];
}

}  // namespace
}  // namespace crcrd
