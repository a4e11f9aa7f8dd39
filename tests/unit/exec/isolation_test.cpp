// The job environment and the bubblewrap sandbox, with real processes: the command sees its
// own environment only, and cannot read the daemon's configuration, secrets, database or
// /proc, while its job directory is writable.
#include <gtest/gtest.h>

#include <unistd.h>
#include <algorithm>
#include <optional>

#include <set>
#include <sstream>

#include "crcrd/core/files.hpp"
#include "crcrd/exec/job_env.hpp"
#include "crcrd/exec/supervisor.hpp"
#include "support/ci_script.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"

namespace crcrd::exec {
namespace {

JobContext context(const std::filesystem::path& job_dir) {
    JobContext c;
    c.run_id = 12;
    c.job_id = 5;
    c.attempt = 2;
    c.tier = "smoke";
    c.pytorch_sha = "ec26c3e57ca3a959ca5aad62de7213c562f8c821";
    c.pytorch_dir = job_dir.parent_path() / "pytorch";
    c.pr = 2;
    c.slot = "spyre-0";
    c.job_dir = job_dir;
    c.tests_file = job_dir / "tests.txt";
    c.junit_dir = job_dir / "junit";
    return c;
}

TEST(JobEnv, ExactlyTheContractsVariables) {
    auto env = job_environment(context("/w/job-5"),
                               {{"PIP_CACHE_DIR", "/cache"}, {"SPYRE_DEVICES", "all"}},
                               {{"SPYRE_DEVICES", "0"}, {"CRCR_TIER", "forged"}});
    std::set<std::string> got(env.begin(), env.end());
    std::set<std::string> want = {"PATH=/usr/local/bin:/usr/bin:/bin",
                                  "HOME=/w/job-5",
                                  "LANG=C.UTF-8",
                                  "PIP_CACHE_DIR=/cache",
                                  "SPYRE_DEVICES=0",
                                  "CRCR_PYTORCH_SHA=ec26c3e57ca3a959ca5aad62de7213c562f8c821",
                                  "CRCR_PYTORCH_DIR=/w/pytorch",
                                  "CRCR_TIER=smoke",
                                  "CRCR_TESTS_FILE=/w/job-5/tests.txt",
                                  "CRCR_JUNIT_DIR=/w/job-5/junit",
                                  "CRCR_RUN_ID=12",
                                  "CRCR_JOB_ID=5",
                                  "CRCR_ATTEMPT=2",
                                  "CRCR_SLOT=spyre-0",
                                  "CRCR_PR=2"};
    EXPECT_EQ(got, want);
    auto ctx = context("/w/job-5");
    ctx.pr.reset();
    ctx.pytorch_dir.reset();
    auto no_pr = job_environment(ctx, {}, {});
    for (const auto& e : no_pr) {
        EXPECT_NE(e.rfind("CRCR_PR=", 0), 0u);
        EXPECT_NE(e.rfind("CRCR_PYTORCH_DIR=", 0), 0u);
    }
}

TEST(JobEnv, TestsFileExpandsThePytorchDir) {
    TempDir dir;
    auto ctx = context(dir.path() / "job");
    std::filesystem::create_directories(ctx.job_dir);
    ASSERT_TRUE(
        write_tests_file(ctx, {"tests/test_import.py", "${PYTORCH_DIR}/test/test_ops.py::TestX"}));
    EXPECT_EQ(read_file(ctx.tests_file).value(),
              "tests/test_import.py\n" + ctx.pytorch_dir->string() + "/test/test_ops.py::TestX\n");
    EXPECT_TRUE(std::filesystem::is_directory(ctx.junit_dir));
}

class Sandbox : public ::testing::Test {
  protected:
    void SetUp() override {
        if (auto why = bwrap_unavailable(); !why.empty()) GTEST_SKIP() << why;
        // A daemon's layout: config with a secret, state with a database, work root with jobs.
        write_file(root.path() / "etc" / "crcrd.yaml", "secret-config\n");
        write_file(root.path() / "etc" / "webhook.secret", "secret-webhook\n", 0600);
        write_file(root.path() / "keys" / "gh.token", "secret-token\n", 0600);
        write_file(root.path() / "state" / "crcrd.db", "secret-db\n");
        write_file(root.path() / "state" / "work" / "pytorch" / "README", "checkout\n");
        job_dir = root.path() / "state" / "work" / "job-5";
        std::filesystem::create_directories(job_dir);
    }

    ProcessResult run_in_sandbox(const std::string& script,
                                 std::optional<std::filesystem::path> command_dir = {}) {
        SandboxSpec s;
        s.command_dir = command_dir;
        s.hidden_dirs = {root.path() / "etc", root.path() / "state"};
        s.hidden_files = {root.path() / "keys" / "gh.token"};
        s.job_dir = job_dir;
        s.pytorch_dir = root.path() / "state" / "work" / "pytorch";
        ProcessSpec p;
        p.argv = bwrap_prefix(s);
        p.argv.insert(p.argv.end(), {"/bin/sh", "-c", script});
        p.env = {"PATH=/usr/bin:/bin", "HOME=" + job_dir.string()};
        p.cwd = job_dir;
        p.log_path = root.path() / "job.log";
        p.timeout = std::chrono::seconds(60);
        auto r = run_supervised(p);
        EXPECT_TRUE(r) << (r ? "" : r.error().message);
        return r ? *r : ProcessResult{};
    }
    std::string log() { return read_file(root.path() / "job.log").value(); }

