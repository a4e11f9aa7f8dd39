#include "crcrd/exec/supervisor.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <grp.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <dirent.h>

#include <cerrno>
#include <cstring>
#include <fstream>

namespace crcrd::exec {

namespace {

using Clock = std::chrono::steady_clock;

/// argv[0] as execve needs it: absolute or relative with a slash as given, else searched in
/// the PATH of the job's own environment (never the daemon's).
std::optional<std::string> resolve(const std::string& prog, const std::vector<std::string>& env) {
    if (prog.find('/') != std::string::npos) return prog;
    std::string path = "/usr/bin:/bin";
    for (const auto& e : env)
        if (e.rfind("PATH=", 0) == 0) path = e.substr(5);
    std::size_t start = 0;
    while (start <= path.size()) {
        auto end = path.find(':', start);
        std::string dir = path.substr(start, end == std::string::npos ? std::string::npos : end - start);
        std::string candidate = (dir.empty() ? "." : dir) + "/" + prog;
        if (::access(candidate.c_str(), X_OK) == 0) return candidate;
        if (end == std::string::npos) break;
        start = end + 1;
    }
    return std::nullopt;
}

/// Keeps the first half of the budget in the file as it comes, the last half in a ring,
/// and writes the ring after a marker at the end.
class CappedLog {
public:
    CappedLog(int fd, std::uint64_t max) : m_fd(fd), m_head_max(max / 2), m_tail_max(max - max / 2) {}

