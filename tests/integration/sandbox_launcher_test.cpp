// The sandbox launcher (sandbox_launcher.hpp) between two real crcrd processes: the launcher
// socket-activated by systemd's own systemd-socket-activate (Accept=yes on SOCK_SEQPACKET, as
// crcrd-sandbox.socket does it), the client as the job's init starts it, bubblewrap between.
#include <gtest/gtest.h>
#include <signal.h>

#include <fstream>

#include "support/ci_script.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"

namespace crcrd {
namespace {

std::string slurp(const std::filesystem::path& p) {
    std::ifstream in(p);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

/// Whether a process whose command line holds `marker` runs on this host.
bool running_with(const std::string& marker) {
    for (const auto& e : std::filesystem::directory_iterator("/proc")) {
        const auto name = e.path().filename().string();
        if (name.find_first_not_of("0123456789") != std::string::npos) continue;
        std::string cmd = slurp(e.path() / "cmdline");
        std::replace(cmd.begin(), cmd.end(), '\0', ' ');
        if (cmd.find(marker) != std::string::npos &&
            cmd.find("--sandbox-connect") == std::string::npos)
            return true;
    }
    return false;
}

class SandboxLauncherTest : public ::testing::Test {
  protected:
    void SetUp() override {
        if (auto why = bwrap_unavailable(); !why.empty()) GTEST_SKIP() << why;
        m_launcher = std::make_unique<Process>(
            std::vector<std::string>{"systemd-socket-activate", "--seqpacket", "--accept", "-l",
                                     socket(), CRCRD_BIN, "--sandbox-serve", "/usr/bin/bwrap"},
            m_dir.path() / "launcher.log");
        ASSERT_TRUE(eventually([&] { return std::filesystem::exists(socket()); }))
            << slurp(m_dir.path() / "launcher.log");
    }

    std::string socket() const { return (m_dir.path() / "sandbox.sock").string(); }

    /// The client, as the job's init would exec it, running `command` in a minimal sandbox.
    std::unique_ptr<Process> client(const std::vector<std::string>& command, const std::string& log,
                                    const std::vector<std::string>& env = {}) {
        std::vector<std::string> argv = {CRCRD_BIN,
                                         "--sandbox-connect",
                                         socket(),
                                         "--",
                                         "bwrap",
                                         "--ro-bind",
                                         "/",
                                         "/",
                                         "--dev",
                                         "/dev",
                                         "--proc",
                                         "/proc",
                                         "--unshare-pid",
                                         "--die-with-parent",
                                         "--bind",
                                         m_dir.path().string(),
                                         m_dir.path().string(),
                                         "--"};
        argv.insert(argv.end(), command.begin(), command.end());
        return std::make_unique<Process>(argv, m_dir.path() / log, env);
    }

    TempDir m_dir;
    std::unique_ptr<Process> m_launcher;
};

TEST_F(SandboxLauncherTest, TheCommandRunsWithTheClientsOutputEnvironmentFolderAndExitCode) {
    auto c =
        client({"/bin/sh", "-c", "echo pid=$$ mark=$CRCRD_MARK; echo to-stderr >&2; pwd; exit 3"},
               "client.log", {"CRCRD_MARK=from-the-client"});
    EXPECT_EQ(c->wait_for(std::chrono::seconds(30)), 3);
    const auto out = slurp(m_dir.path() / "client.log");
    // Its own pid namespace (bubblewrap's), the client's environment, both streams, its folder.
    EXPECT_NE(out.find("mark=from-the-client"), std::string::npos) << out;
    EXPECT_NE(out.find("to-stderr"), std::string::npos) << out;
    EXPECT_NE(out.find(std::filesystem::current_path().string()), std::string::npos) << out;
    EXPECT_EQ(out.find("pid=1 "), std::string::npos) << out;  // bwrap's init is 1, the command 2
    EXPECT_NE(out.find("pid=2 "), std::string::npos) << out;
}

TEST_F(SandboxLauncherTest, SIGTERMToTheClientEndsTheCommandAndTheClientEndsByIt) {
    const auto ready = m_dir.path() / "ready";
    auto c =
        client({"/bin/sh", "-c", "touch " + ready.string() + "; exec sleep 61.5"}, "client.log");
    ASSERT_TRUE(eventually([&] { return std::filesystem::exists(ready); }))
        << slurp(m_dir.path() / "client.log");
    ASSERT_TRUE(running_with("sleep 61.5"));
    c->signal(SIGTERM);
    EXPECT_EQ(c->wait_for(std::chrono::seconds(30)), 128 + SIGTERM)
        << slurp(m_dir.path() / "client.log");
    EXPECT_TRUE(eventually([] { return !running_with("sleep 61.5"); }));
}

TEST_F(SandboxLauncherTest, AKilledClientTakesItsCommandWithIt) {
    const auto ready = m_dir.path() / "ready";
    // The command ignores SIGTERM and leaves a child behind: neither outlives the client.
    auto c = client({"/bin/sh", "-c",
                     "trap '' TERM; sleep 62.5 & touch " + ready.string() + "; exec sleep 62.25"},
                    "client.log");
    ASSERT_TRUE(eventually([&] { return std::filesystem::exists(ready); }))
        << slurp(m_dir.path() / "client.log");
    ASSERT_TRUE(running_with("sleep 62.25"));
    c->signal(SIGKILL);
    EXPECT_EQ(c->wait_for(std::chrono::seconds(30)), 128 + SIGKILL);
    EXPECT_TRUE(
        eventually([] { return !running_with("sleep 62.25") && !running_with("sleep 62.5"); }));
}

TEST_F(SandboxLauncherTest, TheLauncherStartsNothingButBubblewrap) {
    const auto made = m_dir.path() / "made-by-sh";
    auto c = std::make_unique<Process>(
        std::vector<std::string>{CRCRD_BIN, "--sandbox-connect", socket(), "--", "/bin/sh", "-c",
                                 "touch " + made.string()},
        m_dir.path() / "client.log");
    EXPECT_EQ(c->wait_for(std::chrono::seconds(30)), 125);
    const auto out = slurp(m_dir.path() / "client.log");
    EXPECT_NE(out.find("refused: this launcher starts only bubblewrap, not /bin/sh"),
              std::string::npos)
        << out;
    EXPECT_FALSE(std::filesystem::exists(made));
}

TEST_F(SandboxLauncherTest, NoLauncherIsAClearError) {
    Process c({CRCRD_BIN, "--sandbox-connect", (m_dir.path() / "absent.sock").string(), "--",
               "bwrap", "true"},
              m_dir.path() / "client.log");
    EXPECT_EQ(c.wait_for(std::chrono::seconds(30)), 125);
    const auto out = slurp(m_dir.path() / "client.log");
    EXPECT_NE(out.find("cannot reach the sandbox launcher at"), std::string::npos) << out;
    EXPECT_NE(out.find("crcrd-sandbox.socket"), std::string::npos) << out;
}

}  // namespace
}  // namespace crcrd
