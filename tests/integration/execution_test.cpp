// Runs end to end through the real daemon: leased slots, bubblewrap, real child processes,
// JUnit, tier order, retries, a device that fails its health check, and a kill -9 mid-job.
#include <gtest/gtest.h>
#include <unistd.h>
#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>

#include "crcrd/core/crypto.hpp"
#include "crcrd/core/files.hpp"
#include "support/ci_script.hpp"
#include "support/daemon.hpp"
#include "support/state.hpp"

namespace crcrd {
namespace {

using nlohmann::json;

std::string rules(const std::string& import_tests) {
    return "tiers:\n"
           "  - {name: import, always: true, tests: [" +
           import_tests +
           "], labels: [sim]}\n"
           "  - {name: smoke, always: true, tests: [ok_smoke]}\n"
           "  - {name: affected, from_rules: true, timeout: 10m}\n"
           "rules:\n"
           "  - {name: dispatch, paths: [\"aten/**\"], tests: [fail_ops]}\n"
           "  - {name: compile, paths: [\"torch/_inductor/**\"], tests: [ok_compile]}\n"
           "  - {name: slow, paths: [\"slow/**\"], tests: [hang]}\n"
           "unmatched: nothing\n";
}

class ExecutionTest : public ::testing::Test {
  protected:
    void start(const std::string& import_tests = "ok_import",
               const std::string& health = "[/bin/true]", const std::string& execution_extra = "",
               const std::vector<std::string>& env = {}) {
        if (auto why = bwrap_unavailable(); !why.empty()) GTEST_SKIP() << why;
        // Installed outside the daemon's folders, as a backend's script is (a command inside a
        // folder the sandbox hides is a configuration error), and traversable by the test uid.
        install_ci_script(bin.path());
        write_file(dir.path() / "selection.yaml", rules(import_tests));
        daemon = std::make_unique<TestDaemon>(
            dir.path(),
            "selection: {rules: selection.yaml" + selection_extra +
                "}\n"
                "runners:\n"
                "  - {name: sim-0, labels: [sim], env: {SIM_DEVICE: \"0\"}, health_check: " +
                health +
                ", device_model: Simulated}\n"
                "execution:\n"
                "  command: [" +
                (bin.path() / "ci.sh").string() +
                "]\n"
                "  work_root: state/work\n"
                "  min_free_bytes: 1MiB\n"
                "  infra_retries: 1\n"
                "  device_wait: 2s\n"
                "  health_interval: 1s\n" +
                execution_extra + "admin: {tokens: [{name: ops, role: admin, sha256: " +
                crypto::sha256_hex("ops-token") + "}]}\n" + top_extra);
        daemon->start(env);
    }

    std::int64_t post(const std::vector<std::string>& changed, const std::string& id) {
        json j = json::parse(fixture_text("crcr/direct-pytorch-crcr.json"));
        j["client_payload"]["changed_files"] = changed;
        j["client_payload"]["pr_number"] = next_pr++;
        auto r = daemon->post_standard(j.dump(), id);
        EXPECT_EQ(r->status, 202) << r->body;
        return json::parse(r->body)["run_id"].get<std::int64_t>();
    }
    std::string finished(std::int64_t run) { return daemon->finished(run); }
    std::string jobs(std::int64_t run) { return jobs_of(*daemon, run); }

