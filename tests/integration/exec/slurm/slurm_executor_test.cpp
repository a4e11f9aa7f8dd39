// The slurm executor (docs/execution.md) end to end: the real daemon hands its jobs to a real
// single-node Slurm cluster (support/slurm_cluster.hpp) and Slurm runs `crcrd --slurm-job` on
// the node, which runs the test command in the same bubblewrap sandbox as locally.
#include <gtest/gtest.h>
#include <algorithm>
#include <nlohmann/json.hpp>

#include "crcrd/core/crypto.hpp"
#include "crcrd/core/files.hpp"
#include "support/certs.hpp"
#include "support/ci_script.hpp"
#include "support/daemon.hpp"
#include "support/slurm_cluster.hpp"
#include "support/state.hpp"

namespace crcrd {
namespace {

using nlohmann::json;

// A backend script in miniature: each test names what to do. `hold` writes `started` into its
// job directory and waits for the test to put `release` beside it; `once_hold` holds on the
// first attempt only.
constexpr const char* k_script = R"SH(#!/bin/sh
out="$CRCR_JUNIT_DIR/results.xml"
echo '<testsuite name="ci">' > "$out.part"
status=0
env | sort | sed 's/^/env: /'
# The shared root's control folders (spec and result files the daemon reads) are hidden.
echo "probe: control folders seen: $(ls -A "$HOME/../../control" 2>/dev/null | wc -l)"
while IFS= read -r t; do
  case "$t" in
    ok_*) echo "<testcase classname=\"ci\" name=\"$t\"/>" >> "$out.part" ;;
    fail_*) echo "<testcase classname=\"ci\" name=\"$t\"><failure message=\"boom\">assert</failure></testcase>" >> "$out.part"; status=1 ;;
    hang) echo hanging; exec sleep 3601 ;;
    uses_build)
      if grep -q "built $CRCR_PYTORCH_SHA" "$CRCR_BUILD_DIR/lib.txt" && ! touch "$CRCR_BUILD_DIR/mine" 2>/dev/null; then
        echo "<testcase classname=\"ci\" name=\"$t\"/>" >> "$out.part"
      else
        echo "<testcase classname=\"ci\" name=\"$t\"><failure message=\"no build\"/></testcase>" >> "$out.part"; status=1
      fi ;;
    hold|once_hold)
      if [ "$t" = hold ] || [ "$CRCR_ATTEMPT" = 1 ]; then
        touch started
        while [ ! -e release ]; do sleep 0.1; done
      fi
      echo "<testcase classname=\"ci\" name=\"$t\"/>" >> "$out.part" ;;
  esac
done < "$CRCR_TESTS_FILE"
echo '</testsuite>' >> "$out.part"
mv "$out.part" "$out"
exit $status
)SH";

class SlurmExecutorTest : public ::testing::Test {
  protected:
    void SetUp() override {
        if (auto why = SlurmCluster::skip_reason(); !why.empty()) GTEST_SKIP() << why;
        if (auto why = bwrap_unavailable(); !why.empty()) GTEST_SKIP() << why;
        cluster = std::make_unique<SlurmCluster>(cluster_dir.path());
    }

    void start(const std::string& tests, const std::string& timeout = "10m",
               const std::string& extra = "", int infra_retries = 0,
               const std::string& device_wait = "3s") {
        write_file(bin.path() / "ci.sh", k_script, 0755);
        std::filesystem::permissions(bin.path(), std::filesystem::perms(0755));
        std::filesystem::permissions(shared.path(), std::filesystem::perms(0755));
        write_file(dir.path() / "selection.yaml",
                   "tiers:\n  - {name: unit, always: true, tests: [" + tests +
                       "], labels: [aiu1], timeout: " + timeout +
                       "}\nrules: []\nunmatched: nothing\n");
        daemon = std::make_unique<TestDaemon>(
            dir.path(),
            "selection: {rules: selection.yaml}\n"
            "execution:\n"
            "  executor: slurm\n"
            "  command: [" +
                (bin.path() / "ci.sh").string() +
                "]\n"
                "  min_free_bytes: 1MiB\n"
                "  infra_retries: " +
                std::to_string(infra_retries) +
                "\n"
                "  flaky_reruns: 0\n"
                "  device_wait: " +
                device_wait +
                "\n"
                "  env: {BACKEND_FLAG: \"1\"}\n"
                "  slurm:\n"
                "    partition: " +
                cluster->partition() +
                "\n"
                "    gres_per_label: {aiu1: \"aiu:1\", aiu2: \"aiu:2\"}\n"
                "    shared_root: " +
                shared.path().string() +
                "\n"
                "    poll_interval: 200ms\n"
                "    max_submitted: 4\n" +
                extra + "admin: {tokens: [{name: ops, role: admin, sha256: " +
                crypto::sha256_hex("ops-token") + "}]}\n");
        daemon->start(cluster->env());
    }

