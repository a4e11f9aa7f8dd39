// The dashboard (/ui/, docs/dashboard.md) in a real headless Chromium with JavaScript off, driven
// through chromedriver: sign-in, the runs list and its filters, a run with a regression, its
// job, the runners with drain, the deliveries and the reporting lanes (a paused GitHub lane), the
// write forms' CSRF and roles, ui_public, and a list at 1,000 runs. Screenshots go to
// <build>/test-artifacts/dashboard/.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "crcrd/core/crypto.hpp"
#include "support/ci_script.hpp"
#include "support/daemon.hpp"
#include "support/pausing_github.hpp"
#include "support/state.hpp"
#include "support/webdriver.hpp"

namespace crcrd {
namespace {

using nlohmann::json;

bool has(const std::string& haystack, const std::string& needle) {
    return haystack.find(needle) != std::string::npos;
}

class DashboardTest : public ::testing::Test {
  protected:
    /// `admin_extra` and `report_extra` are appended to the admin and report mappings.
    void start(const std::string& admin_extra = "", const std::string& report_extra = "") {
        if (auto why = bwrap_unavailable(); !why.empty()) GTEST_SKIP() << why;
        install_ci_script(bin.path());
        write_file(dir.path() / "selection.yaml",
                   "tiers:\n"
                   "  - {name: smoke, always: true, tests: [ok_smoke]}\n"
                   "  - {name: affected, from_rules: true}\n"
                   "rules:\n"
                   "  - {name: dispatch, paths: [\"aten/**\"], tests: [fail_ops, ok_ops]}\n"
                   "unmatched: nothing\n");
        daemon = std::make_unique<TestDaemon>(
            dir.path(),
            "selection: {rules: selection.yaml}\n"
            "runners:\n"
            "  - {name: sim-0, labels: [sim], health_check: [/bin/true], device_model: Simulated}\n"
            "execution:\n"
            "  command: [" +
                (bin.path() / "ci.sh").string() +
                "]\n"
                "  work_root: state/work\n"
                "  min_free_bytes: 1MiB\n"
                "report: {file: state/statuses.jsonl, context_prefix: crcr/spyre" +
                report_extra +
                "}\n"
                "admin: {tokens: [{name: ops, role: admin, sha256: " +
                crypto::sha256_hex("ops-token") + "}, {name: viewer, role: read, sha256: " +
                crypto::sha256_hex("read-token") + "}]" + admin_extra + "}\n");
        daemon->start();
    }

    std::int64_t post(const std::vector<std::string>& changed, const std::string& id, int pr) {
        json j = json::parse(fixture_text("crcr/direct-pytorch-crcr.json"));
        j["client_payload"]["changed_files"] = changed;
        j["client_payload"]["pr_number"] = pr;
        auto r = daemon->post_standard(j.dump(), id);
        EXPECT_EQ(r->status, 202) << r->body;
        return json::parse(r->body)["run_id"].get<std::int64_t>();
    }

    void sign_in(Browser& b, const std::string& token) {
        b.go(daemon->url("/ui/login"));
        b.type(b.find("#token"), token);
        b.click(b.find("form[action='/ui/login'] button"));
        // Signed in once the browser has left the form (a click may return before that).
        EXPECT_TRUE(eventually([&] { return !has(b.url(), "/ui/login"); })) << b.url();
    }

    /// A plain request with the browser's session cookie, as a forged cross-site form would
    /// send it if SameSite did not stop it.
    http::ClientResponse post_with_cookie(Browser& b, const std::string& path,
                                          const std::string& body) {
        std::string cookie;
        for (const auto& c : b.cookies())
            if (c["name"] == "crcrd_session")
                cookie = "crcrd_session=" + c["value"].get<std::string>();
        auto r = daemon->request(
            "POST", path,
            {{"Cookie", cookie}, {"Content-Type", "application/x-www-form-urlencoded"}}, body);
        EXPECT_TRUE(r);
        return *r;
    }

