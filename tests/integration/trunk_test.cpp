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
#include <functional>
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

/// What the trends should say of one day, worked out here from the runs and jobs tables as
/// docs/dashboard.md ("Trends") defines each number.
struct ExpectedDay {
    std::map<std::string, std::int64_t> runs;  // class → runs that ended
    std::int64_t runs_total = 0, runs_selected = 0, runs_device_ms = 0, device_ms = 0;
    std::map<std::string, std::pair<std::int64_t, std::int64_t>> pass;       // passed, counted
    std::map<std::string, std::pair<std::int64_t, std::int64_t>> tier_time;  // busy, runs
    std::map<std::string, std::int64_t> slot_busy;
    std::vector<std::int64_t> waits;  // the tiers' waits for a card that ended that day
};

bool is_selected(const RunRow& r) {
    return r.state == "completed" && r.conclusion != "cancelled" &&
           (r.event == "push" || r.event == "schedule" || r.event == "pull_request");
}

std::map<std::string, ExpectedDay> expected_days(const TestDaemon& d) {
    std::map<std::string, ExpectedDay> out;
    const auto jobs = job_rows(d);
    auto ran = [](const JobRow& j) {
        return !j.slot.empty() && !j.started_at.empty() && !j.finished_at.empty();
    };
    for (const auto& r : run_rows(d)) {
        if (r.state != "completed" && r.state != "cancelled") continue;
        auto& e = out[r.finished_at.substr(0, 10)];
        ++e.runs[r.conclusion.empty() ? r.state : r.conclusion];
        ++e.runs_total;
        if (!is_selected(r)) continue;
        ++e.runs_selected;
        std::map<std::int64_t, const JobRow*> last;  // position → its last attempt
        std::map<std::int64_t, std::int64_t> busy;   // position → every attempt's time
        for (const auto& j : jobs) {
            if (j.run_id != r.id || j.position < 0) continue;
            if (!last.count(j.position) || j.attempt > last[j.position]->attempt)
                last[j.position] = &j;
            busy[j.position] += ran(j) ? ms_between(j.started_at, j.finished_at) : 0;
        }
        for (const auto& [pos, j] : last) {
            e.runs_device_ms += busy[pos];
            if (j->conclusion == "cancelled") continue;
            auto& p = e.pass[j->tier];
            ++p.second;
            p.first += j->conclusion == "passed" || j->conclusion == "flaky";
            e.tier_time[j->tier].first += busy[pos];
            ++e.tier_time[j->tier].second;
        }
    }
    for (const auto& j : jobs) {
        if (j.state != "completed" && j.state != "cancelled") continue;
        if (ran(j)) {  // its running time, split at UTC midnights
            auto from = *parse_rfc3339(j.started_at);
            const auto to = *parse_rfc3339(j.finished_at);
            while (true) {
                const std::string day = rfc3339(from).substr(0, 10);
                const auto next = *parse_rfc3339(day + "T00:00:00Z") + std::chrono::hours(24);
                const auto end = std::min(next, to);
                const std::int64_t ms = ms_between(rfc3339(from), rfc3339(end));
                out[day].slot_busy[j.slot] += ms;
                if (j.position >= 0) out[day].device_ms += ms;
                if (next >= to) break;
                from = next;
            }
        }
        const bool started = !j.started_at.empty() && !j.slot.empty();
        const bool gave_up = j.started_at.empty() && j.conclusion == "device_unavailable";
        if (j.position < 0 || (!started && !gave_up)) continue;
        // From when it could start: its creation, or the end of its run's earlier positions.
        auto ready = *parse_rfc3339(j.created_at);
        for (const auto& p : jobs) {
            if (p.run_id == j.run_id && p.position < j.position && !p.finished_at.empty())
                ready = std::max(ready, *parse_rfc3339(p.finished_at));
        }
        const std::string end = started ? j.started_at : j.finished_at;
        out[end.substr(0, 10)].waits.push_back(ms_between(rfc3339(ready), end));
    }
    return out;
}

