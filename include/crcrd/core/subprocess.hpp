#pragma once
// Running a helper program (git, a health check) by execve, never through a shell, with a
// deadline: on timeout its whole process group is killed.

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
    std::size_t max_output = 64 * 1024 * 1024;        // stdout beyond this is dropped
    std::optional<std::filesystem::path> cwd;
    std::optional<std::vector<std::string>> env;      // "NAME=value"; default: inherit
};

struct SubprocessResult {
    int exit_code = -1;      // -1 when killed by a signal
    int signal = 0;
    bool timed_out = false;
    std::string out;         // stdout
    std::string err;         // stderr (at most 64 KiB, for messages)
};

/// Where `name` (no slash) is found on $PATH as an executable file; nullopt when it is not.
std::optional<std::filesystem::path> find_in_path(const std::string& name);

/// Runs argv[0] (an absolute path, or looked up in PATH) with argv. Errors only when it
/// could not be started; a non-zero exit is a result, not an error.
Result<SubprocessResult> run_subprocess(const std::vector<std::string>& argv, const SubprocessOptions& opts = {});

}  // namespace crcrd