    TempDir dir;
    TempDir bin;
    std::unique_ptr<TestDaemon> daemon;
    std::string selection_extra;  // ", key: value" pairs for the selection section
    std::string top_extra;        // more top-level sections
    int next_pr = 100;
};

TEST_F(ExecutionTest, APassingRunWalksEveryTierOnALeasedSlot) {
    start();
    auto run = post({"torch/_inductor/ir.py"}, "m-1");
    EXPECT_EQ(finished(run), "completed/passed");
    EXPECT_EQ(jobs(run),
              "import:completed:passed:1 smoke:completed:passed:1 affected:completed:passed:1");
    const auto job = first_job(*daemon, {.run = run, .tier = "affected"});
    const auto id = std::to_string(job.id);
    EXPECT_EQ(test_outcomes(*daemon, {.id = job.id}), "ci::ok_compile=passed");
    auto meta = job.metadata;
    EXPECT_EQ(meta["pytorch_sha"], "ec26c3e57ca3a959ca5aad62de7213c562f8c821");
    EXPECT_EQ(meta["device_model"], "Simulated");
    EXPECT_EQ(meta["slot"], "sim-0");
    EXPECT_EQ(meta["tests"], json::array({"ok_compile"}));
    EXPECT_EQ(meta["isolation"], "bwrap");
    auto log = read_file(job.log_path).value();
    EXPECT_NE(log.find("slot=sim-0 device=0 tier=affected"), std::string::npos) << log;
    EXPECT_EQ(slot_row(*daemon, "sim-0").state, "idle");
    // The workspace is gone after a pass.
    EXPECT_FALSE(std::filesystem::exists(dir.path() / "state" / "work" / "jobs" / id));
}

TEST_F(ExecutionTest, JobsLogsTestsAndRunnersThroughTheAdminApi) {
    start();
    auto run = post({"aten/src/ATen/native/BinaryOps.cpp"}, "m-api");
    EXPECT_EQ(finished(run), "completed/regression");
    auto id = std::to_string(first_job(*daemon, {.run = run, .tier = "affected"}).id);
    auto get = [&](const std::string& path) {
        auto r = daemon->request("GET", path, {{"Authorization", "Bearer ops-token"}}, "");
        EXPECT_TRUE(r);
        return *r;
    };
    auto job = json::parse(get("/api/v1/jobs/" + id).body);
    EXPECT_EQ(job["tier"], "affected");
    EXPECT_EQ(job["conclusion"], "regression");
    EXPECT_EQ(job["slot"], "sim-0");
    EXPECT_EQ(job["tests"], (json{{"passed", 0}, {"failed", 1}, {"skipped", 0}, {"flaky", 0}}));
    EXPECT_EQ(job["exit_status"], 1);
    EXPECT_EQ(job["metadata"]["device_model"], "Simulated");
    auto log = get("/api/v1/jobs/" + id + "/log?tail=34");
    EXPECT_EQ(log.status, 200);
    EXPECT_EQ(log.header("Content-Type").value_or(""), "text/plain; charset=utf-8");
    EXPECT_EQ(log.body, "slot=sim-0 device=0 tier=affected\n");
    EXPECT_NE(get("/api/v1/jobs/" + id + "/log").body.find("slot=sim-0"), std::string::npos);
    auto failed = json::parse(get("/api/v1/jobs/" + id + "/tests?outcome=failed").body);
    ASSERT_EQ(failed["items"].size(), 1u);
    EXPECT_EQ(failed["items"][0]["name"], "ci::fail_ops");
    EXPECT_EQ(failed["items"][0]["message"], "boom");
    EXPECT_EQ(json::parse(get("/api/v1/jobs/" + id + "/tests?outcome=passed").body)["items"].size(),
              0u);
    EXPECT_EQ(get("/api/v1/jobs/999999").status, 404);

    auto runners = json::parse(get("/api/v1/runners").body);
    ASSERT_EQ(runners["items"].size(), 1u);
    EXPECT_EQ(runners["items"][0]["name"], "sim-0");
    EXPECT_EQ(runners["items"][0]["state"], "idle");
    EXPECT_EQ(runners["items"][0]["labels"], json::array({"sim"}));
    EXPECT_EQ(runners["items"][0]["last_health"]["ok"], true);
    auto drain = daemon->request("POST", "/api/v1/runners/sim-0/drain",
                                 {{"Authorization", "Bearer ops-token"}}, "");
    EXPECT_EQ(drain->status, 200);
    EXPECT_EQ(json::parse(get("/api/v1/runners").body)["items"][0]["state"], "drained");
    // A drained slot takes no job: the next run waits past device_wait.
    auto waiting = post({"torch/_inductor/ir.py"}, "m-api-2");
    EXPECT_EQ(finished(waiting), "completed/device_unavailable");
    EXPECT_EQ(daemon
                  ->request("POST", "/api/v1/runners/sim-0/undrain",
                            {{"Authorization", "Bearer ops-token"}}, "")
                  ->status,
              200);
    EXPECT_EQ(json::parse(get("/api/v1/runners").body)["items"][0]["state"], "idle");
    EXPECT_EQ(daemon
                  ->request("POST", "/api/v1/runners/nope/drain",
                            {{"Authorization", "Bearer ops-token"}}, "")
                  ->status,
              404);
}

TEST_F(ExecutionTest, FiftyMegabytesOfOutputStayCappedAndTheDaemonsSecretsStayInvisible) {
    const auto secret = dir.path() / "secrets" / "webhook.secret";
    start("noisy", "[/bin/true]",
          "  max_log_bytes: 1MiB\n"
          "  env: {PROBE_SECRET: " +
              secret.string() + ", PROBE_CONFIG: " + (dir.path() / "crcrd.yaml").string() +
              ", PROBE_DB: " + (dir.path() / "state" / "crcrd.db").string() + "}\n",
          {"DAEMON_ONLY_MARKER=1"});
    // The files exist and are readable by this (the daemon's) user.
    ASSERT_TRUE(read_file(secret));
    auto run = post({"torch/_inductor/ir.py"}, "m-noisy");
    EXPECT_EQ(finished(run), "completed/passed");
    const auto job = first_job(*daemon, {.run = run, .tier = "import"});
    const auto log_path = job.log_path;
    EXPECT_LE(std::filesystem::file_size(log_path), (1u << 20) + 4096u);
    auto log = read_file(log_path).value();
    EXPECT_NE(log.find("probe: done"), std::string::npos) << "the tail is kept";
    EXPECT_EQ(log.find("probe: READ"), std::string::npos) << log.substr(log.size() - 2000);
    EXPECT_EQ(log.find("probe: daemon env"), std::string::npos) << log.substr(log.size() - 2000);
    EXPECT_EQ(log.find("probe: inherited"), std::string::npos) << log.substr(log.size() - 2000);
    EXPECT_EQ(log.find(k_test_secret), std::string::npos);
    auto meta = job.metadata;
    EXPECT_GE(meta["output_bytes"].get<std::int64_t>(), 50000000);
    EXPECT_EQ(meta["log_truncated"], true);
}

TEST_F(ExecutionTest, IsolationUserRunsTheCommandAsAnotherUidThatCannotReadTheDaemonsFiles) {
    if (::geteuid() != 0) GTEST_SKIP() << "isolation: user needs a daemon running as root";
    // What the operator does (docs/execution.md): config and secrets 0600, the folders on the
    // way to the command and the work root traversable. crcrd makes its database 0600 itself.
    const auto secret = dir.path() / "secrets" / "webhook.secret";
    start("noisy", "[/bin/true]",
          "  isolation: user\n  user: nobody\n  max_log_bytes: 1MiB\n"
          "  env: {PROBE_SECRET: " +
              secret.string() + ", PROBE_CONFIG: " + (dir.path() / "crcrd.yaml").string() +
              ", PROBE_DB: " + (dir.path() / "state" / "crcrd.db").string() + "}\n",
          {"DAEMON_ONLY_MARKER=1"});
    std::filesystem::permissions(dir.path(), std::filesystem::perms(0711));
    std::filesystem::permissions(dir.path() / "crcrd.yaml", std::filesystem::perms(0600));
    EXPECT_EQ(
        std::filesystem::status(daemon->db_path()).permissions() & std::filesystem::perms::all,
        std::filesystem::perms(0600));
    auto run = post({"torch/_inductor/ir.py"}, "m-user");
    EXPECT_EQ(finished(run), "completed/passed") << jobs(run);
    const auto job = first_job(*daemon, {.run = run, .tier = "import"});
    auto log = read_file(job.log_path).value();
    EXPECT_NE(log.find("probe: done"), std::string::npos) << log.substr(log.size() - 2000);
    EXPECT_EQ(log.find("probe: READ"), std::string::npos) << log.substr(log.size() - 2000);
    EXPECT_EQ(log.find("probe: daemon env"), std::string::npos) << log.substr(log.size() - 2000);
    EXPECT_EQ(log.find(k_test_secret), std::string::npos);
    EXPECT_EQ(job.metadata["isolation"], "user");
}

TEST_F(ExecutionTest, AnOutcomeThatCannotBeStoredIsStoredOnceWritesWorkAgain) {
    start();
    // Every write that ends a job fails (as on a full disk) until told otherwise.
    fail_job_outcome_writes(*daemon, true);
    auto run = post({"torch/_inductor/ir.py"}, "m-block");
    ASSERT_TRUE(eventually(
        [&] { return daemon->log().find("outcome not stored, again in") != std::string::npos; },
        std::chrono::seconds(60)))
        << daemon->log();
    EXPECT_EQ(first_job(*daemon, {.run = run, .tier = "import"}).state, "running");
    fail_job_outcome_writes(*daemon, false);
    EXPECT_EQ(finished(run), "completed/passed");
    EXPECT_EQ(jobs(run),
              "import:completed:passed:1 smoke:completed:passed:1 affected:completed:passed:1");
}

TEST_F(ExecutionTest, AnExpiredLeaseWhoseJobIsNotRunningFreesItsSlot) {
    start();
    // A slot left busy by nothing that runs (as after a lost worker), its lease lapsed.
    lapse_slot_lease(*daemon, "sim-0");
    auto run = post({"torch/_inductor/ir.py"}, "m-lease");
    EXPECT_EQ(finished(run), "completed/passed");
    EXPECT_NE(daemon->log().find("slot=sim-0 job_id=- lease expired"), std::string::npos);
}

TEST_F(ExecutionTest, AFailedTestIsARegressionAndStopsTheLaterTiers) {
    start();
    auto run = post({"aten/src/ATen/native/BinaryOps.cpp"}, "m-2");
    EXPECT_EQ(finished(run), "completed/regression");
    // Rerun once (execution.flaky_reruns: 1): it fails again, so it is a regression.
    EXPECT_EQ(jobs(run),
              "import:completed:passed:1 smoke:completed:passed:1 affected:completed:regression:1 "
              "affected:completed:regression:2");
    const auto rerun = first_job(*daemon, {.run = run, .tier = "affected", .attempt = 2});
    EXPECT_EQ(rerun.reason, "1 of 1 tests failed, again on rerun");
    auto evidence = rerun.evidence;
    EXPECT_EQ(evidence["failed_tests"], json::array({"ci::fail_ops"}));
    EXPECT_EQ(evidence["exit_status"], 1);
}

TEST_F(ExecutionTest, TheRerunOfAFailedTierGetsOnlyItsFailedTestsAndATestThatThenPassesIsFlaky) {
    start("ok_import, flaky_dtype, ok_other");
    auto run = post({"torch/_inductor/ir.py"}, "m-rerun");
    EXPECT_EQ(finished(run), "completed/flaky");
    const auto second = first_job(*daemon, {.run = run, .tier = "import", .attempt = 2});
    // The rerun was told what failed (the script runs only that).
    auto log = read_file(second.log_path).value();
    EXPECT_NE(log.find("rerun of: ci::flaky_dtype \n"), std::string::npos) << log;
    // Its results are the tier's: the rerun's test, and those that passed the first time.
    EXPECT_EQ(test_outcomes(*daemon, {.id = second.id}),
              "ci::flaky_dtype=flaky ci::ok_import=passed ci::ok_other=passed");
    EXPECT_EQ(second.reason, "1 test failed, then passed on rerun");
    // The first attempt had no rerun file.
    const auto first = first_job(*daemon, {.run = run, .tier = "import", .attempt = 1});
    auto first_log = read_file(first.log_path).value();
    EXPECT_EQ(first_log.find("rerun of:"), std::string::npos) << first_log;
}

TEST_F(ExecutionTest, WithRerunTierTheWholeTierRunsAgain) {
    start("ok_import, flaky_dtype", "[/bin/true]", "  rerun: tier\n");
    auto run = post({"torch/_inductor/ir.py"}, "m-rerun-tier");
    EXPECT_EQ(finished(run), "completed/flaky");
    const auto second = first_job(*daemon, {.run = run, .tier = "import", .attempt = 2});
    EXPECT_EQ(test_outcomes(*daemon, {.id = second.id}),
              "ci::flaky_dtype=flaky ci::ok_import=passed");
    auto log = read_file(second.log_path).value();
    EXPECT_EQ(log.find("rerun of:"), std::string::npos) << log;
}

TEST_F(ExecutionTest, AfterAStallTheSlotWaitsForItsDevicesAndGoesOfflineWhileAProcessHoldsThem) {
    // The slot's "card": a file bound into the sandbox like a device node.
    const auto card = bin.path() / "card0";
    write_file(card, "", 0666);
    start("stall", "[/bin/true], devices: [" + card.string() + "]",
          "  stall_timeout: 3s\n  card_release_timeout: 1s\n");
    auto run = post({"torch/_inductor/ir.py"}, "m-card");
    // Once the job runs (its health check passed), a process opens the card and keeps it open
    // past the job's end.
    ASSERT_TRUE(eventually(
        [&] { return count_jobs(*daemon, {.tier = "import", .state = "running"}) > 0; }));
    std::ifstream held(card);
    ASSERT_TRUE(held.is_open());
    EXPECT_EQ(finished(run), "completed/timeout");
    ASSERT_TRUE(eventually([&] { return slot_row(*daemon, "sim-0").state == "offline"; }))
        << daemon->log();
    auto health = slot_row(*daemon, "sim-0").last_health;
    EXPECT_EQ(health["ok"], false);
    EXPECT_NE(health["output"].get<std::string>().find(
                  "device " + card.string() + " is held by pid " + std::to_string(::getpid())),
              std::string::npos)
        << health.dump();
    auto evidence = first_job(*daemon, {.run = run, .tier = "import"}).evidence;
    EXPECT_EQ(evidence["health_after"]["ok"], false);
    // Released: the next recheck brings the slot back.
    held.close();
    EXPECT_TRUE(eventually([&] { return slot_row(*daemon, "sim-0").state == "idle"; }))
        << slot_row(*daemon, "sim-0").last_health.dump();
}

TEST_F(ExecutionTest, ATierThatPassedOnTheSameShaWithinTheReuseWindowIsReusedWithoutRunning) {
    selection_extra = ", reuse_window: 1h";
    start();
    auto first = post({"torch/_inductor/ir.py"}, "m-reuse-1");
    EXPECT_EQ(finished(first), "completed/passed");
    // Another PR on the same upstream SHA: the same tiers with the same tests.
    auto second = post({"torch/_inductor/ir.py", "docs/index.rst"}, "m-reuse-2");
    EXPECT_EQ(finished(second), "completed/passed");
    const auto jobs_of_second = job_rows(*daemon, {.run = second});
    std::string reasons;
    for (const auto& j : jobs_of_second) reasons += (reasons.empty() ? "" : " | ") + j.reason;
    EXPECT_EQ(reasons, "reused from run " + std::to_string(first) + " | reused from run " +
                           std::to_string(first) + " | reused from run " + std::to_string(first));
    // Nothing ran: no log, no start, no test results.
    EXPECT_EQ(
        std::count_if(jobs_of_second.begin(), jobs_of_second.end(),
                      [](const JobRow& j) { return !j.started_at.empty() || !j.log_path.empty(); }),
        0);
    auto ev = first_job(*daemon, {.run = second, .tier = "import"}).evidence;
    EXPECT_EQ(ev["reused_from"]["run_id"], first);
    EXPECT_EQ(count_test_results(*daemon, {.run = second}), 0);
}

TEST_F(ExecutionTest, WithoutAReuseWindowEveryRunRunsItsTiers) {
    start();
    auto first = post({"torch/_inductor/ir.py"}, "m-noreuse-1");
    EXPECT_EQ(finished(first), "completed/passed");
    auto second = post({"torch/_inductor/ir.py"}, "m-noreuse-2");
    EXPECT_EQ(finished(second), "completed/passed");
    const auto jobs_of_second = job_rows(*daemon, {.run = second});
    EXPECT_EQ(std::count_if(jobs_of_second.begin(), jobs_of_second.end(),
                            [](const JobRow& j) { return !j.started_at.empty(); }),
              3);
}

TEST_F(ExecutionTest,
       APrFailingOnlyTestsThatFailOnItsBaseIsPreExistingAndOneWithANewFailureStaysARegression) {
    start("ok_import, fail_known");
    const std::string base = "1111111111111111111111111111111111111111";
    auto send = [&](const std::string& id, const std::string& sha, std::optional<int> pr,
                    const std::vector<std::string>& changed) {
        json j = json::parse(fixture_text("crcr/direct-pytorch-crcr.json"));
        auto& cp = j["client_payload"];
        cp["upstream_sha"] = sha;
        cp["changed_files"] = changed;
        if (pr) {
            cp["pr_number"] = *pr;
            cp["base_sha"] = base;
        } else {
            cp.erase("pr_number");
            cp["ref"] = "refs/heads/main";
        }
        auto r = daemon->post_standard(j.dump(), id);
        EXPECT_EQ(r->status, 202) << r->body;
        return json::parse(r->body)["run_id"].get<std::int64_t>();
    };
    // Trunk at the base: fail_known fails there (and again on its rerun).
    auto trunk = send("m-base", base, std::nullopt, {"docs/index.rst"});
    EXPECT_EQ(finished(trunk), "completed/regression");
    // A PR on that base that breaks nothing new: its only failure is the base's.
    auto pr =
        send("m-pr-old", "2222222222222222222222222222222222222222", 5, {"torch/_inductor/ir.py"});
    EXPECT_EQ(finished(pr), "completed/pre_existing");
    EXPECT_EQ(run_row(*daemon, pr).reason, "import: 1 test fails on 1111111 too");
    // The later tiers ran: a pre-existing failure does not stop them.
    EXPECT_EQ(
        jobs(pr),
        "import:completed:regression:1 import:completed:pre_existing:2 smoke:completed:passed:1 "
        "affected:completed:passed:1");
    auto ev = first_job(*daemon, {.run = pr, .tier = "import", .attempt = 2}).evidence;
    EXPECT_EQ(ev["pre_existing"],
              (json::array({{{"test", "ci::fail_known"}, {"run_id", trunk}, {"sha", base}}})));
    // A PR that also breaks a test of its own stays a regression.
    auto broken = send("m-pr-new", "3333333333333333333333333333333333333333", 6,
                       {"aten/src/ATen/native/BinaryOps.cpp"});
    EXPECT_EQ(finished(broken), "completed/regression");
    EXPECT_EQ(first_job(*daemon, {.run = broken, .tier = "affected", .attempt = 2}).conclusion,
              "regression");
}

TEST_F(ExecutionTest, WithBaseCheckRunTheFailuresNoRunAnsweredForAreRunOnTheBase) {
    top_extra = "classify: {base_check: run}\nreport: {file: state/statuses.jsonl}\n";
    start("ok_import, fail_known, failon_3333");
    const std::string base = "1111111111111111111111111111111111111111";
    auto send = [&](const std::string& id, const std::string& sha, int pr) {
        json j = json::parse(fixture_text("crcr/direct-pytorch-crcr.json"));
        auto& cp = j["client_payload"];
        cp["upstream_sha"] = sha;
        cp["changed_files"] = json::array({"torch/_inductor/ir.py"});
        cp["pr_number"] = pr;
        cp["base_sha"] = base;
        auto r = daemon->post_standard(j.dump(), id);
        EXPECT_EQ(r->status, 202) << r->body;
        return json::parse(r->body)["run_id"].get<std::int64_t>();
    };
    // The base check: the third attempt of the import tier.
    auto base_check = [&](std::int64_t run) {
        return first_job(*daemon, {.run = run, .tier = "import", .attempt = 3});
    };
    // No run of the base is known: fail_known is run on the base, fails there too.
    auto pr = send("bc-1", "2222222222222222222222222222222222222222", 5);
    EXPECT_EQ(finished(pr), "completed/pre_existing");
    EXPECT_EQ(jobs(pr),
              "import:completed:regression:1 import:completed:regression:2 "
              "import:completed:pre_existing:3 "
              "smoke:completed:passed:1 affected:completed:passed:1");
    EXPECT_EQ(first_job(*daemon, {.run = pr, .tier = "import", .attempt = 2}).reason,
              "1 of 3 tests failed, again on rerun; checking 1 test on base 1111111");
    // The base check ran on the base SHA, only the failing test no run answered for.
    EXPECT_EQ(base_check(pr).sha, base);
    EXPECT_EQ(base_check(pr).metadata["pytorch_sha"], base);
    EXPECT_EQ(test_outcomes(*daemon, {.run = pr, .tier = "import", .attempt = 3}),
              "ci::fail_known=failed");
    EXPECT_EQ(base_check(pr).reason, "1 test fails on 1111111 too");
    EXPECT_EQ(base_check(pr).evidence["pre_existing"],
              (json::array({{{"test", "ci::fail_known"}, {"run_id", pr}, {"sha", base}}})));
    // Its own context, and the tier's says the tier's class.
    auto last = [&](std::int64_t run, const std::string& context) {
        auto row = last_outbox_row(*daemon, {.run = run, .context = context});
        return row ? row->state + " " + row->description : "(no status of " + context + ")";
    };
    EXPECT_EQ(last(pr, "crcr/import/base"), "success 1 test fails on 1111111 too");
    EXPECT_EQ(last(pr, "crcr/import"), "success 1 test fails on 1111111 too");
    std::string descriptions;
    for (const auto& row : outbox_rows(*daemon, {.run = pr, .context = "crcr/import"}))
        descriptions += row.description + " | ";
    EXPECT_NE(descriptions.find("checking 1 failing test on base 1111111"), std::string::npos)
        << descriptions;

    // A PR whose second failure passes on the base: the change broke it.
    auto broken = send("bc-2", "3333333333333333333333333333333333333333", 6);
    EXPECT_EQ(finished(broken), "completed/regression");
    EXPECT_EQ(base_check(broken).reason, "1 failing test passes on 1111111: the change broke it");
    EXPECT_EQ(base_check(broken).evidence["passes_on_base"], json::array({"ci::failon_3333"}));
    EXPECT_EQ(last(broken, "crcr/import/base"),
              "failure 1 failing test passes on 1111111: the change broke it");
    EXPECT_EQ(last(broken, "crcr/import"),
              "failure regression: 1 failing test passes on 1111111: the change broke it");
    EXPECT_EQ(
        jobs(broken),
        "import:completed:regression:1 import:completed:regression:2 import:completed:regression:3 "
        "smoke:cancelled:cancelled:1 affected:cancelled:cancelled:1");
}

TEST_F(ExecutionTest, ACrashIsRetriedThenInfraErrorAndLaterTiersAreCancelled) {
    start("crash");
    auto run = post({"torch/_inductor/ir.py"}, "m-3");
    EXPECT_EQ(finished(run), "completed/infra_error");
    EXPECT_EQ(
        jobs(run),
        "import:completed:infra_error:1 import:completed:infra_error:2 smoke:cancelled:cancelled:1 "
        "affected:cancelled:cancelled:1");
    EXPECT_NE(
        first_job(*daemon, {.run = run, .tier = "smoke"}).reason.find("import ended infra_error"),
        std::string::npos);
}

TEST_F(ExecutionTest, AnUnhealthyDeviceGoesOfflineAndTheJobEndsDeviceUnavailable) {
    start("ok_import", "[/bin/false]");
    auto run = post({"torch/_inductor/ir.py"}, "m-4");
    EXPECT_EQ(finished(run), "completed/device_unavailable");
    EXPECT_NE(
        first_job(*daemon, {.run = run, .tier = "import"}).reason.find("no healthy runner slot"),
        std::string::npos);
    EXPECT_EQ(slot_row(*daemon, "sim-0").state, "offline");
    EXPECT_EQ(slot_row(*daemon, "sim-0").last_health["ok"], false);
}

TEST_F(ExecutionTest, Kill9MidJobIsReconciledAtRestartWithoutOrphans) {
    start();
    auto run = post({"slow/x"}, "m-5");
    ASSERT_TRUE(eventually(
        [&] {
            return count_jobs(*daemon, {.run = run, .tier = "affected", .state = "running"}) == 1;
        },
        std::chrono::seconds(60)))
        << daemon->log();
    std::string out;
    ASSERT_TRUE(eventually([&] {
        return run_command({"pgrep", "-f", "sleep 3601.5"}, &out) == 0;
    }));
    daemon->kill9();
    // The test process dies with the daemon (its sandbox dies with its parent).
    EXPECT_TRUE(eventually(
        [&] {
            return run_command({"pgrep", "-f", "sleep 3601.5"}, &out) == 1;
        },
        std::chrono::seconds(10)))
        << out;
    daemon->start();
    // "conclusion:reason" of the affected tier's attempt.
    auto outcome = [&](int attempt) {
        const auto j = first_job(*daemon, {.run = run, .tier = "affected", .attempt = attempt});
        return j.conclusion + ":" + j.reason;
    };
    ASSERT_TRUE(eventually([&] { return outcome(1) == "infra_error:daemon restarted (retried)"; }))
        << outcome(1);
    // The retry runs again (and would hang again): it exists as attempt 2.
    EXPECT_TRUE(eventually(
        [&] { return count_jobs(*daemon, {.run = run, .tier = "affected", .attempt = 2}) == 1; }));
    // A clean stop ends the retry's process too and records it for the next start.
    EXPECT_TRUE(eventually([&] {
        return run_command({"pgrep", "-f", "sleep 3601.5"}, &out) == 0;
    }));
    EXPECT_EQ(daemon->stop(), 0);
    EXPECT_EQ(run_command({"pgrep", "-f", "sleep 3601.5"}, &out), 1) << out;
    EXPECT_EQ(outcome(2), "infra_error:daemon stopped while the job ran");
}

}  // namespace
}  // namespace crcrd