/// The bound of the bucket (`bounds`) holding the `q` quantile of `waits`; "longer" past them.
std::pair<json, bool> percentile_of(std::vector<std::int64_t> waits, double q, const json& bounds) {
    if (waits.empty()) return {nullptr, false};
    std::sort(waits.begin(), waits.end());
    std::size_t k = 0;
    while (static_cast<double>(k + 1) < q * static_cast<double>(waits.size())) ++k;
    for (const auto& b : bounds)
        if (waits[k] < b.get<std::int64_t>()) return {b, false};
    return {bounds.back(), true};
}

/// Every day of `stats` against the history: the runs, the pass rates, the waits (by value),
/// the device time, the tiers' means and a run of every tier, each slot's utilisation. Today's
/// utilisation is divided by the time since midnight when the API answered, between `asked` and
/// `answered`.
void expect_days_match_the_history(const TestDaemon& d, const json& stats,
                                   std::chrono::system_clock::time_point asked,
                                   std::chrono::system_clock::time_point answered) {
    const auto known = expected_days(d);
    for (const auto& day : stats["days"]) {
        const std::string date = day["day"];
        SCOPED_TRACE(date);
        const auto found = known.find(date);
        const ExpectedDay e = found == known.end() ? ExpectedDay{} : found->second;
        json runs = json::object();
        for (const auto& [c, n] : e.runs) runs[c] = n;
        EXPECT_EQ(day["runs"], runs);
        EXPECT_EQ(day["runs_total"], e.runs_total);
        EXPECT_EQ(day["runs_selected"], e.runs_selected);
        for (const auto& t : stats["tiers"]) {
            const auto p = e.pass.find(t.get<std::string>());
            if (p == e.pass.end() || p->second.second == 0) {
                EXPECT_EQ(day["pass_rate"][t.get<std::string>()], nullptr) << t;
            } else {
                EXPECT_DOUBLE_EQ(day["pass_rate"][t.get<std::string>()].get<double>(),
                                 static_cast<double>(p->second.first) / p->second.second)
                    << t;
            }
        }
        EXPECT_EQ(day["waited"], e.waits.size());
        std::int64_t waited_ms = 0;
        for (auto w : e.waits) waited_ms += w;
        EXPECT_EQ(day["wait_ms"], waited_ms);
        for (const auto& [name, q] : {std::pair{"wait_p50", 0.5}, std::pair{"wait_p95", 0.95}}) {
            const auto [at_most, longer] = percentile_of(e.waits, q, stats["wait_bounds_ms"]);
            EXPECT_EQ(day[std::string(name) + "_ms"], at_most) << name;
            EXPECT_EQ(day[std::string(name) + "_longer"], longer) << name;
        }
        EXPECT_EQ(day["device_ms"], e.device_ms);
        EXPECT_EQ(day["runs_device_ms"], e.runs_device_ms);
        // Each tier's mean over the 30 days that end with this one, whatever the window asked.
        std::int64_t every_tier = 0;
        const auto noon = *parse_rfc3339(date + "T12:00:00Z");
        const std::string from = rfc3339(noon - std::chrono::hours(24) * 29).substr(0, 10);
        for (const auto& t : stats["tiers"]) {
            std::int64_t busy = 0, n = 0;
            for (auto it = known.lower_bound(from); it != known.end() && it->first <= date; ++it) {
                const auto tt = it->second.tier_time.find(t.get<std::string>());
                if (tt != it->second.tier_time.end()) {
                    busy += tt->second.first;
                    n += tt->second.second;
                }
            }
            EXPECT_EQ(day["tier_mean_ms"][t.get<std::string>()], n ? json(busy / n) : json(nullptr))
                << t;
            if (n) every_tier += busy / n;
        }
        EXPECT_EQ(day["full_ms"], e.runs_selected * every_tier);
        for (const auto& [slot, u] : day["utilisation"].items()) {
            const auto b = e.slot_busy.find(slot);
            const double busy = b == e.slot_busy.end() ? 0.0 : static_cast<double>(b->second);
            if (date != rfc3339(asked).substr(0, 10) || date != rfc3339(answered).substr(0, 10)) {
                EXPECT_DOUBLE_EQ(u.get<double>(), std::min(1.0, busy / 86'400'000.0)) << slot;
                continue;
            }
            const auto midnight = *parse_rfc3339(date + "T00:00:00Z");
            auto since = [&](auto t) {
                return static_cast<double>(
                    std::chrono::duration_cast<std::chrono::milliseconds>(t - midnight).count());
            };
            EXPECT_LE(u.get<double>(), std::min(1.0, busy / since(asked)) + 1e-12) << slot;
            EXPECT_GE(u.get<double>(), std::min(1.0, busy / since(answered)) - 1e-12) << slot;
        }
        for (const auto& [slot, busy] : e.slot_busy)
            EXPECT_TRUE(day["utilisation"].contains(slot)) << slot;
    }
}

