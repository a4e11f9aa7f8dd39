#pragma once
// Supervising one test command (docs/execution.md): execve (never a shell) in its own
// process group under a small init process of the job's (`crcrd-job-init`, spawned without
// copying the daemon; a new session, the subreaper of
// everything the command starts), in its job directory, with exactly the environment given;
// a tier timeout and a stall timeout (no output), each ending in SIGTERM to the command's
// group and SIGKILL after a grace period; when the command exits, whatever it left behind is
// killed; nothing of the daemon's descriptors is inherited; children that die with the daemon;
// stdout+stderr into a log capped to its head and tail. Blocking: run it on an executor thread.

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "crcrd/core/result.hpp"

namespace crcrd::exec {

struct ProcessSpec {
    std::vector<std::string> argv;   // argv[0]: absolute, or looked up in env's PATH
    std::vector<std::string> env;    // "NAME=value": the whole environment
    std::filesystem::path cwd;       // the job directory
    std::filesystem::path log_path;  // created (truncated)
    std::uint64_t max_log_bytes = 64ULL << 20;
    std::chrono::milliseconds timeout{std::chrono::hours(1)};
    std::chrono::milliseconds stall_timeout{std::chrono::minutes(5)};
    std::chrono::milliseconds kill_grace{std::chrono::seconds(10)};
    /// Run as this user and group (isolation: user): supplementary groups dropped first.
    std::optional<uid_t> uid;
    std::optional<gid_t> gid;
    std::vector<gid_t>
        groups;  // supplementary groups with `gid` (e.g. one that may open the devices)
    /// Called once the command runs, with the pid of the job's init (to record it for recovery).
    std::function<void(pid_t)> on_start;
};

struct ProcessResult {
    std::optional<int> exit_code;    // set when it exited
    std::optional<int> signal;       // set when a signal ended it
    bool timed_out = false;          // the tier timeout fired
    bool stalled = false;            // the stall timeout fired
    std::uint64_t output_bytes = 0;  // everything it wrote, kept or not
    bool log_truncated = false;
    std::chrono::milliseconds duration{0};
    pid_t pgid = 0;
};

/// The job's init program, `crcrd-job-init`: beside the running executable (the build tree),
/// in `../libexec/crcrd/` from it (installed), or one folder up (the tests' and benchmarks'
/// executables in the build tree). Code "exec", naming the places looked at, when it is in none.
Result<std::string> job_init_program();

/// Runs `spec` to its end. `cancel`, when set to true by another thread, ends the command
/// like a timeout (SIGTERM, grace, SIGKILL) and returns. Errors only when it could not be
/// started (no such program, no log file); the program's own failure is a result.
Result<ProcessResult> run_supervised(const ProcessSpec& spec,
                                     const std::atomic<bool>* cancel = nullptr);

}  // namespace crcrd::exec
