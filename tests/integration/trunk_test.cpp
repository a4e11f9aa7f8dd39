// Trunk health (docs/dashboard.md) through the real daemon: a real upstream of 11 commits where
// commit 8 breaks a test, pushes of every other commit (two of them with a test that passes only
// on its rerun), a build stage before the tiers, and the bisection that finds the culprit. Then
// GET /api/v1/trunk, /api/v1/tests/{name}/history and /api/v1/tests?flaky=1 (validated against
// docs/openapi.yaml), crcrctl trunk / tests history / tests flaky, and the pages in a real
// Chromium with JavaScript off (screenshots in <build>/test-artifacts/trunk/).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>

#include "crcrd/core/crypto.hpp"
#include "crcrd/core/files.hpp"
#include "crcrd/core/time.hpp"
#include "support/admin_calls.hpp"
#include "support/build_stage.hpp"
#include "support/ci_script.hpp"
#include "support/daemon.hpp"
#include "support/process.hpp"
#include "support/state.hpp"
#include "support/webdriver.hpp"

namespace crcrd {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

// The tiers' command: `regressed` fails once the pinned checkout has the file `regressed`;
// `sometimes` fails on the first attempt of a commit flagged in $FLAKE_DIR (and passes on the
// rerun); anything else passes. A rerun runs only what failed (JUnit ids t::<name>).
constexpr const char* k_tier_script = R"SH(#!/bin/sh
out="$CRCR_JUNIT_DIR/results.xml"
tests="$CRCR_TESTS_FILE"
if [ -n "${CRCR_RERUN_FILE:-}" ]; then
  sed 's/^t:://' "$CRCR_RERUN_FILE" > rerun-tests.txt
  tests=rerun-tests.txt
fi
echo '<testsuite name="t">' > "$out.part"
status=0
while IFS= read -r t; do
  fail=0
  case "$t" in
    regressed) [ -e "$CRCR_PYTORCH_DIR/regressed" ] && fail=1 ;;
    sometimes) [ "$CRCR_ATTEMPT" = 1 ] && [ -e "$FLAKE_DIR/$CRCR_PYTORCH_SHA" ] && fail=1 ;;
  esac
  if [ "$fail" = 1 ]; then
    echo "<testcase classname=\"t\" name=\"$t\"><failure message=\"$t failed on $CRCR_PYTORCH_SHA\">assert</failure></testcase>" >> "$out.part"
    status=1
  else
    echo "<testcase classname=\"t\" name=\"$t\" time=\"0.01\"/>" >> "$out.part"
  fi
done < "$tests"
echo '</testsuite>' >> "$out.part"
mv "$out.part" "$out"
exit $status
)SH";

constexpr const char* k_build_script = R"SH(#!/bin/sh
echo "built $CRCR_PYTORCH_SHA" > "$CRCR_BUILD_OUT/lib.txt"
)SH";

bool has(const std::string& haystack, const std::string& needle) {
    return haystack.find(needle) != std::string::npos;
}

class TrunkTest : public ::testing::Test {
  protected:
    static constexpr std::size_t k_commits = 11;
    static constexpr std::size_t k_culprit = 8;

    void SetUp() override {
        if (auto why = bwrap_unavailable(); !why.empty()) GTEST_SKIP() << why;
        make_upstream();
        install_script(bin.path() / "tier.sh", k_tier_script);
        install_script(bin.path() / "build.sh", k_build_script);
        fs::create_directories(flake_dir());
        fs::permissions(flake_dir(), fs::perms(0755));
        write_file(dir.path() / "ops.token", "ops-token\n", 0600);
        BuildStageSetup s;
        s.build_script = bin.path() / "build.sh";
        s.test_script = bin.path() / "tier.sh";
        s.tiers =
            "  - {name: import, always: true, tests: [regressed, sometimes, steady]}\n"
            "  - {name: smoke, always: true, tests: [quick]}\n";
        s.env = ", FLAKE_DIR: " + flake_dir().string();
        s.admin_tokens =
            "{name: ops, role: admin, sha256: " + crypto::sha256_hex("ops-token") +
            "}, {name: viewer, role: read, sha256: " + crypto::sha256_hex("read-token") + "}";
        daemon = std::make_unique<TestDaemon>(
            dir.path(), build_stage_config(dir.path(), s) +
                            "upstream: {mirror: state/pytorch.git, remote: " + upstream().string() +
                            "}\nbisect: {max_runs: 4, refs: [main]}\n");
        daemon->start();
    }

