// Hostile tests against the real daemon (docs/security.md, "What a test process can reach"): a
// test that tries to undo its sandbox as root, fills its JUnit folder with links, fifos, huge and
// countless files, forks away, or outlives its job; a second daemon on the same database;
// children that would keep the daemon's sockets; health rechecks that would pile up threads.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstring>

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

constexpr const char* k_rules =
    "tiers:\n"
    "  - {name: only, always: true, tests: [t1]}\n"
    "rules: []\n"
    "unmatched: nothing\n";

bool bwrap_works() {
    return bwrap_unavailable().empty();
}

class HostileExecTest : public ::testing::Test {
  protected:
    /// Starts crcrd whose test command is `script` (a /bin/sh script installed outside the
    /// daemon's folders); `execution_extra` lines go into the execution section.
    void start(const std::string& script, const std::string& execution_extra = "",
               const std::string& health = "[/bin/true]",
               const std::vector<std::string>& env = {}) {
        write_file(bin.path() / "test.sh", "#!/bin/sh\n" + script, 0755);
        std::filesystem::permissions(bin.path(), std::filesystem::perms(0755));
        write_file(dir.path() / "selection.yaml", k_rules);
        daemon = std::make_unique<TestDaemon>(dir.path(), config(execution_extra, health));
        daemon->start(env);
    }
    std::string config(const std::string& execution_extra, const std::string& health) {
        return "selection: {rules: selection.yaml}\n"
               "runners:\n"
               "  - {name: sim-0, labels: [sim], health_check: " +
               health +
               "}\n"
               "execution:\n"
               "  command: [" +
               (bin.path() / "test.sh").string() +
               "]\n"
               "  work_root: state/work\n"
               "  min_free_bytes: 1MiB\n"
               "  infra_retries: 0\n"
               "  flaky_reruns: 0\n"
               "  device_wait: 30s\n" +
               (execution_extra.find("health_interval") == std::string::npos
                    ? "  health_interval: 1s\n"
                    : "") +
               execution_extra + "admin: {tokens: [{name: ops, role: admin, sha256: " +
               crypto::sha256_hex("ops-token") + "}]}\n";
    }
    std::int64_t post(const std::string& id) {
        json j = json::parse(fixture_text("crcr/direct-pytorch-crcr.json"));
        j["client_payload"]["pr_number"] = next_pr++;
        auto r = daemon->post_standard(j.dump(), id);
        EXPECT_EQ(r->status, 202) << r->body;
        return json::parse(r->body)["run_id"].get<std::int64_t>();
    }
    /// "state/conclusion" once the run finished.
    std::string finished(std::int64_t run, std::chrono::seconds within = std::chrono::seconds(60)) {
        EXPECT_TRUE(
            eventually([&] { return run_state(*daemon, run).rfind("completed/", 0) == 0; }, within))
            << run_state(*daemon, run) << "\n"
            << daemon->log();
        return run_state(*daemon, run);
    }
    std::string job_log(std::int64_t run) {
        auto path = last_job(*daemon, {.run = run}).log_path;
        return read_file(path, 64u << 20).value_or("");
    }
    std::string job_reason(std::int64_t run) {
        const auto job = last_job(*daemon, {.run = run});
        return job.conclusion + ": " + job.reason;
    }

    TempDir dir;
    TempDir bin;
    std::unique_ptr<TestDaemon> daemon;
    int next_pr = 300;
};

