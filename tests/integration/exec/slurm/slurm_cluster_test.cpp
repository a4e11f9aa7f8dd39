// A real single-node Slurm cluster (tests/support/slurm_cluster.hpp): the node with its two
// aiu, a batch job as crcrd submits it (its output, its environment under --export=NONE, its
// jobcomp record), a failing job, a job waiting for aiu, and a node taken down under a job.
#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include "support/slurm_cluster.hpp"
#include "support/temp_dir.hpp"

namespace crcrd {
namespace {

using namespace std::chrono_literals;

#define SKIP_WITHOUT_SLURM()                                                           \
    do {                                                                               \
        if (auto why = SlurmCluster::skip_reason(); !why.empty()) GTEST_SKIP() << why; \
    } while (0)

std::string read_text(const std::filesystem::path& p) {
    std::ifstream in(p);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

/// The value of KEY=value in a `scontrol show job -o` or jobcomp line (values without
/// spaces only: not Comment=, Command=).
std::string field(const std::string& line, const std::string& key) {
    std::smatch m;
    if (std::regex_search(line, m, std::regex("(^| )" + key + "=(\\S*)"))) return m[2];
    return "";
}

/// Polls with a pause between polls: each one is a Slurm client process and an RPC.
bool poll(const std::function<bool()>& cond, std::chrono::milliseconds timeout = 60s) {
    return eventually(
        [&] {
            if (cond()) return true;
            std::this_thread::sleep_for(200ms);
            return false;
        },
        timeout);
}

class Slurm {
  public:
    explicit Slurm(const std::filesystem::path& dir) : cluster(dir), script(dir / "run.sh") {
        write_file(script, "#!/bin/sh\nexec \"$@\"\n", 0755);
    }

    /// sbatch as crcrd runs it; returns the job id (what --parsable prints).
    std::string submit(const std::string& name, const std::vector<std::string>& command,
                       const std::vector<std::string>& options = {"--gres=aiu:1"},
                       const std::vector<std::string>& env = {}) {
        std::vector<std::string> argv{"env"};
        argv.insert(argv.end(), env.begin(), env.end());
        argv.insert(argv.end(), {"sbatch", "--parsable", "--export=NONE", "--time=1",
                                 "--no-requeue", "--job-name=" + name, "--comment=crcrd job_id=7",
                                 "--output=" + (cluster.dir() / (name + ".out")).string()});
        argv.insert(argv.end(), options.begin(), options.end());
        argv.push_back(script.string());
        argv.insert(argv.end(), command.begin(), command.end());
        std::string out;
        int rc = cluster.run(argv, &out);
        EXPECT_EQ(rc, 0) << out;
        EXPECT_TRUE(std::regex_match(out, std::regex("[0-9]+\n")))
            << "sbatch --parsable printed: " << out;
        return out.substr(0, out.find('\n'));
    }

    std::string show_job(const std::string& id) {
        std::string out;
        cluster.run({"scontrol", "show", "job", "-o", id}, &out);
        return out;
    }

    std::string state(const std::string& id) { return field(show_job(id), "JobState"); }

    /// jobcomp.txt's line for the job, "" until it is written.
    std::string jobcomp_line(const std::string& id) {
        std::istringstream in(read_text(cluster.jobcomp_path()));
        for (std::string l; std::getline(in, l);)
            if (l.rfind("JobId=" + id + " ", 0) == 0) return l;
        return "";
    }

    SlurmCluster cluster;
    std::filesystem::path script;
};

TEST(SlurmCluster, NodeComesUpIdleWithTwoAiu) {
    SKIP_WITHOUT_SLURM();
    TempDir dir;
    SlurmCluster c(dir.path());
    std::string out;
    // Field:0 prints the field unpadded and untruncated; "|" after the width is the suffix.
    ASSERT_EQ(c.run({"sinfo", "--noheader", "-N", "-p", c.partition(), "-O",
                     "NodeHost:0|,StateLong:0|,Gres:0|,GresUsed:0"},
                    &out),
              0)
        << out;
    EXPECT_EQ(out, c.node() + "|idle|aiu:2|aiu:0\n");
    ASSERT_EQ(c.run({"scontrol", "show", "node", "-o", c.node()}, &out), 0) << out;
    EXPECT_NE(out.find(" Gres=aiu:2 "), std::string::npos) << out;
    EXPECT_NE(out.find(" State=IDLE "), std::string::npos) << out;
    EXPECT_NE(out.find(" Partitions=" + c.partition() + "," + c.build_partition() + " "),
              std::string::npos)
        << out;
    // The clients find the cluster only through SLURM_CONF.
    EXPECT_EQ(c.env(), std::vector<std::string>{"SLURM_CONF=" + c.conf_path().string()});
    EXPECT_EQ(c.run({"scontrol", "show", "partition", "spyre"}, &out), 0) << out;
    EXPECT_NE(c.run({"scontrol", "show", "partition", "nosuch"}, &out), 0);
    EXPECT_EQ(out, "Partition nosuch not found\n");
}

TEST(SlurmCluster, BatchJobRunsItsCommandUnderExportNoneAndIsRecorded) {
    SKIP_WITHOUT_SLURM();
    TempDir dir;
    Slurm s(dir.path());
    auto id = s.submit("x", {"/usr/bin/env"}, {"--gres=aiu:1"}, {"CRCRD_SUBMITTER_ONLY=leak"});
    ASSERT_TRUE(poll([&] { return s.state(id) == "COMPLETED"; }))
        << s.show_job(id) << s.cluster.log_tail();

    auto line = s.show_job(id);
    EXPECT_EQ(field(line, "ExitCode"), "0:0") << line;
    EXPECT_EQ(field(line, "JobName"), "x") << line;
    EXPECT_EQ(field(line, "NodeList"), s.cluster.node()) << line;
    EXPECT_EQ(field(line, "TresPerNode"), "gres:aiu:1") << line;
    EXPECT_NE(line.find(" Comment=crcrd job_id=7 "), std::string::npos) << line;

    // The command's output lands in --output once the job is COMPLETED.
    auto env = read_text(dir.path() / "x.out");
    EXPECT_NE(env.find("SLURM_JOB_ID=" + id + "\n"), std::string::npos) << env;
    EXPECT_NE(env.find("SLURM_JOB_NAME=x\n"), std::string::npos) << env;
    EXPECT_NE(env.find("SLURM_JOB_PARTITION=spyre\n"), std::string::npos) << env;
    EXPECT_NE(env.find("SLURM_CONF=" + s.cluster.conf_path().string() + "\n"), std::string::npos)
        << env;
    // --export=NONE: nothing from sbatch's environment; instead slurmd loads root's login
    // environment (SLURM_GET_USER_ENV=1, `su - root`): HOME, SHELL, PATH from the profile.
    EXPECT_EQ(env.find("CRCRD_SUBMITTER_ONLY"), std::string::npos) << env;
    EXPECT_NE(env.find("SLURM_EXPORT_ENV=NONE\n"), std::string::npos) << env;
    EXPECT_NE(env.find("SLURM_GET_USER_ENV=1\n"), std::string::npos) << env;
    EXPECT_NE(env.find("HOME=/root\n"), std::string::npos) << env;
    // No plugin for gres/aiu: Slurm names no device in the job's environment.
    EXPECT_EQ(env.find("CUDA_VISIBLE_DEVICES"), std::string::npos) << env;

    std::string rec;
    ASSERT_TRUE(poll([&] { return !(rec = s.jobcomp_line(id)).empty(); }, 10s))
        << read_text(s.cluster.jobcomp_path());
    EXPECT_EQ(field(rec, "Name"), "x") << rec;
    EXPECT_EQ(field(rec, "JobState"), "COMPLETED") << rec;
    EXPECT_EQ(field(rec, "ExitCode"), "0:0") << rec;
    EXPECT_EQ(field(rec, "NodeList"), s.cluster.node()) << rec;
}

TEST(SlurmCluster, FailingCommandMakesAFailedJobWithItsExitCode) {
    SKIP_WITHOUT_SLURM();
    TempDir dir;
    Slurm s(dir.path());
    auto id = s.submit("fails", {"sh", "-c", "echo about to fail; exit 3"}, {});
    ASSERT_TRUE(poll([&] { return s.state(id) == "FAILED"; })) << s.show_job(id);
    auto line = s.show_job(id);
    EXPECT_EQ(field(line, "ExitCode"), "3:0") << line;
    EXPECT_EQ(field(line, "Reason"), "NonZeroExitCode") << line;
    EXPECT_EQ(read_text(dir.path() / "fails.out"), "about to fail\n");
    std::string rec;
    ASSERT_TRUE(poll([&] { return !(rec = s.jobcomp_line(id)).empty(); }, 10s));
    EXPECT_EQ(field(rec, "JobState"), "FAILED") << rec;
    EXPECT_EQ(field(rec, "ExitCode"), "3:0") << rec;
}

TEST(SlurmCluster, JobWaitsForTheAiuHeldByAnotherAndRunsWhenThatOneIsCancelled) {
    SKIP_WITHOUT_SLURM();
    TempDir dir;
    Slurm s(dir.path());
    auto holder =
        s.submit("holder", {"sh", "-c", "echo started; exec sleep 600"}, {"--gres=aiu:2"});
    // RUNNING comes first: the controller has allocated the node, but slurmd still loads
    // root's login environment (--export=NONE) for about a second before the command starts.
    // A job cancelled in that window never runs: CANCELLED, ExitCode=0:0, no output file.
    ASSERT_TRUE(poll([&] { return s.state(holder) == "RUNNING"; })) << s.show_job(holder);
    ASSERT_TRUE(poll([&] { return read_text(dir.path() / "holder.out") == "started\n"; }, 20s));
    std::string out;
    s.cluster.run({"sinfo", "--noheader", "-N", "-p", "spyre", "-O", "GresUsed:0"}, &out);
    EXPECT_EQ(out, "aiu:2\n");

    auto waiter = s.submit("waiter", {"true"}, {"--gres=aiu:1"});
    ASSERT_TRUE(poll([&] { return field(s.show_job(waiter), "Reason") == "Resources"; }))
        << s.show_job(waiter);
    EXPECT_EQ(s.state(waiter), "PENDING");
    s.cluster.run({"squeue", "--noheader", "--name=waiter", "--format=%i"}, &out);
    EXPECT_EQ(out, waiter + "\n");
    s.cluster.run({"squeue", "-h", "-j", waiter, "-o", "%T %r %N"}, &out);
    EXPECT_EQ(out, "PENDING Resources \n");

    ASSERT_EQ(s.cluster.run({"scancel", holder}, &out), 0) << out;
    ASSERT_TRUE(poll([&] { return s.state(holder) == "CANCELLED"; }, 10s)) << s.show_job(holder);
    EXPECT_EQ(field(s.show_job(holder), "ExitCode"), "0:15");  // killed by SIGTERM
    EXPECT_NE(read_text(dir.path() / "holder.out")
                  .find("*** JOB " + holder + " ON " + s.cluster.node() + " CANCELLED AT "),
              std::string::npos)
        << read_text(dir.path() / "holder.out");
    ASSERT_TRUE(poll([&] { return s.state(waiter) == "COMPLETED"; })) << s.show_job(waiter);
    std::string rec;
    ASSERT_TRUE(poll([&] { return !(rec = s.jobcomp_line(holder)).empty(); }, 10s));
    EXPECT_EQ(field(rec, "JobState"), "CANCELLED") << rec;
}

TEST(SlurmCluster, NodeSetDownEndsItsRunningJobAsNodeFailAndResumeBringsItBack) {
    SKIP_WITHOUT_SLURM();
    TempDir dir;
    Slurm s(dir.path());
    auto id = s.submit("doomed", {"sh", "-c", "echo started; exec sleep 600"});
    ASSERT_TRUE(poll([&] { return read_text(dir.path() / "doomed.out") == "started\n"; }, 20s))
        << s.show_job(id);
    EXPECT_EQ(s.state(id), "RUNNING");

    s.cluster.set_node_state("down", "test");
    ASSERT_TRUE(poll([&] { return s.state(id) == "NODE_FAIL"; }, 10s)) << s.show_job(id);
    EXPECT_EQ(field(s.show_job(id), "Reason"), "NodeDown");
    EXPECT_EQ(s.cluster.node_state(), "down");

    auto waiting = s.submit("later", {"true"}, {});
    // The reason depends on which scheduler looked last: the main one says
    // ReqNodeNotAvail,_UnavailableNodes:<node>, backfill says Nodes_required_for_job_are_DOWN,...
    std::set<std::string> reasons;
    ASSERT_TRUE(poll([&] {
        reasons.insert(field(s.show_job(waiting), "Reason"));
        return reasons.count("ReqNodeNotAvail,_UnavailableNodes:" + s.cluster.node()) ||
               reasons.count(
                   "Nodes_required_for_job_are_DOWN,_DRAINED_or_reserved_for_jobs_in_higher_"
                   "priority_partitions");
    })) << s.show_job(waiting);
    EXPECT_EQ(s.state(waiting), "PENDING");

    s.cluster.set_node_state("resume");
    EXPECT_TRUE(s.cluster.wait_node_idle(30s)) << s.cluster.node_state();
    ASSERT_TRUE(poll([&] { return s.state(waiting) == "COMPLETED"; })) << s.show_job(waiting);
    std::string rec;
    ASSERT_TRUE(poll([&] { return !(rec = s.jobcomp_line(id)).empty(); }, 10s));
    EXPECT_EQ(field(rec, "JobState"), "NODE_FAIL") << rec;
    EXPECT_NE(read_text(dir.path() / "doomed.out").find("DUE TO NODE FAILURE"), std::string::npos);
}

}  // namespace
}  // namespace crcrd
