// Selection misses (docs/verdicts.md) through the real daemon: GET /api/v1/selection-misses,
// `crcrctl misses` and /metrics on recorded misses, and the whole audit: two scheduled runs of
// the full matrix around a commit that only a push run tested, on a real git upstream.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "crcrd/core/crypto.hpp"
#include "crcrd/core/files.hpp"
#include "support/certs.hpp"
#include "support/ci_script.hpp"
#include "support/daemon.hpp"
#include "support/state.hpp"

namespace crcrd {
namespace {

using nlohmann::json;

constexpr const char* k_sha0 = "1111111111111111111111111111111111111111";
constexpr const char* k_sha1 = "2222222222222222222222222222222222222222";
constexpr const char* k_sha2 = "3333333333333333333333333333333333333333";

std::string admin_yaml() {
    return "admin: {tokens: [{name: ops, role: admin, sha256: " + crypto::sha256_hex("ops-token") +
           "}, {name: viewer, role: read, sha256: " + crypto::sha256_hex("read-token") + "}]}\n";
}

TEST(SelectionMisses, RecordedMissesAreListedPagedFilteredPrintedAndCounted) {
    TempDir dir;
    write_file(dir.path() / "selection.yaml",
               "tiers:\n  - {name: full, scheduled: true, tests: [ok_a]}\n");
    write_file(dir.path() / "read.token", "read-token\n", 0600);
    TestDaemon d(dir.path(), "selection: {rules: selection.yaml}\n" + admin_yaml());
    d.start();
    EXPECT_EQ(d.stop(), 0);  // migrated; the rows the audit would have written go in directly
    const std::string commits =
        std::string(R"j([{"sha":")j") + k_sha1 +
        R"j(","subject":"Tools (#12)","pr":12,"paths":["tools/a.py"],"rules":[],"runs":[]},)j" +
        R"j({"sha":")j" + k_sha2 +
        R"j(","subject":"Docs","pr":null,"paths":["docs/a.md","torch/_inductor/x.py"],)j" +
        R"j("rules":["compile","docs"],"runs":[3]}])j";
    insert_run(d, {"schedule", k_sha0, "refs/heads/main", "completed", "passed",
                   "2026-12-01T03:00:00.000Z"});
    insert_run(d, {"schedule", k_sha2, "refs/heads/main", "completed", "regression",
                   "2026-12-02T03:00:00.000Z"});
    insert_run(
        d, {"push", k_sha2, "refs/heads/main", "completed", "passed", "2026-12-01T12:00:00.000Z"});
    insert_selection_miss(
        d, {2, 1, "full", "test_nn.py::test_a", commits, "2026-12-02T04:00:00.000Z"});
    insert_selection_miss(
        d, {2, 1, "full", "test_nn.py::test_b", commits, "2026-12-02T04:00:00.000Z"});
    insert_selection_miss(d,
                          {3, 2, "full", "test_nn.py::test_a", "[]", "2026-12-02T05:00:00.000Z"});
    d.start();
    auto get = [&](const std::string& path, int status = 200) {
        auto r = d.request("GET", path, {{"Authorization", "Bearer read-token"}}, "");
        EXPECT_EQ(r->status, status) << path << ": " << r->body;
        return json::parse(r->body);
    };
    auto ids = [](const json& page) {
        std::vector<std::int64_t> out;
        for (const auto& m : page["items"]) out.push_back(m["id"].get<std::int64_t>());
        return out;
    };
    using Ids = std::vector<std::int64_t>;

    auto all = get("/api/v1/selection-misses");
    EXPECT_EQ(ids(all), (Ids{3, 2, 1}));
    EXPECT_TRUE(all["next_cursor"].is_null());
    const auto& first = all["items"][2];
    EXPECT_EQ(first["run_id"], 2);
    EXPECT_EQ(first["previous_run_id"], 1);
    EXPECT_EQ(first["tier"], "full");
    EXPECT_EQ(first["test"], "test_nn.py::test_a");
    EXPECT_EQ(first["created_at"], "2026-12-02T04:00:00.000Z");
    ASSERT_EQ(first["commits"].size(), 2u);
    EXPECT_EQ(first["commits"][1]["rules"], json::array({"compile", "docs"}));
    EXPECT_EQ(first["commits"][0]["pr"], 12);

    auto page1 = get("/api/v1/selection-misses?limit=2");
    EXPECT_EQ(ids(page1), (Ids{3, 2}));
    ASSERT_TRUE(page1["next_cursor"].is_string());
    auto page2 =
        get("/api/v1/selection-misses?limit=2&cursor=" + page1["next_cursor"].get<std::string>());
    EXPECT_EQ(ids(page2), (Ids{1}));
    EXPECT_EQ(ids(get("/api/v1/selection-misses?run_id=2")), (Ids{2, 1}));
    EXPECT_EQ(ids(get("/api/v1/selection-misses?test=test_nn.py::test_a")), (Ids{3, 1}));
    EXPECT_EQ(ids(get("/api/v1/selection-misses?run_id=2&test=test_nn.py::test_b")), (Ids{2}));
    EXPECT_EQ(get("/api/v1/selection-misses?run_id=x", 400)["detail"],
              "run_id must be an integer from 1 to 9223372036854775807");
    get("/api/v1/selection-misses?limit=201", 400);
    get("/api/v1/selection-misses?cursor=nope", 400);
    EXPECT_EQ(d.request("GET", "/api/v1/selection-misses", {}, "")->status, 401);

    // crcrctl misses: a table (the rules any commit's paths matched, the first commits), or the
    // JSON.
    auto ctl = [&](std::vector<std::string> args, std::string* out) {
        std::vector<std::string> argv = {CRCRCTL_BIN,
                                         "--url",
                                         d.url(""),
                                         "--cacert",
                                         test_certs().ca.string(),
                                         "--token-file",
                                         (dir.path() / "read.token").string(),
                                         "misses"};
        argv.insert(argv.end(), args.begin(), args.end());
        return run_command(argv, out);
    };
    std::string out;
    ASSERT_EQ(ctl({}, &out), 0) << out;
    EXPECT_NE(out.find("ID  RUN  TEST"), std::string::npos) << out;
    EXPECT_NE(out.find("test_nn.py::test_b"), std::string::npos) << out;
    EXPECT_NE(out.find("compile,docs"), std::string::npos) << out;
    EXPECT_NE(out.find("222222222 333333333"), std::string::npos) << out;
    ASSERT_EQ(ctl({"--limit", "1"}, &out), 0) << out;
    EXPECT_NE(out.find("(more: --cursor "), std::string::npos) << out;
    ASSERT_EQ(ctl({"--run", "2", "--json"}, &out), 0) << out;
    EXPECT_EQ(ids(json::parse(out)), (Ids{2, 1}));
    EXPECT_EQ(ctl({"--state", "x"}, &out), 2) << out;
    EXPECT_EQ(ctl({"list"}, &out), 2) << out;
    EXPECT_EQ(ctl({"--run", "0"}, &out), 2) << out;  // the API refuses it: a usage error
    EXPECT_NE(out.find("HTTP 400"), std::string::npos) << out;

    auto metrics = d.request("GET", "/metrics", {{"Authorization", "Bearer read-token"}}, "");
    ASSERT_EQ(metrics->status, 200);
    EXPECT_NE(metrics->body.find("\ncrcrd_selection_misses_total 3\n"), std::string::npos)
        << metrics->body;
    EXPECT_NE(metrics->body.find("# TYPE crcrd_selection_misses_total counter"), std::string::npos);
}