    fs::path upstream() const { return dir.path() / "upstream"; }
    fs::path flake_dir() const { return bin.path() / "flaky"; }

    /// main: commit i writes c<i>.txt; commit k_culprit also adds `regressed`.
    void make_upstream() {
        run_test_git({"init", "--quiet", "-b", "main", upstream().string()});
        for (std::size_t i = 0; i < k_commits; ++i) {
            write_file(upstream() / ("c" + std::to_string(i) + ".txt"), std::to_string(i) + "\n");
            if (i == k_culprit) write_file(upstream() / "regressed", "broken\n");
            run_test_git({"-C", upstream().string(), "add", "-A"});
            run_test_git({"-C", upstream().string(), "commit", "--quiet", "--author",
                          "Ada Lovelace <ada@example.org>", "-m", "commit " + std::to_string(i)});
            shas.push_back(run_test_git({"-C", upstream().string(), "rev-parse", "HEAD"}));
        }
    }

    /// A push of commit `i` to main; its run once it finished, with its class.
    std::int64_t push(std::size_t i, const std::string& expected) {
        json j = json::parse(fixture_text("crcr/direct-pytorch-crcr.json"));
        auto& cp = j["client_payload"];
        cp.erase("pr_number");
        cp["upstream_sha"] = shas.at(i);
        cp["ref"] = "refs/heads/main";
        cp["changed_files"] = json::array({"c" + std::to_string(i) + ".txt"});
        auto r = daemon->post_standard(j.dump(), "push-" + std::to_string(i));
        EXPECT_TRUE(r && r->status == 202) << (r ? r->body : r.error().message);
        const auto run = json::parse(r->body)["run_id"].get<std::int64_t>();
        EXPECT_EQ(daemon->finished(run), "completed/" + expected) << "commit " << i;
        runs[i] = run;
        return run;
    }

    /// Waits until the grid shows that the bisection of run `run` ended; that bisection.
    json bisected(std::int64_t run) {
        json found;
        const bool ended = eventually(
            [&] {
                auto r = daemon->request("GET", "/api/v1/trunk",
                                         {{"Authorization", "Bearer ops-token"}}, "");
                const json grid = r ? json::parse(r->body, nullptr, false) : json();
                for (const auto& row : grid.value("rows", json::array()))
                    for (const auto& b : row["bisections"])
                        if (b["bad_run_id"] == run && b["state"] != "running") found = b;
                return found.is_object();
            },
            std::chrono::seconds(120));
        EXPECT_TRUE(ended) << "the bisection of run " << run << " did not end";
        return found;
    }

    /// The history this test looks at: pushes of 0, 2, 4, 6 (2 and 4 with a flaky test), then
    /// 8 (the culprit) and 10, both regressions, each bisected to commit 8.
    void make_history() {
        write_file(flake_dir() / shas.at(2), "");
        write_file(flake_dir() / shas.at(4), "");
        for (std::size_t i : {0, 2, 4, 6}) push(i, i == 2 || i == 4 ? "flaky" : "passed");
        push(8, "regression");
        ASSERT_EQ(bisected(runs[8])["culprit"], shas.at(k_culprit));
        push(10, "regression");
        ASSERT_EQ(bisected(runs[10])["culprit"], shas.at(k_culprit));
    }

    http::ClientResponse call(const std::string& path, const std::string& token = "ops-token") {
        auto r = daemon->request("GET", path, {{"Authorization", "Bearer " + token}}, "");
        EXPECT_TRUE(r) << path;
        if (!r) return {};
        seen.push_back(answer_line("GET", path, *r));
        return *r;
    }
    json get(const std::string& path) {
        auto r = call(path);
        EXPECT_EQ(r.status, 200) << path << ": " << r.body;
        return json::parse(r.body, nullptr, false);
    }