    std::int64_t post(const std::string& id, int pr = 100,
                      const std::string& sha = "ec26c3e57ca3a959ca5aad62de7213c562f8c821") {
        json j = json::parse(fixture_text("crcr/direct-pytorch-crcr.json"));
        j["client_payload"]["pr_number"] = pr;
        j["client_payload"]["upstream_sha"] = sha;
        auto r = daemon->post_standard(j.dump(), id);
        EXPECT_EQ(r->status, 202) << r->body;
        return json::parse(r->body)["run_id"].get<std::int64_t>();
    }
    std::string finished(std::int64_t run, std::chrono::seconds within = std::chrono::seconds(90)) {
        EXPECT_TRUE(eventually(
            [&] {
                auto t = run_state(*daemon, run);
                return t.rfind("completed/", 0) == 0 || t.rfind("cancelled/", 0) == 0;
            },
            within))
            << run_state(*daemon, run) << "\n"
            << daemon->log() << "\n"
            << cluster->log_tail();
        return run_state(*daemon, run);
    }
    std::string jobs(std::int64_t run) { return jobs_of(*daemon, run); }
    std::int64_t job_of(std::int64_t run, int attempt = 1) {
        EXPECT_TRUE(eventually([&] {
            return count_jobs(*daemon, {.run = run, .attempt = attempt}) == 1;
        })) << daemon->log();
        return first_job(*daemon, {.run = run, .attempt = attempt}).id;
    }
    json evidence(std::int64_t job) { return job_row(*daemon, job).evidence; }
    /// The Slurm job id crcrd stored for job `job` ("" before sbatch answered).
    std::string slurm_id_of(std::int64_t job) { return job_row(*daemon, job).external_id; }
    /// Slurm's own word on job `id`: its JobState.
    std::string slurm_state(const std::string& id) {
        std::string out;
        cluster->run({"scontrol", "show", "job", "-o", id}, &out);
        auto at = out.find("JobState=");
        return at == std::string::npos ? out : out.substr(at + 9, out.find(' ', at) - at - 9);
    }
    /// Waits until job `job`'s command runs on the node (it wrote `started`).
    bool held(std::int64_t job) {
        return eventually(
            [&] {
                return std::filesystem::exists(shared.path() / "jobs" / std::to_string(job) /
                                               "started");
            },
            std::chrono::seconds(60));
    }
    void release(std::int64_t job) {
        write_file(shared.path() / "jobs" / std::to_string(job) / "release", "");
    }
    /// How many Slurm jobs were ever named `name` (the controller's and the completion file's).
    int slurm_jobs_named(const std::string& name) {
        auto text = read_file(cluster->jobcomp_path()).value_or("");
        int n = 0;
        for (std::size_t p = text.find(" Name=" + name + " "); p != std::string::npos;
             p = text.find(" Name=" + name + " ", p + 1))
            ++n;
        std::string out;
        cluster->run({"squeue", "--noheader", "--name=" + name, "--format=%i"},
                     &out);  // still queued or running
        for (char c : out) n += c == '\n';
        return n;
    }