    void write(const char* p, std::size_t n) {
        m_total += n;
        if (m_head < m_head_max) {
            std::size_t take = static_cast<std::size_t>(std::min<std::uint64_t>(n, m_head_max - m_head));
            write_all(p, take);
            m_head += take;
            p += take;
            n -= take;
        }
        if (n == 0 || m_tail_max == 0) return;
        m_ring.append(p, n);
        if (m_ring.size() > 2 * m_tail_max) m_ring.erase(0, m_ring.size() - m_tail_max);
    }
    /// Writes the tail; returns whether anything was left out.
    bool finish() {
        if (m_ring.size() > m_tail_max) m_ring.erase(0, m_ring.size() - m_tail_max);
        std::uint64_t omitted = m_total - m_head - m_ring.size();
        if (omitted > 0) {
            std::string marker = "\n[crcrd: " + std::to_string(omitted) + " bytes of output omitted]\n";
            write_all(marker.data(), marker.size());
        }
        write_all(m_ring.data(), m_ring.size());
        return omitted > 0;
    }
    std::uint64_t total() const { return m_total; }

private:
    void write_all(const char* p, std::size_t n) {
        while (n > 0) {
            ssize_t w = ::write(m_fd, p, n);
            if (w < 0 && errno == EINTR) continue;
            if (w <= 0) return;  // a full disk: the job's log is best effort, its result is not
            p += w;
            n -= static_cast<std::size_t>(w);
        }
    }
    int m_fd;
    std::uint64_t m_head_max, m_tail_max;
    std::uint64_t m_head = 0, m_total = 0;
    std::string m_ring;
};

/// The job's init process, between fork and exit (CONTRACT.md §4.1): only async-signal-safe
/// calls, because the daemon that forked it has other threads. It leads a new session, is the
/// subreaper of everything the command starts, runs the command in a process group of its own,
/// forwards the supervisor's signals to it (SIGTERM as SIGTERM, SIGUSR1 as SIGKILL), and once the
/// command has exited kills whatever it left behind (a `setsid` daemon, a double fork) before it
/// exits with the command's status. So the job's end is the end of all its processes.
namespace job_init {

volatile sig_atomic_t g_main = 0;       // the command's pid (and process group)
volatile sig_atomic_t g_pending = 0;    // a signal that came before the command was forked

void forward(int sig) {
    const int to = sig == SIGUSR1 ? SIGKILL : SIGTERM;
    if (g_main > 0) ::kill(-static_cast<pid_t>(g_main), to);
    else g_pending = to;
}

/// The 4th field of /proc/<pid>/stat, after the parenthesised command name.
pid_t parent_of(const char* pid_name) {
    char path[64] = "/proc/";
    std::size_t n = 6;
    for (const char* p = pid_name; *p && n < sizeof path - 6; ++p) path[n++] = *p;
    for (const char* p = "/stat"; *p; ++p) path[n++] = *p;
    path[n] = '\0';
    int fd = ::open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    char buf[512];
    ssize_t got = ::read(fd, buf, sizeof buf - 1);
    ::close(fd);
    if (got <= 0) return -1;
    buf[got] = '\0';
    char* close_paren = nullptr;
    for (char* p = buf; *p; ++p)
        if (*p == ')') close_paren = p;
    if (!close_paren || close_paren[1] != ' ' || !close_paren[2] || close_paren[3] != ' ') return -1;
    pid_t ppid = 0;
    for (char* p = close_paren + 4; *p >= '0' && *p <= '9'; ++p) ppid = ppid * 10 + (*p - '0');
    return ppid;
}

/// SIGKILL to every child of `self` (a subreaper's children include the orphans it adopted).
void kill_children(pid_t self) {
    int dir = ::open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir < 0) return;
    alignas(8) char buf[8192];
    for (;;) {
        ssize_t n = ::getdents64(dir, buf, sizeof buf);
        if (n <= 0) break;
        for (ssize_t off = 0; off < n;) {
            const auto* d = reinterpret_cast<const struct dirent64*>(buf + off);
            off += d->d_reclen;
            if (d->d_name[0] < '1' || d->d_name[0] > '9') continue;
            if (parent_of(d->d_name) != self) continue;
            pid_t pid = 0;
            for (const char* p = d->d_name; *p; ++p) pid = pid * 10 + (*p - '0');
            ::kill(pid, SIGKILL);
        }
    }
    ::close(dir);
}

[[noreturn]] void run(const std::string& prog, char* const* argv, char* const* envp, const ProcessSpec& spec,
                      const std::vector<gid_t>& groups, int out_fd) {
    ::setsid();
    ::prctl(PR_SET_CHILD_SUBREAPER, 1);
    struct sigaction sa {};
    sa.sa_handler = forward;
    sigemptyset(&sa.sa_mask);
    ::sigaction(SIGTERM, &sa, nullptr);
    ::sigaction(SIGUSR1, &sa, nullptr);
    // Every signal is still blocked (run_supervised forked with them blocked) and stays so
    // until the command exists: a signal that comes meanwhile waits, then goes to its group.
    sigset_t none;
    sigemptyset(&none);
    const pid_t self = ::getpid();
    pid_t main = ::fork();
    if (main < 0) ::_exit(125);
    if (main == 0) {
        struct sigaction dfl {};
        dfl.sa_handler = SIG_DFL;
        ::sigaction(SIGTERM, &dfl, nullptr);
        ::sigaction(SIGUSR1, &dfl, nullptr);
        ::sigprocmask(SIG_SETMASK, &none, nullptr);
        ::setpgid(0, 0);
        ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // dies with its init
        if (::getppid() != self) ::_exit(127);
        (void)out_fd;
        if (spec.gid && (::setgroups(groups.size(), groups.data()) != 0 || ::setgid(*spec.gid) != 0)) ::_exit(126);
        if (spec.uid && ::setuid(*spec.uid) != 0) ::_exit(126);
        if (::chdir(spec.cwd.c_str()) != 0) ::_exit(126);
        ::execve(prog.c_str(), argv, envp);
        ::_exit(127);
    }
    ::setpgid(main, main);  // both sides set it: no window where a signal to -main misses
    g_main = main;
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    if (g_pending) ::kill(-main, g_pending);
    int status = 0;
    for (;;) {
        int st = 0;
        pid_t p = ::waitpid(-1, &st, 0);
        if (p == main) {
            status = st;
            break;
        }
        if (p < 0 && errno != EINTR) ::_exit(125);
    }
    g_main = 0;
    // The command is gone: nothing it started outlives it.
    ::kill(-main, SIGKILL);
    for (;;) {
        kill_children(self);
        int st = 0;
        pid_t p = ::waitpid(-1, &st, 0);
        if (p < 0 && errno == ECHILD) break;
    }
    if (WIFEXITED(status)) ::_exit(WEXITSTATUS(status));
    const int sig = WIFSIGNALED(status) ? WTERMSIG(status) : SIGKILL;
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    ::sigaction(sig, &dfl, nullptr);
    ::kill(self, sig);
    ::_exit(128 + sig);
}

}  // namespace job_init

}  // namespace