    TempDir dir;
    TempDir bin;
    std::unique_ptr<TestDaemon> daemon;
};

TEST_F(DashboardTest, AnOperatorSignsInAndFollowsARegressionFromTheListToItsLog) {
    start();
    const auto failing = post({"aten/src/ATen/native/BinaryOps.cpp"}, "d-fail", 71);
    const auto passing = post({"docs/index.md"}, "d-pass", 72);
    ASSERT_EQ(daemon->finished(failing), "completed/regression");
    ASSERT_EQ(daemon->finished(passing), "completed/passed");
    const auto shots = test_artifacts_dir("dashboard");
    const std::string sha = run_row(*daemon, failing).sha;

    Browser b;
    // Without a session every page leads to the sign-in form; a wrong token is refused there.
    b.go(daemon->url("/ui/runs/" + std::to_string(failing)));
    EXPECT_TRUE(has(b.url(), "/ui/login?next=")) << b.url();
    b.type(b.find("#token"), "not-a-token");
    b.click(b.find("form[action='/ui/login'] button"));
    ASSERT_TRUE(eventually([&] { return !b.find_all(".problem").empty(); }));
    EXPECT_TRUE(has(b.text(".problem"), "not valid"));
    EXPECT_TRUE(has(daemon->log(), "dashboard sign-in refused from 127.0.0.1"));
    EXPECT_FALSE(has(daemon->log(), "not-a-token"));

    // The right token: back to the page asked for, with a cookie scripts cannot read.
    b.go(daemon->url("/ui/runs/" + std::to_string(failing)));
    b.type(b.find("#token"), "ops-token");
    b.click_to(b.find("form[action='/ui/login'] button"), "/ui/runs/");
    EXPECT_TRUE(b.url().ends_with("/ui/runs/" + std::to_string(failing))) << b.url();
    json session;
    for (const auto& c : b.cookies())
        if (c["name"] == "crcrd_session") session = c;
    ASSERT_FALSE(session.is_null()) << b.cookies().dump();
    EXPECT_EQ(session["httpOnly"], true);
    EXPECT_EQ(session["secure"], true);
    EXPECT_EQ(session["sameSite"], "Strict");

    // The run page: commit and PR linked upstream, the selection, the failing tier, its test,
    // the log tail and the statuses with their delivery state.
    b.screenshot(shots / "run.png");
    EXPECT_EQ(b.attribute(b.find("a[title='" + sha + "']"), "href"),
              "https://github.com/pytorch/pytorch/commit/" + sha);
    EXPECT_EQ(b.attribute(b.find("a[href$='/pull/71']"), "href"),
              "https://github.com/pytorch/pytorch/pull/71");
    const std::string page = b.text("main");
    EXPECT_TRUE(has(page, "Run " + std::to_string(failing) + " completed regression")) << page;
    EXPECT_TRUE(has(page, "dispatch")) << page;  // the rule that matched
    EXPECT_TRUE(has(page, "aten/src/ATen/native/BinaryOps.cpp")) << page;
    EXPECT_TRUE(has(page, "Failing tests: affected")) << page;
    EXPECT_TRUE(has(page, "ci.fail_ops") || has(page, "ci::fail_ops")) << page;
    EXPECT_TRUE(has(page, "Log tail")) << page;
    EXPECT_TRUE(has(page, "tier=affected")) << page;        // a line the job's log has
    EXPECT_TRUE(has(page, "crcr/spyre/affected")) << page;  // a status, with its delivery state
    EXPECT_FALSE(b.find_all("form[action$='/retry'] button").empty())
        << "an admin sees the retry form";

    // Its job: the tests with their outcomes and the log.
    const std::string job =
        std::to_string(first_job(*daemon, {.run = failing, .tier = "affected"}).id);
    b.click_to(b.find("a[href='/ui/jobs/" + job + "']"), "/ui/jobs/" + job);
    b.screenshot(shots / "job.png");
    const std::string job_page = b.text("main");
    EXPECT_TRUE(has(job_page, "Job " + job + ": affected, attempt 1")) << job_page;
    EXPECT_TRUE(has(job_page, "failed")) << job_page;
    EXPECT_TRUE(has(job_page, "passed")) << job_page;
    EXPECT_TRUE(has(job_page, "Simulated")) << job_page;  // metadata: the device model
    EXPECT_TRUE(has(job_page, "tier=affected")) << job_page;

    // The list, filtered by class through its form: only the regression.
    b.go(daemon->url("/ui/runs"));
    b.screenshot(shots / "runs.png");
    EXPECT_EQ(b.find_all("table.runs tr").size(), 3u);  // a header and two runs
    b.click(b.find_xpath("//select[@name='conclusion']/option[text()='regression']"));
    b.click_to(b.find("form.filters button"), "conclusion=regression");
    EXPECT_EQ(b.find_all("table.runs tr").size(), 2u);
    EXPECT_TRUE(has(b.text("table.runs"), std::to_string(failing)));
    EXPECT_FALSE(has(b.text("table.runs"), "passed"));
    // A filter the API refuses is said on the page, with the form kept.
    b.go(daemon->url("/ui/?since=yesterday"));
    EXPECT_TRUE(has(b.text(".problem"), "since")) << b.text("main");

    // Runners: draining through the form changes the slot, and says so.
    b.go(daemon->url("/ui/runners"));
    EXPECT_TRUE(has(b.text("main"), "sim-0"));
    b.click_to(b.find("form[action='/ui/runners/sim-0/drain'] button"), "done=drain");
    EXPECT_TRUE(has(b.text(".notice"), "Slot sim-0 drained."));
    EXPECT_TRUE(slot_row(*daemon, "sim-0").drained);
    b.screenshot(shots / "runners.png");
    b.click_to(b.find("form[action='/ui/runners/sim-0/undrain'] button"), "done=undrain");
    EXPECT_FALSE(slot_row(*daemon, "sim-0").drained);

    // Deliveries: both, with their verdicts and runs.
    b.go(daemon->url("/ui/deliveries"));
    b.screenshot(shots / "deliveries.png");
    const std::string deliveries = b.text("main");
    EXPECT_TRUE(has(deliveries, "d-fail")) << deliveries;
    EXPECT_TRUE(has(deliveries, "d-pass")) << deliveries;
    EXPECT_TRUE(has(deliveries, "queued")) << deliveries;
    // Above them the reporting lanes, one row per sink: only the report file is configured.
    EXPECT_EQ(b.find_all("table.lanes tr").size(), 4u);
    EXPECT_TRUE(has(b.text("table.lanes"), "github (not configured)")) << b.text("table.lanes");

    // Retry from the run page: a new run of the same SHA, and the page of it.
    b.go(daemon->url("/ui/runs/" + std::to_string(failing)));
    b.click_to(b.find("form[action$='/retry'] button"), "done=retry");
    EXPECT_TRUE(has(b.text(".notice"), "retry of run " + std::to_string(failing)))
        << b.text("main");
    EXPECT_EQ(count_runs(*daemon, {.sha = sha}), 3);

    // Signing out ends the session: the old cookie opens nothing.
    const auto before = post_with_cookie(b, "/ui/runners/sim-0/drain", "csrf=x");
    EXPECT_EQ(before.status, 403);
    b.click_to(b.find("form[action='/ui/logout'] button"), "/ui/login");
    b.go(daemon->url("/ui/"));
    EXPECT_TRUE(has(b.url(), "/ui/login")) << b.url();
}

TEST_F(DashboardTest, TheDeliveriesPageShowsAPausedGithubLane) {
    // GitHub answers the first status 403 with Retry-After: its lane pauses, its rows waiting.
    PausingGithub gh;
    start("", ", min_interval: 0s, github: " + gh.report_yaml(dir.path()));
    if (IsSkipped()) return;
    const auto run = post({"docs/index.md"}, "d-lanes", 73);
    ASSERT_EQ(daemon->finished(run), "completed/passed");
    Browser b;
    sign_in(b, "read-token");
    std::string github;
    ASSERT_TRUE(eventually(
        [&] {
            b.go(daemon->url("/ui/deliveries"));
            github = b.text("table.lanes tr:nth-child(2)");
            return has(github, "paused") && has(github, "HTTP 403");
        },
        std::chrono::seconds(30)))
        << b.text("main");
    b.screenshot(test_artifacts_dir("dashboard") / "lanes.png");
    EXPECT_EQ(gh.posts(), 1u);
    // Its row: the budget used and left per window, the pause, GitHub's message; the relay's
    // lane is not configured, the report file's has nothing waiting.
    EXPECT_TRUE(has(github, "1 used, 79 left of 80 per 60 s")) << github;
    EXPECT_TRUE(has(github, "1 used, 499 left of 500 per 3600 s")) << github;
    EXPECT_TRUE(has(github, "API rate limit exceeded")) << github;
    EXPECT_EQ(b.find_all("table.lanes tr:nth-child(2) time").size(), 3u)
        << "paused until, next send, oldest waiting final: " << github;
    EXPECT_TRUE(has(b.text("table.lanes tr:nth-child(3)"), "callback (not configured)"));
    EXPECT_TRUE(has(b.text("table.lanes tr:nth-child(4)"), "file"));
    // Server-rendered under the same policy as every page: no script anywhere.
    auto page =
        daemon->request("GET", "/ui/deliveries", {{"Authorization", "Bearer read-token"}}, "");
    ASSERT_TRUE(page);
    EXPECT_EQ(page->status, 200);
    EXPECT_FALSE(has(page->body, "<script"));
    EXPECT_TRUE(has(std::string(page->header("Content-Security-Policy").value_or("")),
                    "default-src 'none'"));
    EXPECT_TRUE(has(page->body, "<table class=\"lanes\">"));
}

TEST_F(DashboardTest, WriteFormsNeedAnAdminSessionAndItsCsrfToken) {
    start();
    Browser b;
    sign_in(b, "ops-token");
    // A forged form carries the cookie but not the CSRF token: refused, nothing drained.
    auto forged = post_with_cookie(b, "/ui/runners/sim-0/drain", "");
    EXPECT_EQ(forged.status, 403);
    auto wrong = post_with_cookie(b, "/ui/runners/sim-0/drain", "csrf=guess");
    EXPECT_EQ(wrong.status, 403);
    EXPECT_FALSE(slot_row(*daemon, "sim-0").drained);
    // A bearer token is for the JSON API, not for the forms.
    auto bearer = daemon->request("POST", "/ui/runners/sim-0/drain",
                                  {{"Authorization", "Bearer ops-token"},
                                   {"Content-Type", "application/x-www-form-urlencoded"}},
                                  "");
    EXPECT_EQ(bearer->status, 403);
    EXPECT_FALSE(slot_row(*daemon, "sim-0").drained);

    // A read token's session sees the pages but no forms, and its CSRF token opens nothing.
    Browser reader;
    sign_in(reader, "read-token");
    reader.go(daemon->url("/ui/runners"));
    EXPECT_TRUE(has(reader.text("header"), "viewer (read)"));
    EXPECT_TRUE(reader.find_all("form[action$='/drain']").empty());
    const std::string csrf =
        reader.attribute(reader.find("form[action='/ui/logout'] input[name='csrf']"), "value");
    ASSERT_FALSE(csrf.empty());
    auto as_reader = post_with_cookie(reader, "/ui/runners/sim-0/drain", "csrf=" + csrf);
    EXPECT_EQ(as_reader.status, 403);
    EXPECT_FALSE(slot_row(*daemon, "sim-0").drained);
}

TEST_F(DashboardTest, UiPublicShowsPagesWithoutATokenButNoWrites) {
    start(", ui_public: true");
    auto page = daemon->request("GET", "/ui/runners", {}, "");
    ASSERT_TRUE(page);
    EXPECT_EQ(page->status, 200);
    EXPECT_TRUE(has(page->body, "sim-0"));
    EXPECT_FALSE(has(page->body, "/drain"));
    auto write = daemon->request("POST", "/ui/runners/sim-0/drain",
                                 {{"Content-Type", "application/x-www-form-urlencoded"}}, "csrf=");
    EXPECT_EQ(write->status, 403);
    EXPECT_FALSE(slot_row(*daemon, "sim-0").drained);
    // The default page is the trunk grid, for anybody with ui_public (no trunk runs yet).
    auto home = daemon->request("GET", "/ui/", {}, "");
    EXPECT_EQ(home->status, 303);
    EXPECT_EQ(std::string(home->header("Location").value_or("")), "/ui/trunk");
    auto trunk = daemon->request("GET", "/ui/trunk", {}, "");
    EXPECT_EQ(trunk->status, 200);
    EXPECT_TRUE(has(trunk->body, "No push or scheduled runs of this branch yet.")) << trunk->body;
    // The JSON API is not opened by ui_public.
    EXPECT_EQ(daemon->request("GET", "/api/v1/runs", {}, "")->status, 401);
}

TEST_F(DashboardTest, AThousandRunsArePagedFiftyAtATime) {
    start();
    insert_generated_runs(*daemon, 1000);
    Browser b;
    sign_in(b, "read-token");
    b.go(daemon->url("/ui/runs"));
    b.screenshot(test_artifacts_dir("dashboard") / "runs-1000.png");
    EXPECT_EQ(b.find_all("table.runs tr").size(), 51u);
    EXPECT_TRUE(has(b.text("table.runs"), "1000"));
    // Older: the next fifty, continuing below the last id shown.
    b.click_to(b.find(".pager a"), "cursor=");
    EXPECT_EQ(b.find_all("table.runs tr").size(), 51u);
    EXPECT_TRUE(has(b.text("table.runs tr:nth-child(2)"), "950"));
    // Filters stay on the next page: regressions only (every seventh run).
    b.go(daemon->url("/ui/?conclusion=regression"));
    b.click_to(b.find(".pager a"), "cursor=");
    EXPECT_TRUE(has(b.url(), "conclusion=regression")) << b.url();
    EXPECT_EQ(b.find_all("table.runs tr").size(), 51u);  // 142 regressions: 50, 50, then 42
    EXPECT_FALSE(has(b.text("table.runs"), "passed"));
}

}  // namespace
}  // namespace crcrd