    /// crcrctl's output (its exit code must be 0).
    std::string ctl(const std::vector<std::string>& args) {
        std::string out;
        EXPECT_EQ(run_crcrctl(*daemon, dir.path() / "ops.token", args, out), 0) << out;
        return out;
    }

    /// The grid's row of commit `i`.
    static json row_of(const json& grid, const std::string& sha) {
        for (const auto& r : grid["rows"])
            if (r["sha"] == sha) return r;
        return json::object();
    }

    TempDir dir;
    TempDir bin;
    std::vector<std::string> shas;
    std::map<std::size_t, std::int64_t> runs;  // commit → its push's run
    std::unique_ptr<TestDaemon> daemon;
    std::vector<std::string> seen;
};

TEST_F(TrunkTest, TheGridShowsEachCommitsTiersSinceWhenItIsRedAndTheCulprit) {
    make_history();
    const json grid = get("/api/v1/trunk");
    EXPECT_EQ(grid["ref"], "refs/heads/main");
    // The build stage is a column, before the tiers; bisect runs are not rows.
    EXPECT_EQ(grid["tiers"], json::array({"build", "import", "smoke"}));
    ASSERT_EQ(grid["rows"].size(), 6u) << grid.dump(2);
    const std::size_t order[] = {10, 8, 6, 4, 2, 0};
    for (std::size_t k = 0; k < 6; ++k) {
        const json& row = grid["rows"][k];
        const std::size_t c = order[k];
        EXPECT_EQ(row["sha"], shas[c]);
        EXPECT_EQ(row["subject"], "commit " + std::to_string(c));
        EXPECT_EQ(row["author"], "Ada Lovelace");
        EXPECT_EQ(row["runs"][0]["id"], runs[c]);
        EXPECT_EQ(row["cells"]["build"]["conclusion"], "passed") << row.dump();
        // A regression of import cancels the tiers after it.
        EXPECT_EQ(row["cells"]["smoke"]["conclusion"], c >= k_culprit ? "cancelled" : "passed")
            << row.dump();
        const std::string import = c >= k_culprit     ? "regression"
                                   : c == 2 || c == 4 ? "flaky"
                                                      : "passed";
        EXPECT_EQ(row["cells"]["import"]["conclusion"], import) << row.dump();
        // Each cell is the tier's last attempt in that run.
        const auto job = job_row(*daemon, row["cells"]["import"]["job_id"].get<std::int64_t>());
        EXPECT_EQ(job.run_id, runs[c]);
        EXPECT_EQ(job.tier, "import");
        EXPECT_EQ(job.attempt, last_job(*daemon, {.run = runs[c], .tier = "import"}).attempt);
    }
    // Red since the culprit's push, two regression runs, bisected to the culprit.
    ASSERT_EQ(grid["red_since"].size(), 1u) << grid["red_since"].dump();
    EXPECT_EQ(grid["red_since"][0]["tier"], "import");
    EXPECT_EQ(grid["red_since"][0]["sha"], shas[k_culprit]);
    EXPECT_EQ(grid["red_since"][0]["run_id"], runs[k_culprit]);
    EXPECT_EQ(grid["red_since"][0]["runs"], 2);
    EXPECT_EQ(grid["red_since"][0]["culprit"], shas[k_culprit]);
    // The culprit's row is marked; so are the bisected runs' rows.
    const json culprit = row_of(grid, shas[k_culprit]);
    ASSERT_FALSE(culprit["culprit_of"].empty()) << culprit.dump();
    EXPECT_EQ(culprit["culprit_of"][0]["tier"], "import");
    EXPECT_EQ(row_of(grid, shas[10])["bisections"][0]["culprit"], shas[k_culprit]);
    EXPECT_TRUE(row_of(grid, shas[10])["culprit_of"].empty());
    EXPECT_TRUE(row_of(grid, shas[6])["bisections"].empty());

    // Pages of two commits; only the first says what is red now.
    const json first = get("/api/v1/trunk?limit=2");
    ASSERT_EQ(first["rows"].size(), 2u);
    ASSERT_TRUE(first["next_cursor"].is_string());
    const json second =
        get("/api/v1/trunk?limit=2&ref=main&cursor=" + first["next_cursor"].get<std::string>());
    ASSERT_EQ(second["rows"].size(), 2u);
    EXPECT_EQ(second["rows"][0]["sha"], shas[6]);
    EXPECT_EQ(second["rows"][1]["sha"], shas[4]);
    EXPECT_TRUE(second["red_since"].empty());
    // A branch bisect.refs does not name is refused, naming the ones it does.
    auto other = call("/api/v1/trunk?ref=release");
    EXPECT_EQ(other.status, 400);
    EXPECT_TRUE(has(other.body, "refs/heads/main")) << other.body;
    EXPECT_EQ(call("/api/v1/trunk?limit=0").status, 400);
    EXPECT_EQ(call("/api/v1/trunk", "wrong").status, 401);
    EXPECT_EQ(openapi_verdict(seen), "ok");

    // crcrctl trunk: the same, for a terminal.
    const std::string out = ctl({"trunk"});
    EXPECT_TRUE(has(out, "RED import since " + shas[k_culprit].substr(0, 12) + " (run " +
                             std::to_string(runs[k_culprit]) +
                             ", 2 regression runs), bisected to " + shas[k_culprit].substr(0, 12)))
        << out;
    std::string line10, line8;
    std::istringstream lines(out);
    for (std::string l; std::getline(lines, l);) {
        if (l.rfind(shas[10].substr(0, 12), 0) == 0) line10 = l;
        if (l.rfind(shas[k_culprit].substr(0, 12), 0) == 0) line8 = l;
    }
    EXPECT_TRUE(has(line10, "passed  regression  cancelled")) << out;
    EXPECT_TRUE(has(line10, "commit 10")) << out;
    EXPECT_TRUE(has(line8, "CULPRIT of the import regression")) << out;
    EXPECT_EQ(json::parse(ctl({"trunk", "--json", "--limit", "1"}))["rows"].size(), 1u);
}

