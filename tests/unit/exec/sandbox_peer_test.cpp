// Whom the sandbox launcher serves (sandbox_launcher.hpp, peer_refusal): the rule as a table,
// then the facts read_peer gathers of real processes on both ends of a socket pair.
#include <gtest/gtest.h>
// glibc 2.36's <sys/pidfd.h> declares its functions without C linkage for C++.
extern "C" {
#include <sys/pidfd.h>
}
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>

#include "crcrd/exec/sandbox_launcher.hpp"

namespace crcrd::exec::sandbox {
namespace {

PeerFacts daemon_client() {
    PeerFacts f;
    f.uid = 990;
    f.pid = 4242;
    f.pidfd_pid = 4242;
    f.alive = true;
    f.pid_ns_depth = 0;
    f.in_cgroup = true;
    return f;
}

TEST(SandboxPeer, OnlyTheDaemonsOwnClientIsServed) {
    const PeerPolicy policy{990, std::string("/system.slice/crcrd.service")};
    PeerPolicy no_cgroup = policy;
    no_cgroup.cgroup.reset();
    struct Case {
        const char* name;
        std::function<void(PeerFacts&)> change;
        const PeerPolicy& policy;
        const char* refusal;  // a part of the reason; nullptr: served
    };
    const Case cases[] = {
        {"the daemon's client", [](PeerFacts&) {}, policy, nullptr},
        {"root", [](PeerFacts& f) { f.uid = 0; }, policy, nullptr},
        {"no cgroup asked for", [](PeerFacts& f) { f.in_cgroup.reset(); }, no_cgroup, nullptr},
        {"another user", [](PeerFacts& f) { f.uid = 1000; }, policy,
         "peer uid 1000 is not this user's"},
        {"no pid descriptor", [](PeerFacts& f) { f.pidfd_pid.reset(); }, policy,
         "no pid descriptor"},
        {"a descriptor of another process", [](PeerFacts& f) { f.pidfd_pid = 17; }, policy,
         "names process 17, not the peer 4242"},
        {"a descriptor of a process outside this namespace", [](PeerFacts& f) { f.pidfd_pid = 0; },
         policy, "names process 0"},
        {"a descriptor of a process that ended", [](PeerFacts& f) { f.pidfd_pid = -1; }, policy,
         "names process -1"},
        {"exited during the check (its pid may be reused)", [](PeerFacts& f) { f.alive = false; },
         policy, "the peer 4242 exited while it was checked"},
        {"a job's sandbox", [](PeerFacts& f) { f.pid_ns_depth = 1; }, policy,
         "the peer 4242 runs in a pid namespace of its own (a job's sandbox), not the launcher's"},
        {"a sandbox in a sandbox, no cgroup asked for", [](PeerFacts& f) { f.pid_ns_depth = 2; },
         no_cgroup, "a pid namespace of its own"},
        {"an unknown namespace", [](PeerFacts& f) { f.pid_ns_depth = -1; }, no_cgroup,
         "cannot tell the pid namespace of the peer 4242"},
        {"another cgroup (the sandbox unit's)", [](PeerFacts& f) { f.in_cgroup = false; }, policy,
         "the peer 4242 is not in cgroup /system.slice/crcrd.service"},
        {"an unreadable cgroup", [](PeerFacts& f) { f.in_cgroup.reset(); }, policy,
         "cannot read cgroup /system.slice/crcrd.service to look for the peer 4242"},
    };
    for (const auto& c : cases) {
        PeerFacts f = daemon_client();
        c.change(f);
        const auto why = peer_refusal(f, c.policy);
        if (!c.refusal) {
            EXPECT_FALSE(why) << c.name << ": " << why.value_or("");
        } else {
            ASSERT_TRUE(why) << c.name;
            EXPECT_NE(why->find(c.refusal), std::string::npos) << c.name << ": " << *why;
        }
    }
}

/// This process's cgroup v2 path ("0::PATH" in /proc/self/cgroup).
std::string own_cgroup() {
    std::ifstream in("/proc/self/cgroup");
    for (std::string line; std::getline(in, line);) {
        if (line.rfind("0::", 0) == 0) return line.substr(3);
    }
    return {};
}

/// Whether a cgroup v2 hierarchy is mounted (at /sys/fs/cgroup or, on a hybrid host, below it).
bool cgroup2_mounted() {
    std::ifstream in("/proc/self/mountinfo");
    for (std::string line; std::getline(in, line);) {
        if (line.find(" - cgroup2 ") != std::string::npos) return true;
    }
    return false;
}

TEST(SandboxPeer, ReadPeerTiesTheFactsToTheConnectedProcess) {
    int sv[2];
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
    const int self = ::pidfd_open(::getpid(), 0);
    ASSERT_GE(self, 0);
    const auto policy = own_policy(std::nullopt);
    // The peer of sv[0] is this process: served with its own pid descriptor.
    auto facts = read_peer(sv[0], self, std::nullopt);
    EXPECT_EQ(facts.pid, ::getpid());
    EXPECT_EQ(facts.pidfd_pid, ::getpid());
    EXPECT_TRUE(facts.alive);
    EXPECT_EQ(facts.pid_ns_depth, 0);
    EXPECT_FALSE(facts.in_cgroup);
    EXPECT_FALSE(peer_refusal(facts, policy)) << peer_refusal(facts, policy).value_or("");
    // In its own cgroup (wherever the cgroup v2 hierarchy is mounted), not in another.
    if (const auto mine = own_cgroup(); !mine.empty() && cgroup2_mounted()) {
        EXPECT_EQ(read_peer(sv[0], self, mine).in_cgroup, true);
        EXPECT_EQ(read_peer(sv[0], self, std::string("/no-such-cgroup")).in_cgroup, std::nullopt);
        if (mine != "/") {
            const auto parent = std::filesystem::path(mine).parent_path().string();
            EXPECT_EQ(read_peer(sv[0], self, parent).in_cgroup, true);  // "or below"
        }
    }

    // A pid descriptor of another process (a child), or a descriptor that is none, is refused.
    const pid_t child = ::fork();
    if (child == 0) {
        ::pause();
        ::_exit(0);
    }
    const int other = ::pidfd_open(child, 0);
    ASSERT_GE(other, 0);
    EXPECT_TRUE(peer_refusal(read_peer(sv[0], other, std::nullopt), policy));
    EXPECT_FALSE(read_peer(sv[0], sv[1], std::nullopt).pidfd_pid);
    EXPECT_TRUE(peer_refusal(read_peer(sv[0], -1, std::nullopt), policy));
    ::kill(child, SIGKILL);
    ::waitpid(child, nullptr, 0);
    // Once reaped, its descriptor names no process.
    EXPECT_EQ(read_peer(sv[0], other, std::nullopt).pidfd_pid, -1);
    for (int fd : {sv[0], sv[1], self, other}) ::close(fd);
}

}  // namespace
}  // namespace crcrd::exec::sandbox
