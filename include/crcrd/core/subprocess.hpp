#pragma once
// Running a helper program (git, a health check) by execve, never through a shell, with a
// deadline: on timeout its whole process group is killed.

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "crcrd/core/result.hpp"

namespace crcrd {

struct SubprocessOptions {
    std::chrono::milliseconds timeout{std::chrono::minutes(10)};
    std::size_t max_output = 64 * 1024 * 1024;  // stdout beyond this is dropped
    std::optional<std::filesystem::path> cwd;
    std::optional<std::vector<std::string>> env;  // "NAME=value"; default: inherit
};

struct SubprocessResult {
    int exit_code = -1;  // -1 when killed by a signal
    int signal = 0;
    bool timed_out = false;
    std::string out;  // stdout
    std::string err;  // stderr (at most 64 KiB, for messages)
};

/// Where `name` (no slash) is found on $PATH as an executable file; nullopt when it is not.
std::optional<std::filesystem::path> find_in_path(const std::string& name);

/// How spawn_process() starts a child.
struct SpawnOptions {
    int out_fd = 1, err_fd = 2;      // become its stdout and stderr; stdin is /dev/null
    bool search_path = false;        // argv[0] without a slash is looked up in this process's PATH
    bool own_process_group = false;  // leads a process group of its own
    bool signals_blocked = false;    // starts with every signal blocked (else none)
    const char* cwd = nullptr;       // its folder, else this process's
};

/// Starts `path` with `argv` and `envp` through posix_spawn, never a fork of this process (a
/// forked daemon shares its memory copy-on-write until the child execs: docs/performance.md).
/// The child has every signal at its default action and no descriptor of this process but
/// 0, 1 and 2 (docs/execution.md), whether or not it was opened with O_CLOEXEC. Returns 0 and sets
/// `pid`, or posix_spawn's error number.
int spawn_process(pid_t& pid, const char* path, char* const argv[], char* const envp[],
                  const SpawnOptions& opts);

/// Runs argv[0] (an absolute path, or looked up in PATH) with argv. Errors only when it
/// could not be started; a non-zero exit is a result, not an error.
Result<SubprocessResult> run_subprocess(const std::vector<std::string>& argv,
                                        const SubprocessOptions& opts = {});

}  // namespace crcrd
