#include "crcrd/exec/sandbox_launcher.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
// glibc 2.36's <sys/pidfd.h> declares its functions without C linkage for C++.
extern "C" {
#include <sys/pidfd.h>
}
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string_view>

namespace crcrd::exec::sandbox {

namespace {

constexpr std::string_view k_version = "crcrd-sandbox/2";
constexpr std::size_t k_max_request = 1 << 20;
// stdin, stdout, stderr, and a pid descriptor of the client itself.
constexpr std::size_t k_fds = 4;

void put(std::string& out, std::string_view field) {
    out.append(field);
    out.push_back('\0');
}

/// The next NUL-terminated field of `bytes` from `pos`; false when there is none.
bool take(const std::string& bytes, std::size_t& pos, std::string& field) {
    auto end = bytes.find('\0', pos);
    if (end == std::string::npos) return false;
    field.assign(bytes, pos, end - pos);
    pos = end + 1;
    return true;
}

/// The next `out.size()` fields of `bytes` from `pos` into `out`; false when they run out.
bool take_each(const std::string& bytes, std::size_t& pos, std::vector<std::string>& out) {
    for (auto& field : out) {
        if (!take(bytes, pos, field)) return false;
    }
    return true;
}

bool take_count(const std::string& bytes, std::size_t& pos, std::size_t& n) {
    std::string field;
    if (!take(bytes, pos, field) || field.empty() || field.size() > 7 ||
        field.find_first_not_of("0123456789") != std::string::npos) {
        return false;
    }
    n = std::stoul(field);
    return true;
}

bool send_text(int fd, const std::string& text) {
    return ::send(fd, text.data(), text.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(text.size());
}

/// One message from `fd` into `out` (0 on end of stream, -1 on error or truncation), with up
/// to k_fds descriptors into `fds` when `fds` is given.
ssize_t receive(int fd, std::string& out, std::size_t max, std::vector<int>* fds) {
    out.resize(max);
    iovec iov{out.data(), out.size()};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * k_fds)];
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    if (fds) {
        msg.msg_control = control;
        msg.msg_controllen = sizeof control;
    }
    ssize_t n;
    do {
        n = ::recvmsg(fd, &msg, MSG_CMSG_CLOEXEC);
    } while (n < 0 && errno == EINTR);
    if (fds) {
        for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
            if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
            const std::size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
            for (std::size_t i = 0; i < count; ++i) {
                int got;
                std::memcpy(&got, CMSG_DATA(c) + i * sizeof(int), sizeof got);
                fds->push_back(got);
            }
        }
    }
    if (n < 0 || (msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC))) return -1;
    out.resize(static_cast<std::size_t>(n));
    return n;
}

}  // namespace

std::string encode(const Request& r) {
    std::string out;
    put(out, k_version);
    put(out, std::to_string(r.argv.size()));
    for (const auto& a : r.argv) put(out, a);
    put(out, std::to_string(r.env.size()));
    for (const auto& e : r.env) put(out, e);
    put(out, r.cwd);
    return out;
}

bool decode(const std::string& bytes, Request& out, std::string& why) {
    std::size_t pos = 0, n = 0;
    std::string field;
    if (!take(bytes, pos, field) || field != k_version) {
        why = "not a " + std::string(k_version) + " request";
        return false;
    }
    if (!take_count(bytes, pos, n) || n == 0) {
        why = "no command";
        return false;
    }
    out.argv.resize(n);
    if (!take_each(bytes, pos, out.argv)) {
        why = "the arguments end early";
        return false;
    }
    if (!take_count(bytes, pos, n)) {
        why = "no environment count";
        return false;
    }
    out.env.resize(n);
    if (!take_each(bytes, pos, out.env)) {
        why = "the environment ends early";
        return false;
    }
    if (!take(bytes, pos, out.cwd) || out.cwd.empty() || out.cwd.front() != '/') {
        why = "no absolute folder";
        return false;
    }
    if (pos != bytes.size()) {
        why = "bytes after the folder";
        return false;
    }
    return true;
}

