#include "support/process.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <stdexcept>
#include <thread>

namespace crcrd {

namespace {
std::vector<char*> c_argv(const std::vector<std::string>& argv) {
    std::vector<char*> out;
    for (const auto& a : argv) out.push_back(const_cast<char*>(a.c_str()));
    out.push_back(nullptr);
    return out;
}

int decode(int status) {
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
    return -1;
}
}  // namespace

Process::Process(const std::vector<std::string>& argv, const std::filesystem::path& log,
                 const std::vector<std::string>& env) {
    int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) throw std::runtime_error("cannot open " + log.string());
    auto args = c_argv(argv);
    m_pid = ::fork();
    if (m_pid == 0) {
        ::dup2(fd, 1);
        ::dup2(fd, 2);
        int devnull = ::open("/dev/null", O_RDONLY);
        ::dup2(devnull, 0);
        // Nothing else of the test process: a daemon it starts (munged) would otherwise keep
        // an inherited descriptor, such as a lock a test runner holds, open for good.
        ::close_range(3, ~0U, 0);
        for (const auto& e : env) ::putenv(const_cast<char*>(e.c_str()));
        ::execvp(args[0], args.data());
        ::_exit(127);
    }
    ::close(fd);
    if (m_pid < 0) throw std::runtime_error("fork failed");
}

Process::~Process() {
    if (running()) {
        ::kill(m_pid, SIGKILL);
        wait_for(std::chrono::seconds(10));
    }
}

bool Process::running() {
    if (m_status) return false;
    int status = 0;
    pid_t r = ::waitpid(m_pid, &status, WNOHANG);
    if (r == m_pid) {
        m_status = decode(status);
        return false;
    }
    return r == 0;
}

void Process::signal(int sig) {
    if (!m_status) ::kill(m_pid, sig);
}

std::optional<int> Process::wait_for(std::chrono::milliseconds timeout) {
    auto until = std::chrono::steady_clock::now() + timeout;
    while (running()) {
        if (std::chrono::steady_clock::now() >= until) return std::nullopt;
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return m_status;
}

int run_command(const std::vector<std::string>& argv, std::string* output,
                const std::string& stdin_text) {
    int out_pipe[2], in_pipe[2];
    if (::pipe2(out_pipe, O_CLOEXEC) != 0 || ::pipe2(in_pipe, O_CLOEXEC) != 0)
        throw std::runtime_error("pipe failed");
    auto args = c_argv(argv);
    pid_t pid = ::fork();
    if (pid == 0) {
        ::dup2(in_pipe[0], 0);
        ::dup2(out_pipe[1], 1);
        ::dup2(out_pipe[1], 2);
        ::close_range(3, ~0U, 0);
        ::execvp(args[0], args.data());
        ::_exit(127);
    }
    ::close(out_pipe[1]);
    ::close(in_pipe[0]);
    std::thread writer([&] {
        // A command that exits without reading its input (a usage error) makes the write fail
        // with EPIPE; the signal, blocked on this thread, would otherwise kill the test.
        sigset_t pipe_signal;
        ::sigemptyset(&pipe_signal);
        ::sigaddset(&pipe_signal, SIGPIPE);
        ::pthread_sigmask(SIG_BLOCK, &pipe_signal, nullptr);
        std::size_t off = 0;
        while (off < stdin_text.size()) {
            ssize_t n = ::write(in_pipe[1], stdin_text.data() + off, stdin_text.size() - off);
            if (n <= 0) break;
            off += static_cast<std::size_t>(n);
        }
        ::close(in_pipe[1]);
    });
    std::string out;
    char buf[4096];
    ssize_t n;
    while ((n = ::read(out_pipe[0], buf, sizeof buf)) > 0)
        out.append(buf, static_cast<std::size_t>(n));
    ::close(out_pipe[0]);
    writer.join();
    int status = 0;
    ::waitpid(pid, &status, 0);
    if (output) *output = std::move(out);
    return decode(status);
}

std::string run_test_git(std::vector<std::string> args) {
    args.insert(args.begin(), {"git", "-c", "user.name=test", "-c", "user.email=test@example.org"});
    std::string out;
    if (run_command(args, &out) != 0) throw std::runtime_error("git failed: " + out);
    while (!out.empty() && (out.back() == '\n' || out.back() == '\r' || out.back() == ' '))
        out.pop_back();
    return out;
}

bool eventually(const std::function<bool()>& cond, std::chrono::milliseconds timeout) {
    auto until = std::chrono::steady_clock::now() + timeout;
    for (;;) {
        if (cond()) return true;
        if (std::chrono::steady_clock::now() >= until) return cond();
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
}

}  // namespace crcrd