/// A chart's table: its header, then a row per day, each cell's text.
using Table = std::vector<std::vector<std::string>>;

std::string unescape(std::string s) {
    for (const auto& [from, to] :
         {std::pair{"&gt;", ">"}, std::pair{"&lt;", "<"}, std::pair{"&quot;", "\""},
          std::pair{"&#39;", "'"}, std::pair{"&amp;", "&"}}) {
        for (std::size_t at = 0; (at = s.find(from, at)) != std::string::npos; at += 1)
            s.replace(at, std::string(from).size(), to);
    }
    return s;
}

/// The table `id` of the page's DOM (as Chromium parsed it).
Table table_of(const std::string& page, const std::string& id) {
    Table out;
    const auto at = page.find("id=\"" + id + "\"");
    if (at == std::string::npos) return out;
    const auto end = page.find("</table>", at);
    const std::string t = page.substr(at, end - at);
    for (std::size_t row = t.find("<tr"); row != std::string::npos; row = t.find("<tr", row + 1)) {
        const auto row_end = t.find("</tr>", row);
        std::vector<std::string> cells;
        for (std::size_t c = t.find("<t", row + 3); c < row_end; c = t.find("<t", c + 1)) {
            if (t[c + 2] != 'd' && t[c + 2] != 'h') continue;
            const auto open = t.find('>', c) + 1;
            cells.push_back(unescape(t.substr(open, t.find("</t", open) - open)));
        }
        out.push_back(cells);
    }
    return out;
}

std::string formatted(const json& v, const std::string& unit, bool longer = false) {
    if (!v.is_number()) return "—";
    char buf[64];
    const double x = v.get<double>();
    if (unit == "%") std::snprintf(buf, sizeof buf, "%.1f %%", 100.0 * x);
    if (unit == "s") std::snprintf(buf, sizeof buf, "%.1f s", x / 1000.0);
    if (unit == "h") std::snprintf(buf, sizeof buf, "%.2f h", x / 3'600'000.0);
    if (unit.empty()) std::snprintf(buf, sizeof buf, "%.0f", x);
    return (longer ? "> " : "") + std::string(buf);
}

/// Each chart's table as the API's numbers say it should read: a row per day, a column per
/// series (docs/dashboard.md, "Trends").
std::map<std::string, Table> tables_of(const json& stats) {
    std::map<std::string, Table> out;
    const json& days = stats["days"];
    auto table = [&](const std::string& id, const std::vector<std::string>& names,
                     const std::function<std::string(const json&, const std::string&)>& cell) {
        Table t{{"day"}};
        t[0].insert(t[0].end(), names.begin(), names.end());
        for (const auto& d : days) {
            std::vector<std::string> row{d["day"].get<std::string>()};
            for (const auto& n : names) row.push_back(cell(d, n));
            t.push_back(row);
        }
        out[id] = t;
    };
    std::vector<std::string> classes;
    for (const char* c : {"passed", "flaky", "regression", "pre_existing", "infra_error",
                          "device_unavailable", "timeout", "cancelled"}) {
        for (const auto& d : days)
            if (d["runs"].value(c, 0) > 0) {
                classes.push_back(c);
                break;
            }
    }
    table("runs-numbers", classes,
          [](const json& d, const std::string& c) { return formatted(d["runs"].value(c, 0), ""); });
    table("pass-rate-numbers", stats["tiers"].get<std::vector<std::string>>(),
          [](const json& d, const std::string& t) { return formatted(d["pass_rate"][t], "%"); });
    table("wait-numbers", {"p50", "p95"}, [](const json& d, const std::string& p) {
        return formatted(d["wait_" + p + "_ms"], "s", d["wait_" + p + "_longer"].get<bool>());
    });
    table("utilisation-numbers", stats["slots"].get<std::vector<std::string>>(),
          [](const json& d, const std::string& s) { return formatted(d["utilisation"][s], "%"); });
    const std::map<std::string, std::string> device = {{"all attempts", "device_ms"},
                                                       {"selected runs", "runs_device_ms"},
                                                       {"every tier", "full_ms"}};
    table("device-time-numbers", {"all attempts", "selected runs", "every tier"},
          [&](const json& d, const std::string& n) { return formatted(d[device.at(n)], "h"); });
    return out;
}