int run_client(const std::string& socket, const std::vector<std::string>& argv, char** envp) {
    auto fail = [&](const std::string& what) {
        std::fprintf(stderr, "crcrd --sandbox-connect: %s\n", what.c_str());
        return 125 << 8;
    };
    // The signals the job's init sends are read from a descriptor, not handled: blocked first,
    // so that one that comes before the command runs is forwarded once it does.
    sigset_t forwarded;
    sigemptyset(&forwarded);
    for (int sig : {SIGTERM, SIGINT, SIGHUP}) sigaddset(&forwarded, sig);
    ::sigprocmask(SIG_BLOCK, &forwarded, nullptr);
    int sfd = ::signalfd(-1, &forwarded, SFD_CLOEXEC);
    if (sfd < 0) return fail(std::string("signalfd: ") + std::strerror(errno));

    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    if (socket.size() >= sizeof addr.sun_path) return fail("socket path too long: " + socket);
    std::memcpy(addr.sun_path, socket.c_str(), socket.size() + 1);
    int fd = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    if (fd < 0) return fail(std::string("socket: ") + std::strerror(errno));
    if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
        return fail("cannot reach the sandbox launcher at " + socket + ": " + std::strerror(errno) +
                    " (is crcrd-sandbox.socket active? docs/operations.md)");
    }

    Request r;
    r.argv = argv;
    for (char** e = envp; e && *e; ++e) r.env.emplace_back(*e);
    char cwd[4096];
    if (!::getcwd(cwd, sizeof cwd)) return fail(std::string("getcwd: ") + std::strerror(errno));
    r.cwd = cwd;
    std::string bytes = encode(r);
    if (bytes.size() > k_max_request) return fail("the command and its environment exceed 1 MiB");
    iovec iov{bytes.data(), bytes.size()};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * k_fds)] = {};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int) * k_fds);
    // Who is asking: a pid descriptor of this process, which the launcher checks against the
    // connection's credentials (peer_refusal).
    const int self = ::pidfd_open(::getpid(), 0);
    if (self < 0) return fail(std::string("pidfd_open: ") + std::strerror(errno));
    const int mine[k_fds] = {0, 1, 2, self};
    std::memcpy(CMSG_DATA(c), mine, sizeof mine);
    if (::sendmsg(fd, &msg, MSG_NOSIGNAL) != static_cast<ssize_t>(bytes.size())) {
        return fail(std::string("cannot send the request: ") + std::strerror(errno));
    }

    std::string reply;
    for (;;) {
        pollfd p[2] = {{fd, POLLIN, 0}, {sfd, POLLIN, 0}};
        if (::poll(p, 2, -1) < 0) {
            if (errno == EINTR) continue;
            return fail(std::string("poll: ") + std::strerror(errno));
        }
        if (p[1].revents & POLLIN) {
            signalfd_siginfo si{};
            if (::read(sfd, &si, sizeof si) == sizeof si) {
                send_text(fd, "signal " + std::to_string(si.ssi_signo));
            }
        }
        if (!(p[0].revents & (POLLIN | POLLHUP | POLLERR))) continue;
        ssize_t n = receive(fd, reply, 4096, nullptr);
        if (n <= 0) return fail("the sandbox launcher went away before the command ended");
        if (reply.rfind("exit ", 0) == 0) return std::atoi(reply.c_str() + 5);
        if (reply.rfind("error ", 0) == 0)
            return fail("the sandbox launcher refused: " + reply.substr(6));
        // "started PID": nothing to do.
    }
}

