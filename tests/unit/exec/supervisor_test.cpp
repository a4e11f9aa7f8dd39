// Real child processes under the supervisor.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <set>
#include <sstream>

#include "crcrd/core/files.hpp"
#include "crcrd/exec/supervisor.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"

namespace crcrd::exec {
namespace {

using namespace std::chrono_literals;

class SupervisorTest : public ::testing::Test {
  protected:
    ProcessSpec spec(const std::string& script) {
        ProcessSpec s;
        s.argv = {"/bin/sh", "-c", script};
        s.env = {"PATH=/usr/bin:/bin", "HOME=" + dir.path().string(), "LANG=C.UTF-8"};
        s.cwd = dir.path();
        s.log_path = dir.path() / "job.log";
        s.timeout = 60s;
        s.stall_timeout = 60s;
        s.kill_grace = 2s;
        return s;
    }
    ProcessResult run(const ProcessSpec& s) {
        auto r = run_supervised(s);
        EXPECT_TRUE(r) << (r ? "" : r.error().message);
        return r ? *r : ProcessResult{};
    }
    std::string log() { return read_file(dir.path() / "job.log", 256u << 20).value(); }

    TempDir dir;
};

TEST_F(SupervisorTest, ExitCodesSignalsAndOutput) {
    auto ok = run(spec("echo hello; echo to-stderr >&2; pwd"));
    EXPECT_EQ(ok.exit_code, 0);
    EXPECT_FALSE(ok.signal);
    EXPECT_EQ(log(), "hello\nto-stderr\n" + dir.path().string() + "\n");

    auto failed = run(spec("exit 3"));
    EXPECT_EQ(failed.exit_code, 3);

    auto crashed = run(spec("kill -SEGV $$"));
    EXPECT_FALSE(crashed.exit_code);
    EXPECT_EQ(crashed.signal, SIGSEGV);
}

TEST_F(SupervisorTest, ExactlyTheGivenEnvironment) {
    ::setenv("CRCRD_DAEMON_ONLY", "secret-value", 1);
    auto s = spec("");
    s.argv = {"env"};  // looked up in the job's PATH
    s.env = {"PATH=/usr/bin:/bin", "CRCR_TIER=smoke", "CRCR_RUN_ID=7"};
    auto r = run(s);
    EXPECT_EQ(r.exit_code, 0);
    std::set<std::string> lines;
    std::istringstream in(log());
    for (std::string l; std::getline(in, l);) lines.insert(l);
    EXPECT_EQ(lines,
              (std::set<std::string>{"PATH=/usr/bin:/bin", "CRCR_TIER=smoke", "CRCR_RUN_ID=7"}));
    EXPECT_EQ(log().find("secret-value"), std::string::npos);
}

TEST_F(SupervisorTest, StallTimeoutAndTierTimeoutEndTheGroup) {
    auto s = spec("echo started; sleep 30");
    s.stall_timeout = 300ms;
    auto stalled = run(s);
    EXPECT_TRUE(stalled.stalled);
    EXPECT_FALSE(stalled.timed_out);
    EXPECT_EQ(stalled.signal, SIGTERM);

    auto t = spec("while true; do echo tick; sleep 0.05; done");
    t.timeout = 500ms;
    auto timed = run(t);
    EXPECT_TRUE(timed.timed_out);
    EXPECT_FALSE(timed.stalled);
    EXPECT_EQ(timed.signal, SIGTERM);
    EXPECT_NE(log().find("tick"), std::string::npos);
}

TEST_F(SupervisorTest, SigkillAfterTheGraceWhenSigtermIsIgnored) {
    auto s = spec("trap '' TERM; while :; do echo .; sleep 0.05; done");
    s.timeout = 300ms;
    s.kill_grace = 200ms;
    auto r = run(s);
    EXPECT_TRUE(r.timed_out);
    EXPECT_EQ(r.signal, SIGKILL);
}

TEST_F(SupervisorTest, AGrandchildLeftBehindIsKilled) {
    auto r = run(spec("(sleep 300; echo late > late.txt) & echo $! > grandchild.pid; exit 0"));
    EXPECT_EQ(r.exit_code, 0);
    pid_t gc = std::stoi(trim(read_file(dir.path() / "grandchild.pid").value()));
    EXPECT_TRUE(eventually([&] { return ::kill(gc, 0) != 0 && errno == ESRCH; }, 10s))
        << "grandchild " << gc << " survived";
}

TEST_F(SupervisorTest, FiftyMegabytesOfOutputKeepHeadAndTail) {
    auto s =
        spec("echo FIRST-LINE; head -c 52428800 /dev/zero | tr '\\\\0' 'a'; echo; echo LAST-LINE");
    s.max_log_bytes = 1 << 20;
    auto r = run(s);
    EXPECT_EQ(r.exit_code, 0);
    EXPECT_TRUE(r.log_truncated);
    EXPECT_EQ(r.output_bytes, 52428800u + 11 + 1 + 10);
    auto text = log();
    EXPECT_LE(text.size(), (1u << 20) + 100);
    EXPECT_EQ(text.rfind("FIRST-LINE\n", 0), 0u);
    EXPECT_EQ(text.substr(text.size() - 10), "LAST-LINE\n");
    EXPECT_NE(text.find("bytes of output omitted"), std::string::npos);
}

TEST_F(SupervisorTest, ADedicatedUserCannotReadTheDaemonsFiles) {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root to change user";
    write_file(dir.path() / "secret", "top-secret\n", 0600);
    std::filesystem::permissions(dir.path(), std::filesystem::perms::all);  // the job may enter
    auto s = spec("id -u; cat " + (dir.path() / "secret").string() +
                  " 2>/dev/null || echo denied; cat /proc/" + std::to_string(::getpid()) +
                  "/environ >/dev/null 2>&1 || echo proc-denied");
    s.uid = 65534;  // nobody
    s.gid = 65534;
    auto r = run(s);
    EXPECT_EQ(r.exit_code, 0);
    EXPECT_EQ(log(), "65534\ndenied\nproc-denied\n") << log();
}

TEST_F(SupervisorTest, CancelAndStartFailures) {
    std::atomic<bool> cancel{true};
    auto s = spec("sleep 30");
    auto r = run_supervised(s, &cancel);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->signal, SIGTERM);