TEST_F(HostileExecTest, ATestRunningUnderARootDaemonCannotUndoItsSandbox) {
    if (::geteuid() != 0) GTEST_SKIP() << "the escape needs a daemon running as root";
    if (!bwrap_works()) GTEST_SKIP() << "bubblewrap cannot create namespaces here";
    const auto secret = dir.path() / "secrets" / "webhook.secret";
    // What the escape of the issue did, then every way to the daemon's files it could think of.
    start(
        "id -u; grep CapEff /proc/self/status\n"
        "umount -R -l /tmp 2>&1; mount -o remount,bind,rw / 2>&1\n"
        "unshare -Urm sh -c 'umount -l /tmp' 2>&1\n"
        "for f in " +
            secret.string() + " " + (dir.path() / "crcrd.yaml").string() + " " +
            (dir.path() / "state" / "crcrd.db").string() +
            "; do\n"
            "  head -c 200 \"$f\" 2>/dev/null | sed 's/^/probe: READ /'\n"
            "done\n"
            "grep -l DAEMON_ONLY_MARKER /proc/[0-9]*/environ 2>/dev/null | sed 's/^/probe: daemon "
            "env in /'\n"
            "echo '<testsuite><testcase classname=\"c\" name=\"t1\"/></testsuite>' > "
            "\"$CRCR_JUNIT_DIR/r.xml\"\n"
            "echo probe: done\n",
        "", "[/bin/true]", {"DAEMON_ONLY_MARKER=1"});
    auto run = post("esc-1");
    EXPECT_EQ(finished(run), "completed/passed") << job_reason(run);
    auto log = job_log(run);
    EXPECT_NE(log.find("probe: done"), std::string::npos) << log;
    EXPECT_EQ(log.rfind("65534\n", 0), 0u) << "the test did not run as nobody:\n" << log;
    EXPECT_NE(log.find("CapEff:\t0000000000000000"), std::string::npos) << log;
    EXPECT_EQ(log.find("probe: READ"), std::string::npos) << log;
    EXPECT_EQ(log.find(k_test_secret), std::string::npos) << log;
    EXPECT_EQ(log.find("probe: daemon env"), std::string::npos) << log;
}

/// A listening abstract unix socket of this process (in the host's network namespace).
class AbstractSocket {
  public:
    explicit AbstractSocket(const std::string& name) : m_name(name) {
        m_fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_un a{};
        a.sun_family = AF_UNIX;
        std::memcpy(a.sun_path + 1, name.data(), name.size());
        const auto len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
        if (::bind(m_fd, reinterpret_cast<sockaddr*>(&a), len) != 0 || ::listen(m_fd, 4) != 0) {
            throw std::runtime_error("cannot listen on @" + name);
        }
    }
    ~AbstractSocket() { ::close(m_fd); }
    /// Whether a client in this process's network namespace reaches it.
    bool reachable() const {
        const int c = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_un a{};
        a.sun_family = AF_UNIX;
        std::memcpy(a.sun_path + 1, m_name.data(), m_name.size());
        const auto len =
            static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + m_name.size());
        const bool ok = ::connect(c, reinterpret_cast<sockaddr*>(&a), len) == 0;
        ::close(c);
        return ok;
    }

  private:
    std::string m_name;
    int m_fd = -1;
};