std::optional<std::string> peer_refusal(const PeerFacts& f, const PeerPolicy& p) {
    const std::string peer = "the peer " + std::to_string(f.pid);
    if (f.uid != p.uid && f.uid != 0)
        return "peer uid " + std::to_string(f.uid) + " is not this user's";
    if (!f.pidfd_pid) return "the request carries no pid descriptor of its sender";
    if (*f.pidfd_pid != f.pid) {
        return "the pid descriptor names process " + std::to_string(*f.pidfd_pid) + ", not " + peer;
    }
    if (!f.alive) return peer + " exited while it was checked";
    if (f.pid_ns_depth < 0) return "cannot tell the pid namespace of " + peer;
    if (f.pid_ns_depth > 0)
        return peer + " runs in a pid namespace of its own (a job's sandbox), not the launcher's";
    if (p.cgroup) {
        if (!f.in_cgroup) return "cannot read cgroup " + *p.cgroup + " to look for " + peer;
        if (!*f.in_cgroup) return peer + " is not in cgroup " + *p.cgroup;
    }
    return std::nullopt;
}

namespace {

/// What a pid descriptor's fdinfo says: its "Pid:" (-1 once the process ended, 0 outside
/// this process's pid namespace) and how many pids its "NSpid:" lists (1: the process is in
/// this pid namespace; more: in one nested in it). nullopt when `fd` is not a pid descriptor.
struct PidfdInfo {
    pid_t pid = 0;
    int nspids = 0;
};
std::optional<PidfdInfo> pidfd_info(int fd) {
    char link[64] = {};
    const std::string self_fd = "/proc/self/fd/" + std::to_string(fd);
    if (::readlink(self_fd.c_str(), link, sizeof link - 1) < 0 || !std::strstr(link, "pidfd"))
        return std::nullopt;
    std::ifstream in("/proc/self/fdinfo/" + std::to_string(fd));
    std::optional<PidfdInfo> info;
    for (std::string line; std::getline(in, line);) {
        if (line.rfind("Pid:", 0) == 0) {
            info = info.value_or(PidfdInfo{});
            info->pid = static_cast<pid_t>(std::stol(line.substr(4)));
        } else if (line.rfind("NSpid:", 0) == 0) {
            info = info.value_or(PidfdInfo{});
            std::istringstream pids(line.substr(6));
            for (long n; pids >> n;) ++info->nspids;
        }
    }
    return info;
}

/// Where the cgroup v2 hierarchy is mounted here: /sys/fs/cgroup on a unified host,
/// /sys/fs/cgroup/unified on a hybrid one; nullopt without one.
std::optional<std::filesystem::path> cgroup2_mount() {
    std::ifstream in("/proc/self/mountinfo");
    for (std::string line; std::getline(in, line);) {
        // "ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS... - FSTYPE SOURCE SUPEROPTIONS"
        const auto dash = line.find(" - ");
        if (dash == std::string::npos || line.compare(dash + 3, 8, "cgroup2 ") != 0) continue;
        std::istringstream fields(line.substr(0, dash));
        std::string id, parent, dev, root, mount_point;
        if (fields >> id >> parent >> dev >> root >> mount_point) return mount_point;
    }
    return std::nullopt;
}

/// Whether `pid` is listed in the cgroup.procs of `dir` or of a cgroup below it; nullopt
/// when `dir` cannot be read.
std::optional<bool> cgroup_lists(const std::filesystem::path& dir, pid_t pid) {
    std::error_code ec;
    if (!std::filesystem::is_directory(dir, ec)) return std::nullopt;
    std::vector<std::filesystem::path> dirs = {dir};
    for (auto it = std::filesystem::recursive_directory_iterator(dir, ec);
         !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
        if (it->is_directory(ec)) dirs.push_back(it->path());
    }
    if (ec) return std::nullopt;
    for (const auto& d : dirs) {
        std::ifstream procs(d / "cgroup.procs");
        if (!procs) return std::nullopt;
        for (long n; procs >> n;) {
            if (n == pid) return true;
        }
    }
    return false;
}

}  // namespace

