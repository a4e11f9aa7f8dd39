// What crcrd reads from Slurm's commands and what it passes to sbatch, on text Slurm 22.05
// printed (tests/integration/slurm_cluster_test.cpp's cluster).
#include <gtest/gtest.h>

#include "crcrd/exec/job_env.hpp"
#include "crcrd/exec/slurm/node_job.hpp"
#include "crcrd/exec/slurm/slurm_cli.hpp"

namespace crcrd::exec::slurm {
namespace {

constexpr const char* k_running =
    "JobId=12 JobName=crcrd-7 UserId=root(0) GroupId=root(0) MCS_label=N/A Priority=4294901759 "
    "Nice=0 Account=(null) "
    "QOS=(null) JobState=RUNNING Reason=None Dependency=(null) Requeue=0 Restarts=0 BatchFlag=1 "
    "Reboot=0 ExitCode=0:0 "
    "RunTime=00:00:04 TimeLimit=00:01:00 NodeList=vm BatchHost=vm NumNodes=1 "
    "Command=/shared/crcrd-slurm-job.sh /usr/bin/crcrd "
    "--slurm-job /shared/control/7/spec.json WorkDir=/shared/control/7 "
    "Comment=crcrd:job=7,run=3,tier=unit,attempt=1  "
    "StdErr=/shared/control/7/slurm.out TresPerNode=gres:aiu:1\n";

TEST(SlurmCli, ReadsAJobLineWhoseCommandHasSpaces) {
    auto j = job_info(k_running);
    ASSERT_TRUE(j);
    EXPECT_EQ(j->id, "12");
    EXPECT_EQ(j->state, "RUNNING");
    EXPECT_EQ(j->reason, "None");
    EXPECT_EQ(j->node, "vm");
    EXPECT_EQ(j->exit_code, "0:0");
    EXPECT_EQ(j->name, "crcrd-7");
    auto f = parse_fields(k_running);
    EXPECT_EQ(f["Command"],
              "/shared/crcrd-slurm-job.sh /usr/bin/crcrd --slurm-job /shared/control/7/spec.json");
    EXPECT_EQ(f["Comment"], "crcrd:job=7,run=3,tier=unit,attempt=1");
}

TEST(SlurmCli, APendingJobHasNoNode) {
    auto j = job_info(
        "JobId=5 JobName=x JobState=PENDING Reason=Resources ExitCode=0:0 NodeList= "
        "BatchHost=(null)");
    ASSERT_TRUE(j);
    EXPECT_EQ(j->node, "");
    EXPECT_EQ(j->reason, "Resources");
    EXPECT_FALSE(job_info("slurm_load_jobs error: Invalid job id specified"));
}

TEST(SlurmCli, FindsTheLastCompletionRecordOfAJob) {
    const std::string text =
        "JobId=1 UserId=root(0) GroupId=root(0) Name=x JobState=COMPLETED Partition=spyre "
        "NodeList=vm ExitCode=0:0 \n"
        "JobId=12 UserId=root(0) GroupId=root(0) Name=crcrd-7 JobState=TIMEOUT Partition=spyre "
        "NodeList=vm ExitCode=0:0 \n"
        "JobId=123 UserId=root(0) GroupId=root(0) Name=y JobState=FAILED Partition=spyre "
        "NodeList=vm ExitCode=3:0 \n";
    auto j = find_completion(text, "12");
    ASSERT_TRUE(j);
    EXPECT_EQ(j->state, "TIMEOUT");
    EXPECT_EQ(j->name, "crcrd-7");
    EXPECT_EQ(find_completion(text, "123")->exit_code, "3:0");
    EXPECT_FALSE(find_completion(text, "2"));
    EXPECT_EQ(find_completion_by_name(text, "crcrd-7")->id, "12");
    EXPECT_FALSE(find_completion_by_name(text, "crcrd-1"));
}

TEST(SlurmCli, MapsEverySlurmStateToWhatCrcrdDoes) {
    struct Case {
        const char* state;
        Phase phase;
    };
    for (const auto& c : std::vector<Case>{{"PENDING", Phase::waiting},
                                           {"CONFIGURING", Phase::waiting},
                                           {"REQUEUED", Phase::waiting},
                                           {"SUSPENDED", Phase::waiting},
                                           {"RUNNING", Phase::running},
                                           {"COMPLETING", Phase::running},
                                           {"COMPLETED", Phase::finished},
                                           {"FAILED", Phase::finished},
                                           {"TIMEOUT", Phase::timed_out},
                                           {"DEADLINE", Phase::timed_out},
                                           {"NODE_FAIL", Phase::infra},
                                           {"BOOT_FAIL", Phase::infra},
                                           {"OUT_OF_MEMORY", Phase::infra},
                                           {"SOMETHING_NEW", Phase::infra},
                                           {"PREEMPTED", Phase::preempted},
                                           {"CANCELLED", Phase::cancelled}}) {
        EXPECT_EQ(phase_of(c.state), c.phase) << c.state;
    }
}

TEST(SlurmCli, OnlyADeviceShortageCountsTowardsDeviceWait) {
    for (const char* r : {"Resources", "ReqNodeNotAvail,_UnavailableNodes:vm", "NodeDown",
                          "Nodes_required_for_job_are_DOWN,_DRAINED_or_reserved_for_jobs_in_higher_"
                          "priority_partitions"}) {
        EXPECT_TRUE(waits_for_device(r)) << r;
    }
    for (const char* r :
         {"None", "Priority", "QOSMaxJobsPerUserLimit", "BeginTime", "Dependency"}) {
        EXPECT_FALSE(waits_for_device(r)) << r;
    }
}

TEST(SlurmCli, TimeLimitsAreMinutesAndSeconds) {
    using std::chrono::milliseconds;
    EXPECT_EQ(time_limit(milliseconds(600'000)), "10:00");
    EXPECT_EQ(time_limit(milliseconds(90'500)), "1:31");
    EXPECT_EQ(time_limit(milliseconds(0)), "0:01");
    EXPECT_EQ(time_limit(std::chrono::hours(3)), "180:00");
}

TEST(SlurmCli, ReadsTheJobIdSbatchPrints) {
    EXPECT_EQ(parse_sbatch_id("42\n"), "42");
    EXPECT_EQ(parse_sbatch_id("42;cluster\n"), "42");
    EXPECT_FALSE(parse_sbatch_id(""));
    EXPECT_FALSE(parse_sbatch_id("sbatch: error: Batch job submission failed\n"));
}

TEST(SlurmCli, TheSbatchArgvIsAnArgvWithCrcrdsOwnOptionsFirst) {
    Submission s;
    s.partition = "spyre";
    s.gres = gres_for({"spyre_pf_x1", "fast", "spyre_pf_x1"},
                      {{"spyre_pf_x1", "aiu:1"}, {"spyre_pf_x2", "aiu:2"}});
    s.timeout = std::chrono::minutes(30);
    s.job_name = "crcrd-7";
    s.comment = "crcrd:job=7";
    s.output = "/s/control/7/slurm.out";
    s.chdir = "/s/control/7";
    s.extra = {"--qos=ci", "--account=spyre team"};
    s.script = "/s/crcrd-slurm-job.sh";
    s.command = {"/usr/bin/crcrd", "--slurm-job", "/s/control/7/spec.json"};
    EXPECT_EQ(sbatch_argv(s),
              (std::vector<std::string>{
                  "sbatch", "--parsable", "--export=NONE", "--no-requeue", "--job-name=crcrd-7",
                  "--comment=crcrd:job=7", "--partition=spyre", "--time=30:00",
                  "--output=/s/control/7/slurm.out", "--chdir=/s/control/7", "--gres=aiu:1",
                  "--qos=ci", "--account=spyre team", "/s/crcrd-slurm-job.sh", "/usr/bin/crcrd",
                  "--slurm-job", "/s/control/7/spec.json"}));
}

TEST(SlurmCli, ReadsThePartitionsNodesFromSinfo) {
    auto nodes = nodes_of("vm|mixed|aiu:2|aiu:1(IDX:0)|none\nvm2|down|aiu:2|aiu:0|crcrd test\n\n");
    ASSERT_EQ(nodes.size(), 2u);
    EXPECT_EQ(nodes[0]["name"], "vm");
    EXPECT_EQ(nodes[0]["state"], "mixed");
    EXPECT_EQ(nodes[0]["gres"], "aiu:2");
    EXPECT_EQ(nodes[0]["gres_used"], "aiu:1(IDX:0)");
    EXPECT_TRUE(nodes[0]["reason"].is_null());
    EXPECT_EQ(nodes[1]["reason"], "crcrd test");
}

TEST(SlurmNodeJob, MasksOverPathsTheNodeDoesNotHaveAreDropped) {
    std::vector<std::string> argv = {"bwrap",
                                     "--ro-bind",
                                     "/",
                                     "/",
                                     "--tmpfs",
                                     "/tmp",
                                     "--tmpfs",
                                     "/etc",
                                     "--tmpfs",
                                     "/no/such/state",
                                     "--ro-bind-try",
                                     "/dev/null",
                                     "/no/such/secret",
                                     "--ro-bind-try",
                                     "/dev/null",
                                     "/etc/hostname",
                                     "--chdir",
                                     "/j",
                                     "--",
                                     "/opt/ci.sh",
                                     "--tmpfs",
                                     "/no/such/arg"};
    drop_absent_masks(argv);
    EXPECT_EQ(argv, (std::vector<std::string>{"bwrap", "--ro-bind", "/", "/", "--tmpfs", "/tmp",
                                              "--tmpfs", "/etc", "--ro-bind-try", "/dev/null",
                                              "/etc/hostname", "--chdir", "/j", "--", "/opt/ci.sh",
                                              "--tmpfs", "/no/such/arg"}));
    std::vector<std::string> plain = {"/opt/ci.sh", "--tmpfs", "/no/such"};
    drop_absent_masks(plain);
    EXPECT_EQ(plain.size(), 3u);
    // Behind the launcher's client, bubblewrap's masks are found all the same.
    std::vector<std::string> launched = {"/usr/bin/crcrd",
                                         "--sandbox-connect",
                                         "/run/crcrd/sandbox.sock",
                                         "--",
                                         "bwrap",
                                         "--tmpfs",
                                         "/no/such/state",
                                         "--tmpfs",
                                         "/etc",
                                         "--",
                                         "/opt/ci.sh"};
    drop_absent_masks(launched);
    EXPECT_EQ(launched, (std::vector<std::string>{"/usr/bin/crcrd", "--sandbox-connect",
                                                  "/run/crcrd/sandbox.sock", "--", "bwrap",
                                                  "--tmpfs", "/etc", "--", "/opt/ci.sh"}));
}

TEST(SlurmNodeJob, ASpecAndAResultSurviveTheirFiles) {
    ProcessSpec p;
    p.argv = {"bwrap", "--", "/opt/ci.sh"};
    p.env = {"PATH=/usr/bin", "CRCR_TIER=unit"};
    p.cwd = "/s/jobs/7";
    p.log_path = "/s/logs/7.log";
    p.max_log_bytes = 1234;
    p.timeout = std::chrono::minutes(12);
    p.stall_timeout = std::chrono::seconds(90);
    p.uid = 65534;
    p.gid = 65534;
    p.groups = {44, 65534};
    auto back = spec_from_json(spec_json(p));
    ASSERT_TRUE(back);
    EXPECT_EQ(back->argv, p.argv);
    EXPECT_EQ(back->env, p.env);
    EXPECT_EQ(back->cwd, p.cwd);
    EXPECT_EQ(back->log_path, p.log_path);
    EXPECT_EQ(back->max_log_bytes, 1234u);
    EXPECT_EQ(back->timeout, p.timeout);
    EXPECT_EQ(back->stall_timeout, p.stall_timeout);
    EXPECT_EQ(back->uid, p.uid);
    EXPECT_EQ(back->groups, p.groups);
    EXPECT_FALSE(spec_from_json(nlohmann::json{{"argv", nlohmann::json::array()}}));

    ProcessResult r;
    r.exit_code = 1;
    r.stalled = true;
    r.output_bytes = 99;
    r.duration = std::chrono::milliseconds(1500);
    auto rb = result_from_json(result_json(r));
    EXPECT_EQ(rb.exit_code, 1);
    EXPECT_FALSE(rb.signal);
    EXPECT_TRUE(rb.stalled);
    EXPECT_EQ(rb.output_bytes, 99u);
    EXPECT_EQ(rb.duration, r.duration);
}

}  // namespace
}  // namespace crcrd::exec::slurm