/// `path` in Chromium: each of the five charts' tables says the API's numbers, every day and
/// every series (read before and after the page: today's utilisation moves with the clock).
void expect_every_table_says_the_api(Browser& b, const std::string& page_url,
                                     const std::function<json()>& api) {
    const json before = api();
    b.go(page_url);
    const std::string page = b.source();
    const json after = api();
    EXPECT_EQ(b.find_all("svg.chart").size(), 5u);
    EXPECT_EQ(b.find_all("table.numbers").size(), 5u);
    const auto then = tables_of(before), now = tables_of(after);
    for (const auto& [id, expected] : then) {
        SCOPED_TRACE(id);
        const Table shown = table_of(page, id);
        EXPECT_EQ(shown.size(), before["days"].size() + 1);
        if (shown != expected) {
            EXPECT_EQ(shown, now.at(id));
        }
    }
}

TEST_F(TrunkTest, TheTrendsCountWhatTheRunsDidAndEveryChartsTableSaysTheApisNumbers) {
    make_history();
    const auto asked = std::chrono::system_clock::now();
    const json stats = get("/api/v1/stats/daily?days=7");
    const auto answered = std::chrono::system_clock::now();
    ASSERT_EQ(stats["days"].size(), 7u);
    EXPECT_EQ(stats["days"][6]["day"], rfc3339(answered).substr(0, 10));
    std::int64_t ended = 0;
    for (const auto& d : stats["days"]) ended += d["runs_total"].get<std::int64_t>();
    EXPECT_EQ(ended, count_runs(*daemon, {.state = "completed"}) +
                         count_runs(*daemon, {.state = "cancelled"}));
    expect_days_match_the_history(*daemon, stats, asked, answered);

    // Each later tier's wait starts when the tier before it ended, not when the run was
    // planned: smoke waited little although the build and import ran before it.
    std::int64_t smoke_waits = 0, planned_waits = 0, smoke_attempts = 0, expected_wait = 0;
    for (const auto& [day, e] : expected_days(*daemon))
        for (auto w : e.waits) expected_wait += w;
    for (const auto& smoke : job_rows(*daemon, {.tier = "smoke"})) {
        if (smoke.started_at.empty()) continue;
        std::string ready = smoke.created_at;
        for (const auto& j : job_rows(*daemon, {.run = smoke.run_id}))
            if (j.position < smoke.position && ms_between(ready, j.finished_at) > 0)
                ready = j.finished_at;
        const auto import = last_job(*daemon, {.run = smoke.run_id, .tier = "import"});
        ++smoke_attempts;
        smoke_waits += ms_between(ready, smoke.started_at);
        planned_waits += ms_between(smoke.created_at, smoke.started_at);
        // What the plan-time count would have said includes import's whole run.
        EXPECT_GE(ms_between(smoke.created_at, smoke.started_at),
                  ms_between(ready, smoke.started_at) +
                      ms_between(import.started_at, import.finished_at));
    }
    ASSERT_GT(smoke_attempts, 0);
    EXPECT_LT(smoke_waits, planned_waits);
    std::int64_t api_wait = 0, api_waited = 0;
    for (const auto& d : stats["days"]) {
        api_wait += d["wait_ms"].get<std::int64_t>();
        api_waited += d["waited"].get<std::int64_t>();
        // Free cards: nothing in this history waits as long as a minute.
        if (d["waited"] > 0) {
            EXPECT_LE(d["wait_p95_ms"].get<std::int64_t>(), 60'000) << d.dump();
            EXPECT_EQ(d["wait_p95_longer"], false);
        }
    }
    EXPECT_EQ(api_wait, expected_wait);
    EXPECT_GE(api_waited, smoke_attempts);
    // Every tier in every selected run would have cost more than what selection let them
    // spend: here selection ran every tier, so the estimate is the runs times the means.
    std::int64_t selected = 0, full = 0;
    for (const auto& d : stats["days"]) {
        selected += d["runs_selected"].get<std::int64_t>();
        full += d["full_ms"].get<std::int64_t>();
    }
    EXPECT_GT(selected, 0);
    EXPECT_GT(full, 0);

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
    if (again["days"].back()["day"] == stats["days"].back()["day"]) {
        EXPECT_EQ(again["days"], stats["days"]);
    }
    EXPECT_EQ(call("/api/v1/stats/daily?days=0").status, 400);
    EXPECT_EQ(openapi_verdict(seen), "ok");

    const std::string before = now_rfc3339().substr(0, 10);
    const std::string out = ctl({"stats", "--days", "1"});
    EXPECT_TRUE(has(out, before) || has(out, now_rfc3339().substr(0, 10))) << out;
    EXPECT_TRUE(has(out, "SELECTED H")) << out;

    // The page: five charts, each with a table that says the API's numbers.
    Browser b;
    b.go(daemon->url("/ui/login"));
    b.type(b.find("#token"), "read-token");
    b.click_to(b.find("form[action='/ui/login'] button"), "/ui/trunk");
    b.click_to(b.find("nav a[href='/ui/trends']"), "/ui/trends");
    b.screenshot(test_artifacts_dir("trunk") / "trends.png");
    expect_every_table_says_the_api(b, daemon->url("/ui/trends"),
                                    [&] { return get("/api/v1/stats/daily"); });
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
    const auto asked = std::chrono::system_clock::now();
    const json stats = get("/api/v1/stats/daily?days=5");
    const auto answered = std::chrono::system_clock::now();
    ASSERT_EQ(stats["days"].size(), 5u);
    expect_days_match_the_history(*daemon, stats, asked, answered);
    // The moved runs' days are theirs: 3 days ago a passed and a flaky push, 2 days ago one.
    const auto known = expected_days(*daemon);
    for (const auto& [run, n] : {std::pair{runs[0], 2}, std::pair{runs[4], 1}}) {
        const std::string day = run_row(*daemon, run).finished_at.substr(0, 10);
        EXPECT_EQ(known.at(day).runs_total, n) << day;
        EXPECT_GT(known.at(day).runs_device_ms, 0) << day;
    }
    const std::string three_ago = run_row(*daemon, runs[0]).finished_at.substr(0, 10);
    for (const auto& d : stats["days"])
        if (d["day"] == three_ago) {
            EXPECT_EQ(d["runs"], json({{"flaky", 1}, {"passed", 1}}));
        }
    // A tier's mean does not depend on the days asked for: the last day's numbers are the same
    // whether 1, 5 or 30 days are shown.
    json last = stats["days"].back();
    for (const char* days : {"1", "30"}) {
        json other = get(std::string("/api/v1/stats/daily?days=") + days)["days"].back();
        if (other["day"] != last["day"]) continue;  // midnight passed in between
        other.erase("utilisation");
        json mine = last;
        mine.erase("utilisation");
        EXPECT_EQ(other, mine) << days;
    }
    EXPECT_EQ(openapi_verdict(seen), "ok");

    Browser b;
    b.go(daemon->url("/ui/login"));
    b.type(b.find("#token"), "read-token");
    b.click_to(b.find("form[action='/ui/login'] button"), "/ui/trunk");
    b.go(daemon->url("/ui/trends?days=5"));
    b.screenshot(test_artifacts_dir("trunk") / "trends-days.png");
    expect_every_table_says_the_api(b, daemon->url("/ui/trends?days=5"),
                                    [&] { return get("/api/v1/stats/daily?days=5"); });
    // One bar per class of each busy day, none on idle ones.
    std::size_t bars = 0;
    for (const auto& d : stats["days"]) bars += d["runs"].size();
    EXPECT_EQ(b.find_all("#runs rect").size(), bars);
}

}  // namespace
}  // namespace crcrd