    /// A restarted daemon adopts Slurm job `slurm_id` of `job` (held by the test command) and
    /// collects it once released: one attempt, one Slurm job.
    void expect_adopted_once(std::int64_t run, std::int64_t job, const std::string& slurm_id) {
        daemon->start(cluster->env());
        ASSERT_TRUE(eventually([&] {
            return daemon->log().find("adopted Slurm job " + slurm_id) != std::string::npos;
        })) << daemon->log();
        release(job);
        EXPECT_EQ(finished(run), "completed/passed");
        EXPECT_EQ(jobs(run), "unit:completed:passed:1");
        EXPECT_EQ(slurm_id_of(job), slurm_id);
        EXPECT_EQ(slurm_jobs_named("crcrd-" + std::to_string(job)), 1);
    }

    /// Another user's job holds both aiu of the only node.
    ::testing::AssertionResult hold_both_aiu() {
        write_file(bin.path() / "sleep.sh", "#!/bin/sh\nexec sleep 600\n", 0755);
        std::string out;
        if (cluster->run({"sbatch", "--parsable", "--gres=aiu:2", "--job-name=other",
                          "--output=/dev/null", (bin.path() / "sleep.sh").string()},
                         &out) != 0) {
            return ::testing::AssertionFailure() << "sbatch: " << out;
        }
        if (!eventually([&] {
                auto s = cluster->node_state();
                return s == "mixed" || s == "allocated";
            })) {
            return ::testing::AssertionFailure() << "the node stays " << cluster->node_state();
        }
        return ::testing::AssertionSuccess();
    }

    TempDir cluster_dir, dir, bin, shared;
    std::unique_ptr<SlurmCluster> cluster;
    std::unique_ptr<TestDaemon> daemon;
};

TEST_F(SlurmExecutorTest, APassingTierRunsAsASlurmJobWithExactlyTheContractEnvironment) {
    start("ok_a, ok_b");
    auto run = post("s-pass");
    EXPECT_EQ(finished(run), "completed/passed");
    const auto job = job_of(run);
    const std::string slurm_id = slurm_id_of(job);
    ASSERT_FALSE(slurm_id.empty());
    auto ev = evidence(job)["executor"];
    EXPECT_EQ(ev["kind"], "slurm");
    EXPECT_EQ(ev["slurm_job_id"], slurm_id);
    EXPECT_EQ(ev["state"], "COMPLETED");
    EXPECT_EQ(ev["node"], cluster->node());
    EXPECT_EQ(ev["exit_code"], "0:0");
    EXPECT_EQ(test_outcomes(*daemon, {.id = job}), "ci::ok_a=passed ci::ok_b=passed");
    // Slurm knows it under crcrd's name, and asked for the tier's GRES.
    std::string out;
    cluster->run({"scontrol", "show", "job", "-o", slurm_id}, &out);
    EXPECT_NE(out.find("JobName=crcrd-" + std::to_string(job)), std::string::npos) << out;
    EXPECT_NE(out.find("Comment=crcrd:job=" + std::to_string(job) + ",run=" + std::to_string(run) +
                       ",tier=unit,attempt=1"),
              std::string::npos)
        << out;
    EXPECT_NE(out.find("gres:aiu:1"), std::string::npos) << out;
    // What the command saw: the documented environment (docs/execution.md) and nothing else (no
    // SLURM_*, no login shell's).
    auto log = read_file(job_row(*daemon, job).log_path).value();
    std::vector<std::string> names;
    for (std::size_t p = log.find("env: "); p != std::string::npos; p = log.find("env: ", p + 1)) {
        auto line = log.substr(p + 5, log.find('\n', p) - p - 5);
        names.push_back(line.substr(0, line.find('=')));
    }
    EXPECT_EQ(names, (std::vector<std::string>{"BACKEND_FLAG", "CRCR_ATTEMPT", "CRCR_JOB_ID",
                                               "CRCR_JUNIT_DIR", "CRCR_PR", "CRCR_PYTORCH_SHA",
                                               "CRCR_RUN_ID", "CRCR_SLOT", "CRCR_TESTS_FILE",
                                               "CRCR_TIER", "HOME", "LANG", "PATH", "PWD"}))
        << log;
    EXPECT_NE(log.find("env: CRCR_SLOT=slurm-"), std::string::npos) << log;
    EXPECT_NE(log.find("probe: control folders seen: 0\n"), std::string::npos) << log;
}