TEST_F(HostileExecTest, NetworkNoneLeavesTheTestOnlyAnUnconnectedLoopback) {
    if (!bwrap_works()) GTEST_SKIP() << "bubblewrap cannot create namespaces here";
    // The daemon's own port, reachable from the host, is not reachable from the test; nor is
    // an abstract unix socket of the host's network namespace (abstract names belong to a
    // network namespace, and --unshare-net gives the test its own).
    const std::string abstract_name = "crcrd-test-abstract-" + std::to_string(::getpid());
    AbstractSocket abstract(abstract_name);
    ASSERT_TRUE(abstract.reachable());
    const std::string env =
        "  network: none\n  env: {DAEMON_PORT: \"PORT\", ABSTRACT: " + abstract_name + "}\n";
    start(
        "python3 -c \"import socket,sys; socket.create_connection(('127.0.0.1', int(sys.argv[1])), "
        "2)\" $DAEMON_PORT "
        ">/dev/null 2>&1 && echo 'probe: CONNECTED' || echo 'probe: no route'\n"
        "python3 -c \"import socket,sys; socket.socket(socket.AF_UNIX).connect('\\0' + "
        "sys.argv[1])\" \"$ABSTRACT\" "
        ">/dev/null 2>&1 && echo 'probe: ABSTRACT SOCKET REACHED' || echo 'probe: no abstract "
        "socket'\n"
        "tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' ' | tr '\\n' ' ' | sed 's/^/interfaces: "
        "/'; echo\n"
        "echo '<testsuite><testcase classname=\"c\" name=\"t1\"/></testsuite>' > "
        "\"$CRCR_JUNIT_DIR/r.xml\"\n",
        env);
    // The port is known once the daemon runs: write it into the config and reload.
    std::string with_port = env;
    with_port.replace(with_port.find("PORT\""), 4, std::to_string(daemon->port()));
    daemon->write_config(config(with_port, "[/bin/true]"));
    daemon->process().signal(SIGHUP);
    ASSERT_TRUE(eventually([&] { return daemon->log().find("reloaded") != std::string::npos; }));
    auto run = post("net-1");
    EXPECT_EQ(finished(run), "completed/passed") << job_reason(run);
    auto log = job_log(run);
    EXPECT_NE(log.find("probe: no route"), std::string::npos) << log;
    EXPECT_NE(log.find("probe: no abstract socket"), std::string::npos) << log;
    EXPECT_NE(log.find("interfaces: lo \n"), std::string::npos) << log;
}

TEST_F(HostileExecTest, WhateverATestLeavesInItsJunitFolderGetsAClassNotACrash) {
    // Links (a loop, a link to the daemon's secret), a fifo nobody writes, a 2 GiB sparse file,
    // and then a test that makes 150,000 files: each run ends classified, the daemon serves on,
    // and a restart with the same work left does not crash either.
    const auto secret = dir.path() / "secrets" / "webhook.secret";
    start(
        "case \"$CRCR_PR\" in\n"
        "300) ln -s loop.xml \"$CRCR_JUNIT_DIR/loop.xml\"; ln -s " +
            secret.string() +
            " \"$CRCR_JUNIT_DIR/secret.xml\"\n"
            "     echo '<testsuite><testcase classname=\"c\" name=\"t1\"/></testsuite>' > "
            "\"$CRCR_JUNIT_DIR/real.xml\" ;;\n"
            "301) mkfifo \"$CRCR_JUNIT_DIR/pipe.xml\" ;;\n"
            "302) truncate -s 2G \"$CRCR_JUNIT_DIR/huge.xml\" ;;\n"
            "303) cd \"$CRCR_JUNIT_DIR\" && seq 1 150000 | xargs touch ;;\n"
            "esac\n",
        "  isolation: none\n");
    auto loops = post("j-300");
    EXPECT_EQ(finished(loops), "completed/infra_error") << job_reason(loops);
    EXPECT_NE(job_reason(loops).find(".xml is not a regular file"), std::string::npos)
        << job_reason(loops);
    EXPECT_EQ(job_reason(loops).find(k_test_secret), std::string::npos);
    auto fifo = post("j-301");
    EXPECT_EQ(finished(fifo), "completed/infra_error") << job_reason(fifo);
    EXPECT_NE(job_reason(fifo).find("pipe.xml is not a regular file"), std::string::npos)
        << job_reason(fifo);
    auto huge = post("j-302");
    EXPECT_EQ(finished(huge), "completed/infra_error") << job_reason(huge);
    EXPECT_NE(job_reason(huge).find("huge.xml is larger than"), std::string::npos)
        << job_reason(huge);
    auto many = post("j-303");
    EXPECT_EQ(finished(many, std::chrono::seconds(120)), "completed/infra_error")
        << job_reason(many);
    EXPECT_NE(job_reason(many).find("entries in the JUnit folder"), std::string::npos)
        << job_reason(many);
    EXPECT_TRUE(daemon->process().running());
    EXPECT_EQ(daemon->request("GET", "/healthz", {}, "")->status, 200);
    EXPECT_EQ(daemon->log().find(k_test_secret),
              std::string::npos);  // the link to the secret was not followed
    EXPECT_EQ(daemon->stop(), 0);
    daemon->start();
    EXPECT_EQ(daemon->request("GET", "/healthz", {}, "")->status, 200);
}