    auto missing = spec("");
    missing.argv = {"no-such-program-here"};
    auto m = run_supervised(missing);
    ASSERT_FALSE(m);
    EXPECT_NE(m.error().message.find("not found"), std::string::npos);
}

// The daemon's signal handlers (Asio's: a write to a self-pipe the forked child shares) must
// never run in a job's process: a cancellation's SIGTERM that reached the child before its init
// had its own handlers was handed to the daemon, which stopped (found under load by
// OpenApiTest: "signal 15: draining" right after a cancel).
int g_signal_pipe[2] = {-1, -1};
extern "C" void note_signal(int sig) {
    unsigned char b = static_cast<unsigned char>(sig);
    (void)!::write(g_signal_pipe[1], &b, 1);
}

TEST_F(SupervisorTest, ACancellationsSignalNeverReachesTheDaemonsOwnHandler) {
    ASSERT_EQ(::pipe2(g_signal_pipe, O_NONBLOCK | O_CLOEXEC), 0);
    struct sigaction sa {
    }, old{};
    sa.sa_handler = note_signal;
    sigemptyset(&sa.sa_mask);
    ::sigaction(SIGTERM, &sa, &old);
    // Cancelled from the start: the supervisor sends SIGTERM as soon as the child exists,
    // inside the window between fork and the init's handlers.
    auto s = spec("sleep 30");
    s.kill_grace = 50ms;
    for (int i = 0; i < 30; ++i) {
        std::atomic<bool> cancel{true};
        auto r = run_supervised(s, &cancel);
        ASSERT_TRUE(r);
    }
    ::sigaction(SIGTERM, &old, nullptr);
    unsigned char b = 0;
    const auto n = ::read(g_signal_pipe[0], &b, 1);
    ::close(g_signal_pipe[0]);
    ::close(g_signal_pipe[1]);
    EXPECT_EQ(n, -1) << "the daemon's handler saw signal " << int(b);
}

}  // namespace
}  // namespace crcrd::exec