TEST_F(TrunkTest, ATestsHistoryAndTheFlakyListShowWhatItsRunsDid) {
    make_history();
    // `sometimes`: six pushes ran it, two of them needed its rerun.
    const json some = get("/api/v1/tests/t%3A%3Asometimes/history");
    EXPECT_EQ(some["name"], "t::sometimes");
    ASSERT_EQ(some["runs"].size(), 6u) << some.dump(2);
    EXPECT_EQ(some["counts"]["flaky"], 2);
    EXPECT_EQ(some["counts"]["passed"], 4);
    EXPECT_DOUBLE_EQ(some["flaky_rate"].get<double>(), 2.0 / 6.0);
    EXPECT_EQ(some["last_failure"]["run_id"], runs[4]);
    EXPECT_EQ(some["first_failure"]["run_id"], runs[2]);
    EXPECT_EQ(some["runs"][0]["run_id"], runs[10]);  // newest first
    for (const auto& r : some["runs"]) {
        // Each entry is the run's last attempt of the tier.
        const auto run = r["run_id"].get<std::int64_t>();
        EXPECT_EQ(r["job_id"], last_job(*daemon, {.run = run, .tier = "import"}).id);
        EXPECT_EQ(r["result"], run == runs[2] || run == runs[4] ? "flaky" : "passed");
    }
    // `regressed`: it failed in both red pushes (and in the bisect run of the culprit).
    const json reg = get("/api/v1/tests/t::regressed/history?limit=200");
    EXPECT_EQ(reg["last_failure"]["result"], "failed");
    std::size_t failed_pushes = 0;
    for (const auto& r : reg["runs"]) {
        const auto run = r["run_id"].get<std::int64_t>();
        if (run == runs[8] || run == runs[10]) {
            EXPECT_EQ(r["result"], "failed");
            EXPECT_TRUE(has(r["message"].get<std::string>(), "regressed failed")) << r.dump();
            ++failed_pushes;
        }
        if (r["event"] == "push" && run != runs[8] && run != runs[10]) {
            EXPECT_EQ(r["result"], "passed");
        }
    }
    EXPECT_EQ(failed_pushes, 2u);
    EXPECT_EQ(reg["counts"]["flaky"], 0);
    EXPECT_EQ(call("/api/v1/tests/t%3A%3Anever/history").status, 404);

    // The flaky list: `sometimes`, and nothing that never needed a rerun.
    const json flaky = get("/api/v1/tests?flaky=1");
    ASSERT_EQ(flaky["items"].size(), 1u) << flaky.dump(2);
    EXPECT_EQ(flaky["items"][0]["name"], "t::sometimes");
    EXPECT_EQ(flaky["items"][0]["flaky"], 2);
    EXPECT_EQ(flaky["items"][0]["runs"], 6);
    EXPECT_EQ(flaky["items"][0]["last_flaky"]["run_id"], runs[4]);
    EXPECT_EQ(call("/api/v1/tests").status, 400);
    EXPECT_EQ(openapi_verdict(seen), "ok");

    const std::string history = ctl({"tests", "history", "t::sometimes"});
    EXPECT_TRUE(has(history, "test t::sometimes: 6 runs, flaky rate 33.3 %")) << history;
    EXPECT_TRUE(has(history, "last failure: flaky in run " + std::to_string(runs[4]))) << history;
    const std::string list = ctl({"tests", "flaky"});
    EXPECT_TRUE(has(list, "33.3 %")) << list;
    EXPECT_TRUE(has(list, "t::sometimes")) << list;
}