PeerFacts read_peer(int sock, int pidfd, const std::optional<std::string>& cgroup) {
    PeerFacts f;
    ucred cred{};
    socklen_t len = sizeof cred;
    if (::getsockopt(sock, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) return f;
    f.uid = cred.uid;
    f.pid = cred.pid;
    if (pidfd < 0) return f;
    // Everything is read through the descriptor or from files any process may read: the
    // peer may be in another user namespace (crcrd.service has PrivateUsers=), where its
    // /proc/PID is closed to the launcher.
    const auto before = pidfd_info(pidfd);
    if (!before) return f;
    f.pidfd_pid = before->pid;
    if (before->pid != f.pid || f.pid <= 0) return f;
    f.pid_ns_depth = before->nspids - 1;
    if (cgroup) {
        if (const auto root = cgroup2_mount())
            f.in_cgroup = cgroup_lists(*root / cgroup->substr(1), f.pid);
    }
    // The process the descriptor names held this pid before the reads; if it still does after
    // them, they were of it and not of a process that reused the pid.
    const auto after = pidfd_info(pidfd);
    f.alive = after && after->pid == f.pid;
    return f;
}

PeerPolicy own_policy(std::optional<std::string> cgroup) {
    PeerPolicy p;
    p.uid = ::getuid();
    p.cgroup = std::move(cgroup);
    return p;
}

namespace {

/// Once the command started: passes the client's signals on to its process group until it
/// exits (sfd: SIGCHLD), then tells the client its wait status; the group is killed when
/// either side goes.
int relay_until_exit(int fd, int sfd, pid_t child) {
    bool peer_gone = false;
    std::string msg;
    for (;;) {
        pollfd p[2] = {{peer_gone ? -1 : fd, POLLIN, 0}, {sfd, POLLIN, 0}};
        if (::poll(p, 2, -1) < 0 && errno != EINTR) break;
        if (p[1].revents & POLLIN) {
            signalfd_siginfo si{};
            (void)!::read(sfd, &si, sizeof si);
            int status = 0;
            if (::waitpid(child, &status, WNOHANG) == child) {
                // Whatever the command left in its group goes with it.
                ::kill(-child, SIGKILL);
                if (!peer_gone) send_text(fd, "exit " + std::to_string(status));
                return 0;
            }
        }
        if (!peer_gone && (p[0].revents & (POLLIN | POLLHUP | POLLERR))) {
            ssize_t got = receive(fd, msg, 64, nullptr);
            if (got <= 0) {
                // The client is gone (killed with its job's init): so is the job.
                peer_gone = true;
                ::kill(-child, SIGKILL);
                continue;
            }
            if (msg.rfind("signal ", 0) == 0) {
                const int sig = std::atoi(msg.c_str() + 7);
                if (sig == SIGTERM || sig == SIGINT || sig == SIGHUP || sig == SIGKILL)
                    ::kill(-child, sig);
            }
        }
    }
    ::kill(-child, SIGKILL);
    return 0;
}

}  // namespace

int serve(int fd, const std::string& bwrap, const PeerPolicy& policy) {
    auto refuse = [&](const std::string& why) {
        std::fprintf(stderr, "crcrd --sandbox-serve: refused: %s\n", why.c_str());
        send_text(fd, "error " + why);
        return 1;
    };
    std::string bytes;
    std::vector<int> fds;
    ssize_t n = receive(fd, bytes, k_max_request, &fds);
    struct CloseAll {
        std::vector<int>& fds;
        ~CloseAll() {
            for (int f : fds) ::close(f);
        }
    } close_all{fds};
    // Whoever can reach the socket is not yet the daemon: a job's process runs as the same
    // user, so only the peer's pid namespace and cgroup tell them apart (docs/security.md).
    if (auto why = peer_refusal(read_peer(fd, fds.size() == k_fds ? fds.back() : -1, policy.cgroup),
                                policy)) {
        return refuse(*why);
    }
    if (n <= 0) return refuse(n == 0 ? "no request" : "a request over 1 MiB, or unreadable");
    if (fds.size() != k_fds) {
        return refuse("a request needs exactly " + std::to_string(k_fds) + " descriptors, got " +
                      std::to_string(fds.size()));
    }
    Request r;
    std::string why;
    if (!decode(bytes, r, why)) return refuse(why);
    if (r.argv[0] != "bwrap" && r.argv[0] != bwrap)
        return refuse("this launcher starts only bubblewrap, not " + r.argv[0]);

    std::vector<char*> argv, envp;
    for (auto& a : r.argv) argv.push_back(a.data());
    argv.push_back(nullptr);
    for (auto& e : r.env) envp.push_back(e.data());
    envp.push_back(nullptr);
    sigset_t chld, before;
    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);
    ::sigprocmask(SIG_BLOCK, &chld, &before);
    int sfd = ::signalfd(-1, &chld, SFD_CLOEXEC);
    if (sfd < 0) return refuse(std::string("signalfd: ") + std::strerror(errno));
    pid_t child = ::fork();
    if (child < 0) return refuse(std::string("fork: ") + std::strerror(errno));
    if (child == 0) {
        ::sigprocmask(SIG_SETMASK, &before, nullptr);
        ::setpgid(0, 0);
        for (int i = 0; i < 3; ++i) {
            if (::dup2(fds[static_cast<std::size_t>(i)], i) < 0) ::_exit(125);
        }
        ::close_range(3, ~0U, 0);
        if (::chdir(r.cwd.c_str()) != 0) ::_exit(126);
        ::execve(bwrap.c_str(), argv.data(), envp.data());
        ::_exit(127);
    }
    ::setpgid(child, child);
    // The command holds the client's descriptors now; the launcher keeps none of them.
    for (int f : fds) ::close(f);
    fds.clear();
    send_text(fd, "started " + std::to_string(child));

    return relay_until_exit(fd, sfd, child);
}