    TempDir root;
    std::filesystem::path job_dir;
};

TEST_F(Sandbox, SecretsConfigDatabaseAndDaemonProcAreInvisible) {
    const std::string daemon_pid = std::to_string(::getpid());
    auto r =
        run_in_sandbox("for f in " + (root.path() / "etc" / "crcrd.yaml").string() + " " +
                       (root.path() / "etc" / "webhook.secret").string() + " " +
                       (root.path() / "keys" / "gh.token").string() + " " +
                       (root.path() / "state" / "crcrd.db").string() + " /proc/" + daemon_pid +
                       "/environ; do "
                       "cat $f 2>/dev/null; echo \"[$f: $?]\"; done; "
                       "echo pid=$$; echo written > out.txt; cat out.txt; cat " +
                       (root.path() / "state" / "work" / "pytorch" / "README").string() +
                       "; touch " + (root.path() / "state" / "work" / "pytorch" / "x").string() +
                       " 2>/dev/null || echo checkout-read-only");
    EXPECT_EQ(r.exit_code, 0) << log();
    auto text = log();
    for (const char* secret : {"secret-config", "secret-webhook", "secret-token", "secret-db"}) {
        EXPECT_EQ(text.find(secret), std::string::npos) << secret << " leaked:\n" << text;
    }
    EXPECT_EQ(text.find("CRCRD"),
              std::string::npos);  // nothing of the daemon's /proc/<pid>/environ
    EXPECT_NE(text.find("pid=2\n"), std::string::npos)
        << text;  // its own pid namespace (bwrap is 1)
    EXPECT_NE(text.find("written\n"), std::string::npos) << text;
    EXPECT_NE(text.find("checkout\n"), std::string::npos) << text;
    EXPECT_NE(text.find("checkout-read-only"), std::string::npos) << text;
    EXPECT_EQ(read_file(job_dir / "out.txt").value(),
              "written\n");  // the job directory is the real one
}

TEST_F(Sandbox, TheCommandsOwnFolderCannotBringAHiddenFileBack) {
    // A command installed beside a secret: its folder is bound (it may lie under /tmp), and
    // the secret in it stays masked because the masks come after every bind.
    write_file(root.path() / "keys" / "run.sh",
               "#!/bin/sh\ncat " + (root.path() / "keys" / "gh.token").string() +
                   "; echo \"[token: $?]\"\n",
               0755);
    auto r = run_in_sandbox((root.path() / "keys" / "run.sh").string(), root.path() / "keys");
    EXPECT_EQ(r.exit_code, 0) << log();
    EXPECT_EQ(log().find("secret-token"), std::string::npos) << log();
    EXPECT_NE(log().find("[token: "), std::string::npos)
        << log();  // the command ran (the mask reads empty or not at all)
}

TEST(SandboxArgs, BindsComeBeforeMasksAndRootDropsToAnAccount) {
    SandboxSpec s;
    s.hidden_dirs = {"/etc/crcrd"};
    s.hidden_files = {"/opt/ci/token"};
    s.command_dir = std::filesystem::path("/opt/ci");
    s.job_dir = "/var/lib/crcrd/work/jobs/7";
    s.no_network = true;
    s.run_as = SandboxSpec::Account{65534, 65534};
    auto a = bwrap_prefix(s);
    auto at = [&](const std::string& v, std::size_t from = 0) {
        return static_cast<std::size_t>(
            std::find(a.begin() + static_cast<std::ptrdiff_t>(from), a.end(), v) - a.begin());
    };
    EXPECT_LT(at("--unshare-net"), a.size());
    EXPECT_LT(at("--new-session"), a.size());
    EXPECT_EQ(at("--unshare-user"), a.size());   // root: bubblewrap mounts, setpriv drops
    EXPECT_LT(at("/opt/ci"), at("/etc/crcrd"));  // the command's folder before the masks
    EXPECT_LT(at("/var/lib/crcrd/work/jobs/7"), at("/opt/ci/token"));  // the file masks last
    EXPECT_LT(at("setpriv"), a.size());
    EXPECT_LT(at("--reuid=65534", at("setpriv")), a.size());
    EXPECT_LT(at("--bounding-set=-all", at("setpriv")), a.size());
    EXPECT_EQ(a.back(), "--");
    s.run_as.reset();  // not root: a user namespace without nested ones
    auto b = bwrap_prefix(s);
    EXPECT_NE(std::find(b.begin(), b.end(), "--unshare-user"), b.end());
    EXPECT_NE(std::find(b.begin(), b.end(), "--disable-userns"), b.end());
    EXPECT_EQ(std::find(b.begin(), b.end(), "setpriv"), b.end());
}

TEST_F(Sandbox, ATimeoutEndsEvenProcessesThatLeftTheGroup) {
    // setsid takes the sleeper out of the process group; the pid namespace still ends with
    // the sandbox when the supervisor kills it.
    SandboxSpec s;
    s.job_dir = job_dir;
    ProcessSpec p;
    p.argv = bwrap_prefix(s);
    p.argv.insert(p.argv.end(), {"/bin/sh", "-c", "setsid sleep 313.7 & echo started; sleep 300"});
    p.env = {"PATH=/usr/bin:/bin"};
    p.cwd = job_dir;
    p.log_path = root.path() / "job.log";
    p.timeout = std::chrono::milliseconds(500);
    p.kill_grace = std::chrono::milliseconds(500);
    auto r = run_supervised(p);
    ASSERT_TRUE(r);
    EXPECT_TRUE(r->timed_out);
    EXPECT_NE(log().find("started"), std::string::npos);
    std::string out;
    EXPECT_TRUE(eventually(
        [&] {
            return run_command({"pgrep", "-f", "sleep 313.7"}, &out) == 1;
        },
        std::chrono::seconds(10)))
        << "still running: " << out;
}

}  // namespace
}  // namespace crcrd::exec