TEST_F(TrunkTest, APersonWalksTheGridToAJobToATestsHistoryInChromium) {
    make_history();
    const auto shots = test_artifacts_dir("trunk");
    Browser b;
    // Signing in lands on the trunk grid, the default page.
    b.go(daemon->url("/ui/login"));
    b.type(b.find("#token"), "read-token");
    b.click_to(b.find("form[action='/ui/login'] button"), "/ui/trunk");
    b.screenshot(shots / "trunk.png");
    const std::string banner = b.text("p.red");
    EXPECT_TRUE(has(banner, "import red since " + shas[k_culprit].substr(0, 7))) << banner;
    EXPECT_TRUE(has(banner, "bisected to " + shas[k_culprit].substr(0, 7))) << banner;
    EXPECT_EQ(b.find_all("table.trunk tr").size(), 7u);  // a header and six commits
    const std::string head = b.text("table.trunk tr:nth-child(1)");
    EXPECT_TRUE(has(head, "build") && has(head, "import") && has(head, "smoke")) << head;
    // The culprit's row is marked and says so; its SHA links upstream.
    EXPECT_EQ(b.find_all("table.trunk tr.culprit").size(), 1u);
    EXPECT_TRUE(has(b.text("table.trunk tr.culprit"), "commit 8")) << b.text("table.trunk");
    EXPECT_TRUE(has(b.text("table.trunk tr.culprit"), "culprit of the import regression"));
    EXPECT_EQ(
        b.attribute(b.find("table.trunk tr:nth-child(2) a[title='" + shas[10] + "']"), "href"),
        "https://github.com/pytorch/pytorch/commit/" + shas[10]);
    // The newest commit's import cell: a regression badge linked to its job.
    const auto job = last_job(*daemon, {.run = runs[10], .tier = "import"}).id;
    const std::string cell = "table.trunk a[href='/ui/jobs/" + std::to_string(job) + "']";
    EXPECT_EQ(b.text(cell), "regression");
    b.click_to(b.find(cell), "/ui/jobs/" + std::to_string(job));
    EXPECT_TRUE(has(b.text("main"), "Job " + std::to_string(job) + ": import")) << b.text("main");
    // From the job's tests to a test's history: the strip and its numbers.
    b.click_to(b.find("a[href='/ui/tests/t%3A%3Aregressed']"), "/ui/tests/");
    b.screenshot(shots / "test-history.png");
    EXPECT_TRUE(has(b.text("h1"), "t::regressed"));
    const auto strip = b.find_all("p.strip a");
    const json api = get("/api/v1/tests/t%3A%3Aregressed/history");
    ASSERT_EQ(strip.size(), api["runs"].size());
    // Each cell is the API's entry, in its order, linked to its job; the red pushes show F.
    for (std::size_t i = 0; i < strip.size(); ++i) {
        const json& r = api["runs"][i];
        const auto run = r["run_id"].get<std::int64_t>();
        EXPECT_TRUE(
            b.attribute(strip[i], "title")
                .starts_with(r["result"].get<std::string>() + " in run " + std::to_string(run)))
            << b.attribute(strip[i], "title");
        EXPECT_EQ(b.attribute(strip[i], "href"),
                  "/ui/jobs/" + std::to_string(r["job_id"].get<std::int64_t>()));
        if (run == runs[8] || run == runs[10]) {
            EXPECT_EQ(b.text("p.strip a:nth-child(" + std::to_string(i + 1) + ")"), "F");
        }
    }
    // The flaky tests, from the navigation, and one of them.
    b.click_to(b.find("nav a[href='/ui/tests?flaky=1']"), "flaky=1");
    b.screenshot(shots / "flaky.png");
    EXPECT_EQ(b.find_all("table.flaky tr").size(), 2u);
    EXPECT_TRUE(has(b.text("table.flaky"), "33.3 %")) << b.text("table.flaky");
    b.click_to(b.find("table.flaky a"), "/ui/tests/t%3A%3Asometimes");
    EXPECT_TRUE(has(b.text("dl.facts"), "33.3 % (2 flaky of 6 runs)")) << b.text("dl.facts");
    EXPECT_EQ(b.find_all("p.strip a.b-flaky").size(), 2u);
    // The name form of the flaky page opens a test's history too.
    b.go(daemon->url("/ui/tests?flaky=1"));
    b.type(b.find("input[name='name']"), "t::steady");
    b.click_to(b.find("form.filters button"), "/ui/tests/t%3A%3Asteady");
    EXPECT_EQ(b.find_all("p.strip a.b-passed").size(), 6u);
    // The grid with an unknown branch says why, on the page.
    b.go(daemon->url("/ui/trunk?ref=release"));
    EXPECT_TRUE(has(b.text(".problem"), "bisect.refs")) << b.text("main");
}