// A build stage under Slurm (docs/build.md): the build is a Slurm job of its own on
// build.partition, without GRES; it writes into the cache on the shared root; the tier's job is
// submitted only once it is published, and reads it.
constexpr const char* k_build_script = R"SH(#!/bin/sh
echo "build of $CRCR_PYTORCH_SHA into $CRCR_BUILD_OUT"
touch started
while [ ! -e release ]; do sleep 0.1; done
echo "built $CRCR_PYTORCH_SHA" > "$CRCR_BUILD_OUT/lib.txt"
)SH";

class SlurmBuildTest : public SlurmExecutorTest {
  protected:
    void start_with_build() {
        write_file(bin.path() / "build.sh", k_build_script, 0755);
        start("uses_build", "10m",
              "build:\n"
              "  command: [" +
                  (bin.path() / "build.sh").string() +
                  "]\n"
                  "  partition: " +
                  cluster->build_partition() +
                  "\n"
                  "  cache_dir: " +
                  (shared.path() / "builds").string() +
                  "\n"
                  "  timeout: 5m\n");
    }
    JobRow build_job(std::int64_t run) {
        EXPECT_TRUE(eventually(
            [&] { return count_jobs(*daemon, {.run = run, .tier = std::string("build")}) > 0; }));
        return first_job(*daemon, {.run = run, .tier = "build"});
    }
    /// Slurm's record of job `id` (scontrol show job -o).
    std::string slurm_job(const std::string& id) {
        std::string out;
        cluster->run({"scontrol", "show", "job", "-o", id}, &out);
        return out;
    }
    /// The build ran on the build partition without GRES, was published once, and the tier
    /// (submitted after it, with its GRES) passed reading it.
    void expect_built_and_used(std::int64_t run, std::int64_t build, const std::string& slurm_id) {
        EXPECT_EQ(finished(run), "completed/passed");
        EXPECT_EQ(jobs(run), "build:completed:passed:1 unit:completed:passed:1");
        const auto b = job_row(*daemon, build);
        EXPECT_EQ(b.slot, "build-1");
        EXPECT_EQ(b.external_id, slurm_id);
        const auto record = slurm_job(slurm_id);
        EXPECT_NE(record.find("Partition=" + cluster->build_partition()), std::string::npos)
            << record;
        EXPECT_EQ(record.find("gres:aiu"), std::string::npos) << record;
        const auto rows = build_rows(*daemon);
        ASSERT_EQ(rows.size(), 1u);
        EXPECT_EQ(rows[0].state, "ready");
        EXPECT_EQ(rows[0].attempts, 1);
        EXPECT_EQ(read_file(shared.path() / "builds" / rows[0].key / "lib.txt").value_or(""),
                  "built ec26c3e57ca3a959ca5aad62de7213c562f8c821\n");
        const auto tier = last_job(*daemon, {.run = run, .tier = "unit"});
        EXPECT_GE(tier.started_at, b.finished_at);
        const auto tier_record = slurm_job(tier.external_id);
        EXPECT_NE(tier_record.find("Partition=" + cluster->partition()), std::string::npos)
            << tier_record;
        EXPECT_NE(tier_record.find("gres:aiu:1"), std::string::npos) << tier_record;
        EXPECT_EQ(slurm_jobs_named("crcrd-" + std::to_string(build)), 1);
    }
};

TEST_F(SlurmBuildTest, TheBuildIsASlurmJobOnItsPartitionAndTheTierIsSubmittedOnlyAfterIt) {
    start_with_build();
    const auto run = post("sb-build");
    const auto build = build_job(run);
    ASSERT_TRUE(held(build.id)) << daemon->log();
    // While the build runs in Slurm, no tier's job is there.
    const auto slurm_id = slurm_id_of(build.id);
    EXPECT_NE(slurm_job(slurm_id).find("JobState=RUNNING"), std::string::npos);
    EXPECT_EQ(count_jobs(*daemon,
                         {.run = run, .tier = std::string("unit"), .state = std::string("queued")}),
              1);
    release(build.id);
    expect_built_and_used(run, build.id, slurm_id);
}

