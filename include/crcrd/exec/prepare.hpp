#pragma once
// One attempt's files and process, the same for every executor (docs/execution.md): the
// workspace and pinned checkout, the tests file, the exact environment, the account and the
// bubblewrap sandbox around the command, the attempt's metadata; and, once it ended, its JUnit
// results and log. The local executor runs the ProcessSpec here; the Slurm executor has crcrd run
// it on a node (exec/slurm/node_job.hpp).

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "crcrd/config/config.hpp"
#include "crcrd/core/result.hpp"
#include "crcrd/exec/executor.hpp"
#include "crcrd/exec/job_env.hpp"
#include "crcrd/exec/supervisor.hpp"
#include "crcrd/exec/workspace.hpp"

namespace crcrd::exec {

/// What every executor is configured with (from the whole configuration, on each reload).
struct ExecutorSettings {
    std::vector<config::RunnerConfig> runners;
    config::ExecutionConfig execution;
    config::UpstreamConfig upstream;
    std::optional<config::BuildConfig> build;         // `build:`, when the configuration has one
    std::vector<std::filesystem::path> hidden_dirs;   // config and state folders
    std::vector<std::filesystem::path> hidden_files;  // secrets, tokens, keys
};

/// Where and with what the command runs.
struct SlotSpec {
    std::string name;
    std::map<std::string, std::string> env;
    std::vector<std::string> devices;
    std::optional<std::string> device_model;
};

struct PreparedAttempt {
    Workspace ws;
    JobContext ctx;
    ProcessSpec process;  // argv (sandbox + command), env, cwd, log, limits, account
    nlohmann::json metadata;
};

/// Prepares `job`'s attempt: the workspace under `execution.work_root` (with a pinned checkout
/// when a mirror is set), the tests file, the log at `<log_dir>/<job_id>.log`, and the
/// process to run. An error (code infra_error) says which step failed; nothing is left behind.
Result<PreparedAttempt> prepare_attempt(const ExecutorSettings& s, const JobToRun& job,
                                        const SlotSpec& slot, const std::filesystem::path& log_dir);

/// What the supervised process left, as a RawOutcome: its JUnit results, the kept log, the
/// metadata's end; the workspace is released (kept for a look unless it was a clean pass).
void collect_attempt(const ExecutorSettings& s, const PreparedAttempt& a, const ProcessResult& proc,
                     bool cancelled, RawOutcome& out);

/// The first line a command prints (a version, a SHA), or "" when it fails.
std::string first_line_of(const std::vector<std::string>& argv,
                          const std::optional<std::filesystem::path>& cwd = {});

}  // namespace crcrd::exec