int client_main(int argc, char** argv, char** envp) {
    if (argc < 5 || std::strcmp(argv[3], "--") != 0) {
        std::fprintf(stderr, "usage: crcrd --sandbox-connect SOCKET -- bwrap ARGS...\n");
        return 2;
    }
    const int status = run_client(argv[2], std::vector<std::string>(argv + 4, argv + argc), envp);
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    // Ended by a signal: end the same way, so that the supervisor reports the same signal.
    const int sig = WIFSIGNALED(status) ? WTERMSIG(status) : SIGKILL;
    ::signal(sig, SIG_DFL);
    sigset_t one;
    sigemptyset(&one);
    sigaddset(&one, sig);
    ::sigprocmask(SIG_UNBLOCK, &one, nullptr);
    ::kill(::getpid(), sig);
    return 128 + sig;
}

int serve_main(int argc, char** argv) {
    // crcrd --sandbox-serve [--peer-cgroup PATH] [BWRAP]
    std::optional<std::string> cgroup;
    std::string bwrap = "/usr/bin/bwrap";
    int i = 2;
    if (i + 1 < argc && std::strcmp(argv[i], "--peer-cgroup") == 0) {
        cgroup = argv[i + 1];
        i += 2;
    }
    if (i < argc) bwrap = argv[i++];
    if (i != argc || (cgroup && (cgroup->empty() || cgroup->front() != '/'))) {
        std::fprintf(stderr, "usage: crcrd --sandbox-serve [--peer-cgroup /CGROUP/PATH] [BWRAP]\n");
        return 2;
    }
    if (::sd_listen_fds(1) != 1) {
        std::fprintf(stderr,
                     "crcrd --sandbox-serve: not started by socket activation with one connection "
                     "(crcrd-sandbox.socket, Accept=yes)\n");
        return 2;
    }
    return serve(SD_LISTEN_FDS_START, bwrap, own_policy(std::move(cgroup)));
}

}  // namespace crcrd::exec::sandbox