TEST_F(SlurmBuildTest, AfterKill9MidBuildTheNextDaemonAdoptsTheBuildAndPublishesIt) {
    start_with_build();
    const auto run = post("sb-adopt");
    const auto build = build_job(run);
    ASSERT_TRUE(held(build.id)) << daemon->log();
    const auto slurm_id = slurm_id_of(build.id);
    daemon->kill9();
    EXPECT_EQ(slurm_state(slurm_id), "RUNNING");  // the build goes on without crcrd
    daemon->start(cluster->env());
    ASSERT_TRUE(eventually([&] {
        return daemon->log().find("adopted Slurm job " + slurm_id) != std::string::npos;
    })) << daemon->log();
    // Its partial output survived the start, and its row still says it runs.
    ASSERT_EQ(build_rows(*daemon).size(), 1u);
    EXPECT_EQ(build_rows(*daemon)[0].state, "running");
    release(build.id);
    expect_built_and_used(run, build.id, slurm_id);
}

TEST_F(SlurmExecutorTest, AFailingTestIsARegressionWithSlurmsVerdictInTheEvidence) {
    start("ok_a, fail_b");
    auto run = post("s-fail");
    EXPECT_EQ(finished(run), "completed/regression");
    auto ev = evidence(job_of(run));
    EXPECT_EQ(ev["executor"]["state"], "FAILED");
    EXPECT_EQ(ev["executor"]["exit_code"], "1:0");
    EXPECT_EQ(ev["failed_tests"], json::array({"ci::fail_b"}));
}

TEST_F(SlurmExecutorTest, SlurmsTimeLimitEndsTheJobAsTimeout) {
    // Slurm's resolution is a minute, and its controller looks every 30 s or so.
    start("hang", "1m");
    auto run = post("s-timeout");
    EXPECT_EQ(finished(run, std::chrono::seconds(180)), "completed/timeout");
    auto ev = evidence(job_of(run));
    EXPECT_EQ(ev["executor"]["state"], "TIMEOUT");
    EXPECT_EQ(ev["timed_out"], true);
}

TEST_F(SlurmExecutorTest, ANodeThatFailsUnderAJobIsAnInfraErrorAndTheRetryRunsOnceItIsBack) {
    start("once_hold", "10m", "", 1);
    auto run = post("s-node");
    const auto first = job_of(run);
    ASSERT_TRUE(held(first)) << daemon->log();
    cluster->set_node_state("down", "crcrd test");
    // The retry waits in Slurm for the node (within device_wait: it is not pending for long).
    ASSERT_TRUE(eventually([&] { return count_jobs(*daemon, {.run = run}) == 2; },
                           std::chrono::seconds(60)))
        << daemon->log();
    cluster->set_node_state("resume");
    EXPECT_EQ(finished(run), "completed/passed");
    EXPECT_EQ(jobs(run), "unit:completed:infra_error:1 unit:completed:passed:2");
    auto ev = evidence(first);
    EXPECT_EQ(ev["executor"]["state"], "NODE_FAIL");
    EXPECT_NE(job_row(*daemon, first).reason.find("NODE_FAIL"), std::string::npos);
}

TEST_F(SlurmExecutorTest,
       AJobPendingForDevicesPastDeviceWaitIsDeviceUnavailableAndCancelledInSlurm) {
    ASSERT_TRUE(hold_both_aiu());
    start("ok_a");
    auto run = post("s-pending");
    EXPECT_EQ(finished(run), "completed/device_unavailable");
    const auto job = job_of(run);
    auto reason = job_row(*daemon, job).reason;
    EXPECT_NE(reason.find("still pending (Resources) after 3s"), std::string::npos) << reason;
    EXPECT_EQ(slurm_state(slurm_id_of(job)), "CANCELLED");
}

TEST_F(SlurmExecutorTest, ANewerShaForThePrScancelsTheRunningSlurmJob) {
    start("hold");
    auto run = post("s-old", 7);
    const auto job = job_of(run);
    ASSERT_TRUE(held(job)) << daemon->log();
    const std::string slurm_id = slurm_id_of(job);
    auto next = post("s-new", 7, "0123456789abcdef0123456789abcdef01234567");
    EXPECT_EQ(finished(run), "cancelled/cancelled");
    EXPECT_TRUE(eventually([&] { return slurm_state(slurm_id) == "CANCELLED"; }))
        << slurm_state(slurm_id);
    const auto next_job = job_of(next);
    ASSERT_TRUE(held(next_job)) << daemon->log();
    release(next_job);
    EXPECT_EQ(finished(next), "completed/passed");
}