TEST_F(HostileExecTest, ASecondDaemonOnTheSameDatabaseChangesNothing) {
    start("echo started; sleep 3600\n", "  isolation: none\n");
    auto run = post("lock-1");
    ASSERT_TRUE(eventually([&] {
        return count_jobs(*daemon, {.run = run, .state = "running"}) == 1;
    })) << daemon->log();
    const auto pgid = first_job(*daemon, {.run = run}).pgid.value_or(0);
    // The same configuration, started again.
    Process second({CRCRD_BIN, "--config", daemon->config_path().string()},
                   dir.path() / "second.log");
    auto rc = second.wait_for(std::chrono::seconds(30));
    ASSERT_TRUE(rc);
    EXPECT_EQ(*rc, 1);
    auto out = read_file(dir.path() / "second.log").value();
    EXPECT_NE(out.find("another crcrd holds " + daemon->db_path().string() + ".lock"),
              std::string::npos)
        << out;
    // The first daemon's job still runs, its process alive, and nothing was ended.
    EXPECT_EQ(::kill(static_cast<pid_t>(pgid), 0), 0);
    EXPECT_EQ(first_job(*daemon, {.run = run}).state, "running");
    const auto jobs = job_rows(*daemon);
    EXPECT_EQ(std::count_if(jobs.begin(), jobs.end(),
                            [](const JobRow& j) { return !j.conclusion.empty(); }),
              0);
    EXPECT_EQ(daemon->request("GET", "/healthz", {}, "")->status, 200);
}

TEST_F(HostileExecTest, NothingAJobStartsOutlivesIt) {
    // isolation none: a grandchild in a session of its own (setsid), which used to survive
    // the job, and one that double-forks.
    start(
        "setsid sh -c 'echo $$ > \"$HOME/../escaped.pid\"; exec sleep 3600' &\n"
        "( sleep 3600 & echo $! > \"$HOME/../orphan.pid\" ) &\n"
        "sleep 0.5\n"
        "echo '<testsuite><testcase classname=\"c\" name=\"t1\"/></testsuite>' > "
        "\"$CRCR_JUNIT_DIR/r.xml\"\n",
        "  isolation: none\n");
    auto run = post("out-1");
    EXPECT_EQ(finished(run), "completed/passed") << job_reason(run);
    for (const char* name : {"escaped.pid", "orphan.pid"}) {
        auto text = read_file(dir.path() / "state" / "work" / "jobs" / name);
        ASSERT_TRUE(text) << name;
        const pid_t pid = std::stoi(trim(*text));
        EXPECT_TRUE(eventually([&] { return ::kill(pid, 0) != 0; }, std::chrono::seconds(10)))
            << name << " " << pid << " outlived its job";
    }
}

TEST_F(HostileExecTest, ADetachedProcessOfAKilledDaemonsJobIsKilledAtTheNextStart) {
    start(
        "setsid sh -c 'echo $$ > \"$HOME/../detached.pid\"; exec sleep 3600' &\nexec sleep 3600\n",
        "  isolation: none\n");
    auto run = post("k9-1");
    const auto pid_file = dir.path() / "state" / "work" / "jobs" / "detached.pid";
    ASSERT_TRUE(eventually([&] {
        return std::filesystem::exists(pid_file) && std::filesystem::file_size(pid_file) > 0;
    }));
    const pid_t detached = std::stoi(trim(read_file(pid_file).value()));
    daemon->kill9();
    EXPECT_EQ(::kill(detached, 0), 0) << "the detached process died with the daemon already";
    daemon->start();
    EXPECT_TRUE(eventually([&] { return ::kill(detached, 0) != 0; }, std::chrono::seconds(10)));
    EXPECT_NE(daemon->log().find("stray process"), std::string::npos);
    const auto job = first_job(*daemon, {.run = run});
    EXPECT_EQ(job.conclusion + ": " + job.reason, "infra_error: daemon restarted");
}

