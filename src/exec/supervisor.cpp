#include "crcrd/exec/supervisor.hpp"

#include "crcrd/core/files.hpp"
#include "crcrd/core/subprocess.hpp"

#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

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
        std::string dir =
            path.substr(start, end == std::string::npos ? std::string::npos : end - start);
        std::string candidate = (dir.empty() ? "." : dir) + "/" + prog;
        if (::access(candidate.c_str(), X_OK) == 0) return candidate;
        if (end == std::string::npos) break;
        start = end + 1;
    }
    return std::nullopt;
}

}  // namespace

Result<std::string> job_init_program() {
    const auto dir = std::filesystem::path(self_executable()).parent_path();
    std::string tried;
    for (const auto& candidate : {dir / "crcrd-job-init", dir / "../libexec/crcrd/crcrd-job-init",
                                  dir / "../crcrd-job-init"}) {
        const auto path = candidate.lexically_normal();
        if (::access(path.c_str(), X_OK) == 0) return path.string();
        tried += (tried.empty() ? "" : ", ") + path.string();
    }
    return make_error(
        Errc::exec,
        "crcrd-job-init, the jobs' init program, is not installed (looked for " + tried + ")");
}

namespace {

/// Keeps the first half of the budget in the file as it comes, the last half in a ring,
/// and writes the ring after a marker at the end.
class CappedLog {
  public:
    CappedLog(int fd, std::uint64_t max)
        : m_fd(fd), m_head_max(max / 2), m_tail_max(max - max / 2) {}

    void write(const char* p, std::size_t n) {
        m_total += n;
        if (m_head < m_head_max) {
            std::size_t take =
                static_cast<std::size_t>(std::min<std::uint64_t>(n, m_head_max - m_head));
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
            std::string marker =
                "\n[crcrd: " + std::to_string(omitted) + " bytes of output omitted]\n";
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

/// The job init's command line (src/main/crcrd-job-init.cpp reads it in this order): the
/// daemon's pid, the working directory, uid, gid and groups ("-" for none), the program, argv.
std::vector<std::string> init_arguments(const ProcessSpec& spec, const std::string& init,
                                        const std::string& prog) {
    auto id_or_none = [](const auto& id) { return id ? std::to_string(*id) : std::string("-"); };
    std::string groups;
    for (gid_t g : spec.groups) groups += (groups.empty() ? "" : ",") + std::to_string(g);
    std::vector<std::string> init_args = {init,
                                          std::to_string(::getpid()),
                                          spec.cwd.string(),
                                          id_or_none(spec.uid),
                                          id_or_none(spec.gid),
                                          groups.empty() ? "-" : groups,
                                          prog};
    init_args.insert(init_args.end(), spec.argv.begin(), spec.argv.end());
    return init_args;
}

/// Copies the job's output from out_fd into log until its init exited and the output ended
/// (or a grace after the exit), ending it at the deadline, on a stall or a cancellation;
/// returns the init's wait status.
int supervise(pid_t pid, int out_fd, const ProcessSpec& spec, const std::atomic<bool>* cancel,
              Clock::time_point started, CappedLog& log, ProcessResult& r) {
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
            if (now >= deadline)
                terminate(r.timed_out);
            else if (now - last_output >= spec.stall_timeout)
                terminate(r.stalled);
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
        auto next = std::min(
            {deadline, last_output + spec.stall_timeout, now + std::chrono::milliseconds(100)});
        if (kill_at) next = std::min(next, *kill_at);
        int wait_ms = static_cast<int>(std::max<long long>(
            0, std::chrono::duration_cast<std::chrono::milliseconds>(next - now).count()));
        pollfd p{out_fd, POLLIN, 0};
        int rc = ::poll(&p, 1, exited_at ? std::min(wait_ms, 10) : wait_ms);
        if (rc > 0) {
            ssize_t n = ::read(out_fd, buf, sizeof buf);
            if (n > 0) {
                log.write(buf, static_cast<std::size_t>(n));
                last_output = Clock::now();
            } else if (n == 0 || errno != EINTR) {
                pipe_open = false;
            }
        }
    }
    return status;
}

}  // namespace

Result<ProcessResult> run_supervised(const ProcessSpec& spec, const std::atomic<bool>* cancel) {
    if (spec.argv.empty()) return make_error(Errc::exec, "empty command");
    auto prog = resolve(spec.argv[0], spec.env);
    if (!prog) return make_error(Errc::exec, "command not found: " + spec.argv[0]);
    int log_fd = ::open(spec.log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0640);
    if (log_fd < 0)
        return make_error(Errc::exec,
                          "cannot create " + spec.log_path.string() + ": " + std::strerror(errno));
    int pipe_fd[2];
    if (::pipe2(pipe_fd, O_CLOEXEC) != 0) {
        ::close(log_fd);
        return make_error(Errc::exec, std::string("pipe: ") + std::strerror(errno));
    }
    const auto init = job_init_program();
    if (!init) {
        ::close(log_fd);
        ::close(pipe_fd[0]);
        ::close(pipe_fd[1]);
        return make_error(Errc::exec, init.error().message);
    }
    // The job's init (src/main/crcrd-job-init.cpp) is a program of its own, spawned without
    // copying the daemon (posix_spawn: vfork semantics): a forked daemon would share its
    // memory copy-on-write for as long as the job runs.
    std::vector<std::string> init_args = init_arguments(spec, *init, *prog);
    std::vector<char*> argv, envp;
    for (auto& a : init_args) argv.push_back(a.data());
    argv.push_back(nullptr);
    for (const auto& e : spec.env) envp.push_back(const_cast<char*>(e.c_str()));
    envp.push_back(nullptr);
    const auto started = Clock::now();

    // The init starts with every signal blocked and at its default action: the daemon's
    // handlers are not the job's, and Asio's would hand a SIGTERM meant for the job (a
    // cancellation that comes right after the lease) to the daemon itself through the
    // self-pipe the two share. It installs its own handlers and unblocks.
    pid_t pid = 0;
    SpawnOptions spawn;
    spawn.out_fd = spawn.err_fd = pipe_fd[1];
    spawn.signals_blocked = true;
    const int rc = spawn_process(pid, init->c_str(), argv.data(), envp.data(), spawn);
    if (rc != 0) {
        ::close(log_fd);
        ::close(pipe_fd[0]);
        ::close(pipe_fd[1]);
        return make_error(Errc::exec, "cannot start " + *init + ": " + std::strerror(rc));
    }
    ::close(pipe_fd[1]);
    if (spec.on_start) spec.on_start(pid);

    ProcessResult r;
    r.pgid = pid;
    CappedLog log(log_fd, spec.max_log_bytes);
    const int status = supervise(pid, pipe_fd[0], spec, cancel, started, log, r);
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