TEST_F(SlurmExecutorTest, AfterKill9TheNextDaemonAdoptsTheSlurmJobInsteadOfRunningItAgain) {
    start("hold");
    auto run = post("s-adopt");
    const auto job = job_of(run);
    ASSERT_TRUE(held(job)) << daemon->log();
    const std::string slurm_id = slurm_id_of(job);
    daemon->kill9();
    EXPECT_EQ(slurm_state(slurm_id), "RUNNING");  // the test goes on without crcrd
    expect_adopted_once(run, job, slurm_id);
}

TEST_F(SlurmExecutorTest, ADaemonKilledBeforeItStoredTheSlurmIdFindsTheJobByName) {
    start("hold");
    auto run = post("s-unstored");
    const auto job = job_of(run);
    ASSERT_TRUE(held(job)) << daemon->log();
    const std::string slurm_id = slurm_id_of(job);
    daemon->kill9();
    // As if sbatch had answered and the daemon died before its write.
    forget_external_ids(*daemon);
    ASSERT_EQ(slurm_id_of(job), "");
    expect_adopted_once(run, job, slurm_id);
}

TEST_F(SlurmExecutorTest, AStoppedDaemonLeavesTheSlurmJobRunningAndTheNextOneCollectsIt) {
    start("hold");
    auto run = post("s-stop");
    const auto job = job_of(run);
    ASSERT_TRUE(held(job)) << daemon->log();
    const std::string slurm_id = slurm_id_of(job);
    EXPECT_EQ(daemon->stop(), 0);
    EXPECT_EQ(slurm_state(slurm_id), "RUNNING");
    EXPECT_EQ(job_row(*daemon, job).state, "running");
    release(job);
    EXPECT_TRUE(eventually([&] { return slurm_state(slurm_id) == "COMPLETED"; }))
        << slurm_state(slurm_id);
    daemon->start(cluster->env());
    EXPECT_EQ(finished(run), "completed/passed");
    EXPECT_EQ(slurm_jobs_named("crcrd-" + std::to_string(job)), 1);
}

TEST_F(SlurmExecutorTest, WithCancelPendingOnStopAStopScancelsWhatStillWaitsInSlurm) {
    ASSERT_TRUE(hold_both_aiu());
    start("ok_a", "10m", "    cancel_pending_on_stop: true\n", 0, "10m");
    auto run = post("s-stop-pending");
    const auto job = job_of(run);
    ASSERT_TRUE(eventually([&] { return !slurm_id_of(job).empty(); })) << daemon->log();
    const std::string slurm_id = slurm_id_of(job);
    ASSERT_TRUE(eventually([&] { return slurm_state(slurm_id) == "PENDING"; }))
        << slurm_state(slurm_id);
    EXPECT_EQ(daemon->stop(), 0);
    EXPECT_EQ(slurm_state(slurm_id), "CANCELLED");
    const auto stopped = job_row(*daemon, job);
    EXPECT_EQ(stopped.state + "/" + stopped.conclusion + ": " + stopped.reason,
              "completed/infra_error: daemon stopped while the job ran");
}