TEST_F(HostileExecTest, ChildrenInheritNoDescriptorOfTheDaemon) {
    // The health check and the test list their open descriptors: only 0, 1, 2 and the one
    // `ls` opens itself, never a socket, the database or the lock.
    const auto health_out = dir.path() / "health-fds.txt";
    write_file(bin.path() / "health.sh",
               "#!/bin/sh\nls -l /proc/self/fd/ > " + health_out.string() + "\n", 0755);
    start(
        "ls -l /proc/self/fd/ | sed 's/^/fd: /'\n"
        "echo '<testsuite><testcase classname=\"c\" name=\"t1\"/></testsuite>' > "
        "\"$CRCR_JUNIT_DIR/r.xml\"\n",
        "  isolation: none\n", "[" + (bin.path() / "health.sh").string() + "]");
    auto run = post("fd-1");
    EXPECT_EQ(finished(run), "completed/passed") << job_reason(run);
    for (const std::string& text : {job_log(run), read_file(health_out).value_or("missing")}) {
        EXPECT_EQ(text.find("socket:"), std::string::npos) << text;
        EXPECT_EQ(text.find("crcrd.db"), std::string::npos) << text;
        EXPECT_EQ(text.find(".lock"), std::string::npos) << text;
        EXPECT_NE(text.find(" 2 -> "), std::string::npos) << text;
    }
}

TEST_F(HostileExecTest, AThousandHealthRechecksLeaveTheThreadsWhereTheyWere) {
    // A slot that always fails its health check is rechecked every 10 ms.
    start("exit 0\n", "  isolation: none\n  health_interval: 10ms\n", "[/bin/false]");
    auto threads = [&] {
        auto status =
            read_file("/proc/" + std::to_string(daemon->process().pid()) + "/status").value();
        auto at = status.find("Threads:");
        return std::stoi(status.substr(at + 8));
    };
    post("hc-1");  // leases the slot, fails the check: offline, rechecked from now on
    ASSERT_TRUE(eventually([&] {
        const auto slots = slot_rows(*daemon);
        return !slots.empty() && slots.front().state == "offline";
    })) << daemon->log();
    auto rechecks = [&] {
        const auto log = daemon->log();
        std::size_t n = 0;
        for (auto at = log.find("health recheck failed"); at != std::string::npos;
             at = log.find("health recheck failed", at + 1))
            ++n;
        return n;
    };
    ASSERT_TRUE(eventually([&] { return rechecks() >= 20; }, std::chrono::seconds(60)));
    const int early = threads();
    ASSERT_TRUE(eventually([&] { return rechecks() >= 1000; }, std::chrono::seconds(180)))
        << rechecks();
    EXPECT_LE(threads(), early + 1) << "threads grew from " << early << " over 1,000 rechecks";
}

TEST_F(HostileExecTest, ACommandInsideAHiddenFolderIsAConfigurationError) {
    write_file(dir.path() / "selection.yaml", k_rules);
    write_file(dir.path() / "scripts" / "run.sh", "#!/bin/sh\nexit 0\n", 0755);
    TestDaemon d(dir.path(),
                 "selection: {rules: selection.yaml}\n"
                 "runners: [{name: sim-0}]\n"
                 "execution: {command: [scripts/run.sh], work_root: state/work}\n");
    std::string out;
    EXPECT_EQ(
        run_command({CRCRD_BIN, "--check-config", "--config", d.config_path().string()}, &out), 2);
    EXPECT_NE(out.find("execution.command: " + (dir.path() / "scripts" / "run.sh").string() +
                       " lies inside " + dir.path().string() + ", which the sandbox hides"),
              std::string::npos)
        << out;
}

}  // namespace
}  // namespace crcrd