/// Milliseconds from `from` to `to` (RFC 3339), rounded as the roll-ups round them.
std::int64_t ms_between(const std::string& from, const std::string& to) {
    const auto a = parse_rfc3339(from), b = parse_rfc3339(to);
    if (!a || !b) return 0;
    const double ms = std::chrono::duration<double, std::milli>(*b - *a).count();
    return std::max<std::int64_t>(0, std::llround(ms));
}

TEST_F(TrunkTest, TheTrendsCountWhatTheRunsDidAndEveryChartsTableSaysTheApisNumbers) {
    make_history();
    // Every run and job of this history ended today; the six days before are idle.
    const json stats = get("/api/v1/stats/daily?days=7");
    ASSERT_EQ(stats["days"].size(), 7u);
    const json today = stats["days"][6];
    EXPECT_EQ(today["day"], now_rfc3339().substr(0, 10));
    for (std::size_t i = 0; i < 6; ++i) EXPECT_EQ(stats["days"][i]["runs_total"], 0);
    EXPECT_EQ(today["runs_total"], count_runs(*daemon, {.state = "completed"}) +
                                       count_runs(*daemon, {.state = "cancelled"}));
    for (const auto& [c, n] : today["runs"].items())
        EXPECT_EQ(n, count_runs(*daemon, {.conclusion = c})) << c;
    // Pass rate, device time and waits as the jobs table has them.
    std::int64_t passed = 0, telling = 0, device = 0, waited = 0;
    for (const auto& j : job_rows(*daemon, {.tier = "import"})) {
        if (j.conclusion == "cancelled") continue;
        ++telling;
        passed += j.conclusion == "passed" || j.conclusion == "flaky";
    }
    for (const auto& j : job_rows(*daemon)) {
        if (j.slot.empty() || j.started_at.empty()) continue;
        ++waited;
        if (j.position >= 0) device += ms_between(j.started_at, j.finished_at);
    }
    ASSERT_GT(telling, 0);
    EXPECT_DOUBLE_EQ(today["pass_rate"]["import"].get<double>(),
                     static_cast<double>(passed) / static_cast<double>(telling));
    EXPECT_EQ(today["device_ms"], device);
    EXPECT_EQ(today["waited"], waited);
    EXPECT_TRUE(today["wait_p50_ms"].is_number());
    EXPECT_LE(today["wait_p50_ms"].get<std::int64_t>(), today["wait_p95_ms"].get<std::int64_t>());
    EXPECT_GT(today["utilisation"]["card-0"].get<double>(), 0.0);
    EXPECT_EQ(stats["days"][0]["pass_rate"]["import"], nullptr);
    // Every tier in every run would have cost more than what selection let the runs spend.
    EXPECT_GE(today["full_ms"].get<std::int64_t>(), 0);

    // A rebuild from the history makes the same numbers; only an admin may ask for it.
    EXPECT_EQ(
        daemon
            ->request("POST", "/api/v1/stats/rebuild", {{"Authorization", "Bearer read-token"}}, "")
            ->status,
        403);
    auto rebuilt = daemon->request("POST", "/api/v1/stats/rebuild",
                                   {{"Authorization", "Bearer ops-token"}}, "");
    ASSERT_TRUE(rebuilt);
    EXPECT_EQ(rebuilt->status, 200) << rebuilt->body;
    seen.push_back(answer_line("POST", "/api/v1/stats/rebuild", *rebuilt));
    json again = get("/api/v1/stats/daily?days=7");
    // (Today's utilisation divides by the time so far: compare the rest.)
    for (auto* s : {&again, const_cast<json*>(&stats)})
        for (auto& d : (*s)["days"]) d.erase("utilisation");
    EXPECT_EQ(again["days"], stats["days"]);
    EXPECT_EQ(call("/api/v1/stats/daily?days=0").status, 400);
    EXPECT_EQ(openapi_verdict(seen), "ok");

    const std::string out = ctl({"stats", "--days", "1"});
    EXPECT_TRUE(has(out, now_rfc3339().substr(0, 10))) << out;
    EXPECT_TRUE(
        has(out, "regression:" + std::to_string(count_runs(*daemon, {.conclusion = "regression"}))))
        << out;

    // The page: five charts, each with a table whose today row says the API's numbers.
    Browser b;
    b.go(daemon->url("/ui/login"));
    b.type(b.find("#token"), "read-token");
    b.click_to(b.find("form[action='/ui/login'] button"), "/ui/trunk");
    b.click_to(b.find("nav a[href='/ui/trends']"), "/ui/trends");
    b.screenshot(test_artifacts_dir("trunk") / "trends.png");
    EXPECT_EQ(b.find_all("svg.chart").size(), 5u);
    EXPECT_EQ(b.find_all("table.numbers").size(), 5u);
    const json fresh = get("/api/v1/stats/daily")["days"].back();
    auto header = [&](const std::string& table) {
        std::vector<std::string> names;
        const std::size_t n = b.find_all(table + " tr:first-child th").size();
        for (std::size_t k = 1; k <= n; ++k)
            names.push_back(
                b.text(table + " tr:first-child th:nth-child(" + std::to_string(k) + ")"));
        return names;
    };
    auto today_cell = [&](const std::string& table, const std::string& column) {
        const auto names = header(table);
        const auto at = std::find(names.begin(), names.end(), column) - names.begin();
        return b.text(table + " tr:last-child td:nth-child(" + std::to_string(at + 1) + ")");
    };
    EXPECT_EQ(b.text("#runs-numbers tr:last-child td:first-child"), fresh["day"]);
    for (const auto& [c, n] : fresh["runs"].items())
        EXPECT_EQ(today_cell("#runs-numbers", c), std::to_string(n.get<std::int64_t>())) << c;
    char pct[32];
    std::snprintf(pct, sizeof pct, "%.1f %%", 100.0 * fresh["pass_rate"]["import"].get<double>());
    EXPECT_EQ(today_cell("#pass-rate-numbers", "import"), pct);
    char p50[32];
    std::snprintf(p50, sizeof p50, "%.1f s", fresh["wait_p50_ms"].get<double>() / 1000.0);
    EXPECT_EQ(today_cell("#wait-numbers", "p50"), p50);
    char spent[32];
    std::snprintf(spent, sizeof spent, "%.2f h", fresh["device_ms"].get<double>() / 3600000.0);
    EXPECT_EQ(today_cell("#device-time-numbers", "spent"), spent);
    EXPECT_EQ(b.text("#pass-rate-numbers tr:nth-child(2) td:nth-child(2)"), "—");  // an idle day
}