TEST_F(SlurmExecutorTest, RunnersShowThePartitionsNodesAndTheirGresBesideCrcrdsSlots) {
    start("hold");
    auto run = post("s-runners");
    const auto job = job_of(run);
    ASSERT_TRUE(held(job)) << daemon->log();
    auto r = daemon->request("GET", "/api/v1/runners", {{"Authorization", "Bearer ops-token"}}, "");
    ASSERT_TRUE(r);
    auto body = json::parse(r->body);
    ASSERT_EQ(body["items"].size(), 4u) << body.dump();
    EXPECT_EQ(body["items"][0]["labels"], json::array({"aiu1", "aiu2"}));
    const auto slots = slot_rows(*daemon);
    EXPECT_EQ(std::count_if(slots.begin(), slots.end(),
                            [](const SlotRow& s) { return s.state == "busy"; }),
              1);
    auto c = body["cluster"];
    EXPECT_EQ(c["partition"], "spyre");
    EXPECT_EQ(c["title"], "Slurm partition spyre");
    EXPECT_EQ(c["columns"][0], (json{{"field", "name"}, {"header", "NODE"}}));
    ASSERT_EQ(c["rows"].size(), 1u) << c.dump();
    EXPECT_EQ(c["rows"][0]["name"], cluster->node());
    EXPECT_EQ(c["rows"][0]["gres"], "aiu:2");
    EXPECT_EQ(c["rows"][0]["gres_used"].get<std::string>().rfind("aiu:1", 0), 0u) << c.dump();
    EXPECT_EQ(c["rows"][0]["state"], "mixed");
    std::string out;
    write_file(dir.path() / "ops.token", "ops-token\n", 0600);
    EXPECT_EQ(
        run_command({CRCRCTL_BIN, "--url", daemon->url(""), "--cacert", test_certs().ca.string(),
                     "--token-file", (dir.path() / "ops.token").string(), "runners", "list"},
                    &out),
        0)
        << out;
    EXPECT_NE(out.find("Slurm partition spyre:"), std::string::npos) << out;
    EXPECT_NE(out.find("GRES USED"), std::string::npos) << out;
    EXPECT_NE(out.find(cluster->node()), std::string::npos) << out;
    EXPECT_NE(out.find("aiu:2"), std::string::npos) << out;
    release(job);
    EXPECT_EQ(finished(run), "completed/passed");
}

TEST_F(SlurmExecutorTest, CheckConfigRefusesAPartitionTheClusterDoesNotHave) {
    write_file(bin.path() / "ci.sh", k_script, 0755);
    TestDaemon d(dir.path(),
                 "execution:\n  executor: slurm\n  command: [" + (bin.path() / "ci.sh").string() +
                     "]\n  slurm: {partition: nope, shared_root: " + shared.path().string() +
                     "}\n");
    std::string out;
    std::vector<std::string> argv = {"env"};
    for (const auto& e : cluster->env()) argv.push_back(e);
    argv.insert(argv.end(), {CRCRD_BIN, "--check-config", "--config", d.config_path().string()});
    EXPECT_EQ(run_command(argv, &out), 2) << out;
    EXPECT_NE(out.find("execution.slurm.partition: 'nope' is not a partition of the cluster"),
              std::string::npos)
        << out;
}

TEST_F(SlurmExecutorTest,
       CheckConfigNamesABuildPartitionTheClusterDoesNotHaveAndACacheOffTheShare) {
    write_file(bin.path() / "ci.sh", k_script, 0755);
    const std::string head = "execution:\n  executor: slurm\n  command: [" +
                             (bin.path() / "ci.sh").string() +
                             "]\n  slurm: {partition: " + cluster->partition() +
                             ", shared_root: " + shared.path().string() + "}\nbuild: {command: [" +
                             (bin.path() / "ci.sh").string() + "], ";
    auto check = [&](const std::string& build, std::string& out) {
        TestDaemon d(dir.path(), head + build + "}\n");
        std::vector<std::string> argv = {"env"};
        for (const auto& e : cluster->env()) argv.push_back(e);
        argv.insert(argv.end(),
                    {CRCRD_BIN, "--check-config", "--config", d.config_path().string()});
        return run_command(argv, &out);
    };
    std::string out;
    EXPECT_EQ(check("partition: nope, cache_dir: " + (shared.path() / "builds").string(), out), 2)
        << out;
    EXPECT_NE(out.find("build.partition: 'nope' is not a partition of the cluster"),
              std::string::npos)
        << out;
    EXPECT_EQ(check("partition: " + cluster->build_partition() +
                        ", cache_dir: " + (dir.path() / "builds").string(),
                    out),
              2)
        << out;
    EXPECT_NE(out.find("build.cache_dir: must be inside execution.slurm.shared_root"),
              std::string::npos)
        << out;
    EXPECT_EQ(check("partition: " + cluster->build_partition() +
                        ", cache_dir: " + (shared.path() / "builds").string(),
                    out),
              0)
        << out;
}

}  // namespace
}  // namespace crcrd
