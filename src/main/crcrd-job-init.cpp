// crcrd-job-init: the init process of one job (docs/execution.md), started by the daemon's
// supervisor (src/exec/supervisor.cpp) with posix_spawn. It leads a new session, is the
// subreaper of everything the command starts, runs the command in a process group of its own,
// forwards the supervisor's signals to it (SIGTERM as SIGTERM, SIGUSR1 as SIGKILL), and once
// the command has exited kills whatever it left behind (a `setsid` daemon, a double fork)
// before it exits with the command's status. So the job's end is the end of all its processes.
//
// A program of its own, linked with nothing but the C library, rather than a fork of the
// daemon: a forked daemon would share the daemon's memory copy-on-write for the whole job,
// and every page the daemon then wrote would cost it a fault and a TLB shootdown
// (docs/performance.md).
//
// usage: crcrd-job-init PARENT_PID CWD UID GID GROUPS PROGRAM ARGV0 [ARG...]
//   UID, GID: a number, or "-" to keep the daemon's; GROUPS: comma-separated gids or "-".
//   The environment is the command's. The supervisor starts it with every signal blocked and
//   at its default action, stdin /dev/null, stdout and stderr the job's log pipe, and no other
//   descriptor.
// Exit: the command's status (or its signal, raised again); 125 when the init itself fails,
// 126 when the command's user, group or folder cannot be taken, 127 when it cannot be executed
// or the daemon is already gone.

#include <dirent.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

volatile sig_atomic_t g_main = 0;     // the command's pid (and process group)
volatile sig_atomic_t g_pending = 0;  // a signal that came before the command was forked

void forward(int sig) {
    const int to = sig == SIGUSR1 ? SIGKILL : SIGTERM;
    if (g_main > 0)
        ::kill(-static_cast<pid_t>(g_main), to);
    else
        g_pending = to;
}

/// The 4th field of /proc/<pid>/stat, after the parenthesised command name.
pid_t parent_of(const char* pid_name) {
    char path[300];  // a d_name is at most 255 bytes
    std::snprintf(path, sizeof path, "/proc/%s/stat", pid_name);
    int fd = ::open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    char buf[512];
    ssize_t got = ::read(fd, buf, sizeof buf - 1);
    ::close(fd);
    if (got <= 0) return -1;
    buf[got] = '\0';
    char* close_paren = std::strrchr(buf, ')');
    if (!close_paren || close_paren[1] != ' ' || !close_paren[2] || close_paren[3] != ' ')
        return -1;
    return static_cast<pid_t>(std::strtol(close_paren + 4, nullptr, 10));
}

/// SIGKILL to every child of `self` (a subreaper's children include the orphans it adopted).
void kill_children(pid_t self) {
    DIR* dir = ::opendir("/proc");
    if (!dir) return;
    while (const dirent* d = ::readdir(dir)) {
        if (d->d_name[0] < '1' || d->d_name[0] > '9') continue;
        if (parent_of(d->d_name) != self) continue;
        ::kill(static_cast<pid_t>(std::strtol(d->d_name, nullptr, 10)), SIGKILL);
    }
    ::closedir(dir);
}

/// A decimal id, or "-" for none; false when it is neither.
bool parse_id(const char* s, long& out) {
    if (std::strcmp(s, "-") == 0) {
        out = -1;
        return true;
    }
    char* end = nullptr;
    errno = 0;
    out = std::strtol(s, &end, 10);
    return errno == 0 && end != s && *end == '\0' && out >= 0;
}

bool parse_groups(const char* s, std::vector<gid_t>& out) {
    if (std::strcmp(s, "-") == 0) return true;
    for (const char* p = s;;) {
        char* end = nullptr;
        errno = 0;
        long g = std::strtol(p, &end, 10);
        if (errno != 0 || end == p || g < 0) return false;
        out.push_back(static_cast<gid_t>(g));
        if (*end == '\0') return true;
        if (*end != ',') return false;
        p = end + 1;
    }
}

/// The forked command's side: default signal actions, its own process group, the job's
/// user, group and folder, then the program. Never returns.
[[noreturn]] void exec_command(pid_t self, const sigset_t& none, long uid, long gid,
                               const std::vector<gid_t>& groups, const char* cwd, const char* prog,
                               char** cmd_argv, char** envp) {
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    ::sigaction(SIGTERM, &dfl, nullptr);
    ::sigaction(SIGUSR1, &dfl, nullptr);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // dies with its init
    if (::getppid() != self) ::_exit(127);
    if (gid >= 0 &&
        (::setgroups(groups.size(), groups.data()) != 0 || ::setgid(static_cast<gid_t>(gid)) != 0))
        ::_exit(126);
    if (uid >= 0 && ::setuid(static_cast<uid_t>(uid)) != 0) ::_exit(126);
    if (::chdir(cwd) != 0) ::_exit(126);
    ::execve(prog, cmd_argv, envp);
    ::_exit(127);
}

/// Ends the init as the command ended: its exit status, or its signal raised again.
int exit_like(int status, pid_t self) {
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    const int sig = WIFSIGNALED(status) ? WTERMSIG(status) : SIGKILL;
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    ::sigaction(sig, &dfl, nullptr);
    ::kill(self, sig);
    return 128 + sig;
}

}  // namespace

int main(int argc, char** argv, char** envp) {
    if (argc < 8) {
        std::fprintf(
            stderr, "usage: crcrd-job-init PARENT_PID CWD UID GID GROUPS PROGRAM ARGV0 [ARG...]\n");
        return 125;
    }
    long parent = 0, uid = -1, gid = -1;
    std::vector<gid_t> groups;
    if (!parse_id(argv[1], parent) || !parse_id(argv[3], uid) || !parse_id(argv[4], gid) ||
        !parse_groups(argv[5], groups)) {
        std::fprintf(stderr, "crcrd-job-init: malformed arguments\n");
        return 125;
    }
    // Dies with the daemon; if the daemon is already gone, nothing starts.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != static_cast<pid_t>(parent)) return 127;
    const char* cwd = argv[2];
    const char* prog = argv[6];
    char** cmd_argv = argv + 7;

    ::setsid();
    ::prctl(PR_SET_CHILD_SUBREAPER, 1);
    struct sigaction sa {};
    sa.sa_handler = forward;
    sigemptyset(&sa.sa_mask);
    ::sigaction(SIGTERM, &sa, nullptr);
    ::sigaction(SIGUSR1, &sa, nullptr);
    // Every signal is still blocked (the supervisor spawned the init so) and stays so until the
    // command exists: a signal that comes meanwhile waits, then goes to its group.
    sigset_t none;
    sigemptyset(&none);
    const pid_t self = ::getpid();
    const pid_t command = ::fork();
    if (command < 0) return 125;
    if (command == 0) exec_command(self, none, uid, gid, groups, cwd, prog, cmd_argv, envp);
    ::setpgid(command, command);  // both sides set it: no window where a signal to the group misses
    g_main = command;
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    if (g_pending) ::kill(-command, g_pending);
    int status = 0;
    for (;;) {
        int st = 0;
        pid_t p = ::waitpid(-1, &st, 0);
        if (p == command) {
            status = st;
            break;
        }
        if (p < 0 && errno != EINTR) return 125;
    }
    g_main = 0;
    // The command is gone: nothing it started outlives it.
    ::kill(-command, SIGKILL);
    for (;;) {
        kill_children(self);
        int st = 0;
        pid_t p = ::waitpid(-1, &st, 0);
        if (p < 0 && errno == ECHILD) break;
    }
    return exit_like(status, self);
}