TEST_F(TrunkTest, BusyAndIdleDaysAfterARebuildEachWithItsOwnRunsInTheChartsTables) {
    make_history();
    // The first three pushes as if they ran 3 and 2 days ago (the daemon's clock cannot be
    // set); the roll-ups made again from the history put them on those days.
    move_run_days(*daemon, runs[0], 3);
    move_run_days(*daemon, runs[2], 3);
    move_run_days(*daemon, runs[4], 2);
    EXPECT_TRUE(has(ctl({"stats", "--rebuild"}), "groups")) << "crcrctl stats --rebuild";
    const json stats = get("/api/v1/stats/daily?days=5");
    ASSERT_EQ(stats["days"].size(), 5u);
    const std::int64_t all =
        count_runs(*daemon, {.state = "completed"}) + count_runs(*daemon, {.state = "cancelled"});
    const std::int64_t per_day[] = {0, 2, 1, 0, all - 3};  // 4 days ago .. today
    for (std::size_t i = 0; i < 5; ++i) {
        EXPECT_EQ(stats["days"][i]["runs_total"], per_day[i]) << stats["days"][i].dump();
        EXPECT_EQ(stats["days"][i]["day"],
                  rfc3339(std::chrono::system_clock::now() - std::chrono::hours(24) * (4 - i))
                      .substr(0, 10));
    }
    // 3 days ago: a passed and a flaky push; import's pass rate over their attempts (the flaky
    // one's first attempt failed), null on idle days.
    EXPECT_EQ(stats["days"][1]["runs"], json({{"flaky", 1}, {"passed", 1}}));
    std::int64_t passed = 0, attempts = 0;
    for (const auto run : {runs[0], runs[2]}) {
        for (const auto& j : job_rows(*daemon, {.run = run, .tier = "import"})) {
            ++attempts;
            passed += j.conclusion == "passed" || j.conclusion == "flaky";
        }
    }
    EXPECT_DOUBLE_EQ(stats["days"][1]["pass_rate"]["import"].get<double>(),
                     static_cast<double>(passed) / static_cast<double>(attempts));
    EXPECT_EQ(stats["days"][3]["pass_rate"]["import"], nullptr);
    EXPECT_GT(stats["days"][1]["device_ms"].get<std::int64_t>(), 0);
    EXPECT_EQ(stats["days"][3]["device_ms"], 0);
    EXPECT_EQ(openapi_verdict(seen), "ok");

    Browser b;
    b.go(daemon->url("/ui/login"));
    b.type(b.find("#token"), "read-token");
    b.click_to(b.find("form[action='/ui/login'] button"), "/ui/trunk");
    b.go(daemon->url("/ui/trends?days=5"));
    b.screenshot(test_artifacts_dir("trunk") / "trends-days.png");
    // One bar group per busy day, none on idle ones; the table has every day.
    ASSERT_EQ(b.find_all("#runs-numbers tr").size(), 6u);
    for (std::size_t i = 0; i < 5; ++i) {
        const std::string row = "#runs-numbers tr:nth-child(" + std::to_string(i + 2) + ")";
        EXPECT_EQ(b.text(row + " td:first-child"), stats["days"][i]["day"]);
        std::int64_t shown = 0;
        const std::size_t cells = b.find_all(row + " td").size();
        for (std::size_t k = 2; k <= cells; ++k)
            shown += std::stoll(b.text(row + " td:nth-child(" + std::to_string(k) + ")"));
        EXPECT_EQ(shown, per_day[i]) << b.text(row);
    }
    EXPECT_EQ(b.find_all("#runs rect").size(), 2u + 1u + stats["days"][4]["runs"].size());
}

}  // namespace
}  // namespace crcrd
