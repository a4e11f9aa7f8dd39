#include "crcrd/core/subprocess.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace crcrd {

namespace {
void close_fd(int& fd) {
    if (fd >= 0) ::close(fd);
    fd = -1;
}
}  // namespace

std::optional<std::filesystem::path> find_in_path(const std::string& name) {
    const char* path = ::getenv("PATH");
    std::string dirs = path ? path : "/usr/local/bin:/usr/bin:/bin";
    std::size_t pos = 0;
    while (pos <= dirs.size()) {
        auto end = dirs.find(':', pos);
        if (end == std::string::npos) end = dirs.size();
        std::filesystem::path candidate = std::filesystem::path(dirs.substr(pos, end - pos).empty()
                                                                    ? "."
                                                                    : dirs.substr(pos, end - pos)) /
                                          name;
        std::error_code ec;
        if (std::filesystem::is_regular_file(candidate, ec) &&
            ::access(candidate.c_str(), X_OK) == 0)
            return candidate;
        pos = end + 1;
    }
    return std::nullopt;
}

int spawn_process(pid_t& pid, const char* path, char* const argv[], char* const envp[],
                  const SpawnOptions& opts) {
    posix_spawnattr_t attr;
    posix_spawn_file_actions_t files;
    ::posix_spawnattr_init(&attr);
    ::posix_spawn_file_actions_init(&files);
    sigset_t mask, all;
    sigfillset(&all);
    if (opts.signals_blocked)
        sigfillset(&mask);
    else
        sigemptyset(&mask);
    ::posix_spawnattr_setsigmask(&attr, &mask);
    ::posix_spawnattr_setsigdefault(&attr, &all);
    short flags = POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF;
    if (opts.own_process_group) {
        ::posix_spawnattr_setpgroup(&attr, 0);
        flags |= POSIX_SPAWN_SETPGROUP;
    }
    ::posix_spawnattr_setflags(&attr, flags);
    ::posix_spawn_file_actions_addopen(&files, 0, "/dev/null", O_RDONLY, 0);
    ::posix_spawn_file_actions_adddup2(&files, opts.out_fd, 1);
    ::posix_spawn_file_actions_adddup2(&files, opts.err_fd, 2);
    ::posix_spawn_file_actions_addclosefrom_np(&files, 3);
    if (opts.cwd) ::posix_spawn_file_actions_addchdir_np(&files, opts.cwd);
    const int rc = opts.search_path ? ::posix_spawnp(&pid, path, &files, &attr, argv, envp)
                                    : ::posix_spawn(&pid, path, &files, &attr, argv, envp);
    ::posix_spawn_file_actions_destroy(&files);
    ::posix_spawnattr_destroy(&attr);
    return rc;
}

Result<SubprocessResult> run_subprocess(const std::vector<std::string>& argv,
                                        const SubprocessOptions& opts) {
    if (argv.empty()) return make_error(Errc::exec, "empty command");
    int out_pipe[2], err_pipe[2];
    if (::pipe2(out_pipe, O_CLOEXEC) != 0)
        return make_error(Errc::exec, std::string("pipe: ") + std::strerror(errno));
    if (::pipe2(err_pipe, O_CLOEXEC) != 0) {
        ::close(out_pipe[0]);
        ::close(out_pipe[1]);
        return make_error(Errc::exec, std::string("pipe: ") + std::strerror(errno));
    }
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    std::vector<char*> envp;
    if (opts.env) {
        for (const auto& e : *opts.env) envp.push_back(const_cast<char*>(e.c_str()));
        envp.push_back(nullptr);
    }
    pid_t pid = 0;
    SpawnOptions spawn;
    spawn.out_fd = out_pipe[1];
    spawn.err_fd = err_pipe[1];
    spawn.search_path = true;
    spawn.own_process_group = true;
    spawn.cwd = opts.cwd ? opts.cwd->c_str() : nullptr;
    const int rc =
        spawn_process(pid, args[0], args.data(), opts.env ? envp.data() : environ, spawn);
    if (rc != 0) {
        for (int fd : {out_pipe[0], out_pipe[1], err_pipe[0], err_pipe[1]}) ::close(fd);
        return make_error(Errc::exec, "cannot execute " + argv[0] +
                                          (opts.cwd ? " in " + opts.cwd->string() : "") + ": " +
                                          std::strerror(rc));
    }
    ::setpgid(pid, pid);
    ::close(out_pipe[1]);
    ::close(err_pipe[1]);
    int fds[2] = {out_pipe[0], err_pipe[0]};
    SubprocessResult r;
    auto deadline = std::chrono::steady_clock::now() + opts.timeout;
    char buf[65536];
    while (fds[0] >= 0 || fds[1] >= 0) {
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
            deadline - std::chrono::steady_clock::now());
        if (left.count() <= 0) {
            r.timed_out = true;
            ::kill(-pid, SIGKILL);
            break;
        }
        pollfd p[2];
        int n = 0;
        for (int fd : fds)
            if (fd >= 0) p[n++] = pollfd{fd, POLLIN, 0};
        int rc = ::poll(p, static_cast<nfds_t>(n),
                        static_cast<int>(std::min<long long>(left.count(), 1000)));
        if (rc < 0 && errno != EINTR) break;
        for (int i = 0; i < n; ++i) {
            if (!(p[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
            ssize_t got = ::read(p[i].fd, buf, sizeof buf);
            int& fd = p[i].fd == fds[0] ? fds[0] : fds[1];
            std::string& sink = p[i].fd == fds[0] ? r.out : r.err;
            std::size_t cap = p[i].fd == fds[0] ? opts.max_output : 64 * 1024;
            if (got <= 0) {
                close_fd(fd);
            } else if (sink.size() < cap) {
                sink.append(buf, std::min(static_cast<std::size_t>(got), cap - sink.size()));
            }
        }
    }
    close_fd(fds[0]);
    close_fd(fds[1]);
    int status = 0;
    ::waitpid(pid, &status, 0);
    if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
    if (WIFSIGNALED(status)) r.signal = WTERMSIG(status);
    if (r.exit_code == 127 && r.out.empty() && r.err.empty()) {
        return make_error(Errc::exec, "cannot execute " + argv[0]);
    }
    return r;
}

}  // namespace crcrd