Result<ProcessResult> run_supervised(const ProcessSpec& spec, const std::atomic<bool>* cancel) {
    if (spec.argv.empty()) return make_error("exec", "empty command");
    auto prog = resolve(spec.argv[0], spec.env);
    if (!prog) return make_error("exec", "command not found: " + spec.argv[0]);
    int log_fd = ::open(spec.log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0640);
    if (log_fd < 0) return make_error("exec", "cannot create " + spec.log_path.string() + ": " + std::strerror(errno));
    int pipe_fd[2];
    if (::pipe2(pipe_fd, O_CLOEXEC) != 0) {
        ::close(log_fd);
        return make_error("exec", std::string("pipe: ") + std::strerror(errno));
    }
    // Everything the child needs is prepared before fork: no allocation after it.
    std::vector<char*> argv, envp;
    for (const auto& a : spec.argv) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    for (const auto& e : spec.env) envp.push_back(const_cast<char*>(e.c_str()));
    envp.push_back(nullptr);
    const std::vector<gid_t>& groups = spec.groups;
    const pid_t parent = ::getpid();
    const auto started = Clock::now();

    // Signals stay blocked from before fork until the child's init has its own handlers: the
    // child starts with the daemon's handlers, and Asio's would hand a SIGTERM meant for the
    // job (a cancellation that comes right after the lease) to the daemon itself through the
    // self-pipe the two share, and the daemon would stop.
    sigset_t all, before;
    sigfillset(&all);
    ::pthread_sigmask(SIG_BLOCK, &all, &before);
    pid_t pid = ::fork();
    if (pid != 0) ::pthread_sigmask(SIG_SETMASK, &before, nullptr);
    if (pid < 0) {
        ::close(log_fd);
        ::close(pipe_fd[0]);
        ::close(pipe_fd[1]);
        return make_error("exec", std::string("fork: ") + std::strerror(errno));
    }
    if (pid == 0) {
        // The daemon's handlers are not the job's: every signal back to its default (init
        // then installs its own and unblocks).
        struct sigaction dfl {};
        dfl.sa_handler = SIG_DFL;
        for (int sig = 1; sig < NSIG; ++sig) {
            if (sig != SIGKILL && sig != SIGSTOP) ::sigaction(sig, &dfl, nullptr);
        }
        ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // dies with the daemon
        if (::getppid() != parent) ::_exit(127);
        int devnull = ::open("/dev/null", O_RDONLY);
        ::dup2(devnull, 0);
        ::dup2(pipe_fd[1], 1);
        ::dup2(pipe_fd[1], 2);
        // Nothing of the daemon's is inherited: listening socket, connections, database (§4.1).
        ::close_range(3, ~0U, 0);
        job_init::run(*prog, argv.data(), envp.data(), spec, groups, 1);
    }
    ::close(pipe_fd[1]);
    if (spec.on_start) spec.on_start(pid);

    ProcessResult r;
    r.pgid = pid;
    CappedLog log(log_fd, spec.max_log_bytes);
    auto last_output = started;
    const auto deadline = started + spec.timeout;
    // After SIGTERM: SIGKILL of the command at `kill_at`, of its init a grace later.
    std::optional<Clock::time_point> kill_at, last_resort_at;
    std::optional<Clock::time_point> exited_at;
    bool pipe_open = true;
    int status = 0;
    char buf[65536];

    auto terminate = [&](bool& flag) {
        if (kill_at) return;
        flag = true;
        ::kill(pid, SIGTERM);  // the init forwards it to the command's group
        kill_at = Clock::now() + spec.kill_grace;
    };
    while (pipe_open || !exited_at) {
        auto now = Clock::now();
        if (!exited_at) {
            if (::waitpid(pid, &status, WNOHANG) == pid) exited_at = now;
        }
        if (!kill_at && !exited_at) {
            if (now >= deadline) terminate(r.timed_out);
            else if (now - last_output >= spec.stall_timeout) terminate(r.stalled);
            else if (cancel && cancel->load()) {
                bool ignored = false;
                terminate(ignored);
            }
        }
        if (kill_at && !last_resort_at && now >= *kill_at && !exited_at) {
            ::kill(pid, SIGUSR1);  // the init: SIGKILL to the command's group
            last_resort_at = now + spec.kill_grace;
        }
        if (last_resort_at && now >= *last_resort_at && !exited_at) {
            ::kill(pid, SIGKILL);
            last_resort_at = Clock::time_point::max();
        }
        if (!pipe_open) {
            ::usleep(5000);  // only waiting for the exit status now
            continue;
        }
        // Once the init exited every process of the job is gone; a descriptor passed on to
        // something else must not keep the job open: a grace period, then it is closed.
        if (exited_at && now - *exited_at >= spec.kill_grace) break;
        auto next = std::min({deadline, last_output + spec.stall_timeout, now + std::chrono::milliseconds(100)});
        if (kill_at) next = std::min(next, *kill_at);
        int wait_ms = static_cast<int>(std::max<long long>(
            0, std::chrono::duration_cast<std::chrono::milliseconds>(next - now).count()));
        pollfd p{pipe_fd[0], POLLIN, 0};
        int rc = ::poll(&p, 1, exited_at ? std::min(wait_ms, 10) : wait_ms);
        if (rc > 0) {
            ssize_t n = ::read(pipe_fd[0], buf, sizeof buf);
            if (n > 0) {
                log.write(buf, static_cast<std::size_t>(n));
                last_output = Clock::now();
            } else if (n == 0 || errno != EINTR) {
                pipe_open = false;
            }
        }
    }
    ::close(pipe_fd[0]);
    r.log_truncated = log.finish();
    r.output_bytes = log.total();
    ::close(log_fd);
    if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
    if (WIFSIGNALED(status)) r.signal = WTERMSIG(status);
    r.duration = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - started);
    return r;
}

}  // namespace crcrd::exec