/// A small upstream: main at c0, then one commit that only a push run tests.
class Upstream {
  public:
    explicit Upstream(const std::filesystem::path& dir) : m_dir(dir) {
        run_test_git({"init", "--quiet", "-b", "main", m_dir.string()});
        write_file(m_dir / "torch/nn/modules/linear.py", "x = 1\n");
        write_file(m_dir / "docs/index.rst", "docs\n");
        c0 = commit("initial");
    }
    std::string commit(const std::string& message) {
        run_test_git({"-C", m_dir.string(), "add", "-A"});
        run_test_git({"-C", m_dir.string(), "commit", "--quiet", "-m", message});
        return trim(run_test_git({"-C", m_dir.string(), "rev-parse", "HEAD"}));
    }
    void write(const std::string& rel, const std::string& content) {
        write_file(m_dir / rel, content);
    }
    const std::filesystem::path& dir() const { return m_dir; }
    std::string c0;

  private:
    std::filesystem::path m_dir;
};

// Through the planner thread's followups: a scheduled run that ended regression is audited.
TEST(SelectionMisses, AScheduledFailureThatNoPrOrPushRunSelectedIsRecorded) {
    TempDir dir;
    Upstream upstream(dir.path() / "upstream");
    // The full tier's test fails once `broken` exists: the change that broke it is c1, which
    // matches no rule (unmatched: nothing), so its push run ran the always tier only.
    const auto broken = dir.path() / "broken";
    write_file(dir.path() / "ci" / "ci.sh",
               "#!/bin/sh\nif [ -e " + broken.string() +
                   " ] && grep -q ok_nn \"$CRCR_TESTS_FILE\"; then\n"
                   "  echo '<testsuite name=\"ci\"><testcase classname=\"ci\" "
                   "name=\"ok_nn\"><failure message=\"boom\"/>"
                   "</testcase></testsuite>' > \"$CRCR_JUNIT_DIR/results.xml\"; exit 1\nfi\n" +
                   std::string(k_ci_script).substr(std::string(k_ci_script).find('\n') + 1),
               0755);
    write_file(dir.path() / "selection.yaml",
               "tiers:\n  - {name: import, always: true, tests: [ok_import]}\n"
               "  - {name: affected, from_rules: true}\n"
               "  - {name: full, scheduled: true, tests: [ok_nn]}\n"
               "rules:\n  - {name: nn, paths: [\"torch/nn/**\"], tests: [ok_other]}\n"
               "unmatched: nothing\n"
               "full_matrix: {schedule: \"0 3 * * *\", ref: main}\n");
    write_file(dir.path() / "read.token", "read-token\n", 0600);
    TestDaemon d(dir.path(),
                 "upstream: {mirror: state/pytorch.git, remote: " + upstream.dir().string() +
                     "}\n"
                     "selection: {rules: selection.yaml}\n"
                     "runners: [{name: sim-0, labels: [sim], health_check: [/bin/true]}]\n"
                     "execution: {command: [ci/ci.sh], work_root: state/work, isolation: none, "
                     "min_free_bytes: 1MiB, "
                     "flaky_reruns: 0, infra_retries: 0}\n" +
                     admin_yaml());
    // The full matrix fires at start-up when its next time has passed.
    auto scheduled_run = [&] {
        const auto before = count_runs(d, {.event = "schedule"});
        EXPECT_EQ(d.stop(), 0);
        set_full_matrix_next(d, 1);
        d.start();
        EXPECT_TRUE(eventually(
            [&] {
                return count_runs(d, {.event = "schedule", .state = "completed"}) == before + 1;
            },
            std::chrono::seconds(60)))
            << d.log();
        const auto scheduled = run_rows(d, {.event = "schedule"});
        return scheduled.empty() ? std::int64_t{0} : scheduled.back().id;
    };
    d.start();
    ASSERT_TRUE(eventually([&] { return full_matrix_next(d).has_value(); }));
    const auto good = scheduled_run();
    EXPECT_EQ(run_row(d, good).conclusion, "passed") << d.log();

    upstream.write("tools/setup_helpers/env.py", "BROKEN = True\n");
    const auto c1 = upstream.commit("Change the build env (#31)");
    json j = json::parse(fixture_text("crcr/direct-pytorch-crcr.json"));
    auto& cp = j["client_payload"];
    cp["upstream_sha"] = c1;
    cp["changed_files"] = json::array({"tools/setup_helpers/env.py"});
    cp.erase("pr_number");
    cp["ref"] = "refs/heads/main";
    auto posted = d.post_standard(j.dump(), "miss-push-1");
    ASSERT_EQ(posted->status, 202) << posted->body;
    const auto push = json::parse(posted->body)["run_id"].get<std::int64_t>();
    ASSERT_TRUE(eventually([&] { return run_row(d, push).state == "completed"; },
                           std::chrono::seconds(60)));
    EXPECT_EQ(count_jobs(d, {.run = push, .tier = "full"}), 0);

    write_file(broken, "");
    const auto bad = scheduled_run();
    ASSERT_GT(bad, good);
    EXPECT_EQ(run_row(d, bad).conclusion, "regression") << d.log();
    ASSERT_TRUE(
        eventually([&] { return count_selection_misses(d) == 1; }, std::chrono::seconds(30)))
        << d.log();
    auto r =
        d.request("GET", "/api/v1/selection-misses", {{"Authorization", "Bearer read-token"}}, "");
    ASSERT_EQ(r->status, 200);
    const auto miss = json::parse(r->body)["items"][0];
    EXPECT_EQ(miss["run_id"], bad);
    EXPECT_EQ(miss["previous_run_id"], good);
    EXPECT_EQ(miss["tier"], "full");
    EXPECT_EQ(miss["test"], "ci::ok_nn");
    ASSERT_EQ(miss["commits"].size(), 1u);
    EXPECT_EQ(miss["commits"][0]["sha"], c1);
    EXPECT_EQ(miss["commits"][0]["pr"], 31);
    EXPECT_EQ(miss["commits"][0]["paths"], json::array({"tools/setup_helpers/env.py"}));
    EXPECT_EQ(miss["commits"][0]["rules"], json::array());
    EXPECT_EQ(miss["commits"][0]["runs"], json::array({push}));
    EXPECT_EQ(count_followups(d, "audit"), 0);
}

}  // namespace
}  // namespace crcrd
