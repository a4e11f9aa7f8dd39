#pragma once
// Real child processes for tests: spawn with output to a file, signal, wait with a deadline.

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace crcrd {

class Process {
  public:
    /// Starts argv[0] (looked up in PATH) with stdout and stderr appended to `log`, and
    /// `env` ("NAME=value") added to the inherited environment.
    Process(const std::vector<std::string>& argv, const std::filesystem::path& log,
            const std::vector<std::string>& env = {});
    /// SIGKILLs the child if it still runs.
    ~Process();
    Process(const Process&) = delete;
    Process& operator=(const Process&) = delete;

    pid_t pid() const { return m_pid; }
    bool running();
    void signal(int sig);
    /// The exit code (128+signal when killed), or nullopt if still running after `timeout`.
    std::optional<int> wait_for(std::chrono::milliseconds timeout);

  private:
    pid_t m_pid = -1;
    std::optional<int> m_status;
};

/// Runs a command to completion; returns its exit code and fills `output` (stdout+stderr).
int run_command(const std::vector<std::string>& argv, std::string* output = nullptr,
                const std::string& stdin_text = "");

/// Runs git with a test identity (user.name, user.email) and `args`; its output (stdout and
/// stderr), trimmed. Throws std::runtime_error with that output when git fails.
std::string run_test_git(std::vector<std::string> args);

/// Polls `cond` until it is true or `timeout` passes; returns the last value.
bool eventually(const std::function<bool()>& cond,
                std::chrono::milliseconds timeout = std::chrono::seconds(20));

}  // namespace crcrd
