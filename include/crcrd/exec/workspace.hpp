#pragma once
// A job's workspace (docs/execution.md): a fresh job directory under `execution.work_root` and,
// when a mirror is configured, an upstream checkout pinned to the run's SHA (a detached
// worktree of the mirror, verified HEAD == SHA). A free-disk guard refuses to start a job
// that could fill the disk.

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include "crcrd/config/config.hpp"
#include "crcrd/core/result.hpp"

namespace crcrd::exec {

struct Workspace {
    std::filesystem::path job_dir;
    std::optional<std::filesystem::path> checkout;
};

/// Prepares `<work_root>/jobs/<job_id>` (emptied if it exists) and, with a mirror,
/// `<work_root>/checkouts/<job_id>` at `sha`. Errors have code "infra_error" and say which
/// step failed: too little free space (`execution.min_free_bytes`), the directory, the checkout.
Result<Workspace> prepare_workspace(const config::ExecutionConfig& exec,
                                    const config::UpstreamConfig& upstream, std::int64_t job_id,
                                    const std::string& sha);

/// Removes the workspace, unless `failed` and `execution.keep_failed_workspaces`.
void release_workspace(const Workspace& ws, const config::ExecutionConfig& exec,
                       const config::UpstreamConfig& upstream, bool failed);

/// Bytes available to unprivileged users on the file system holding `path`.
std::uint64_t free_bytes(const std::filesystem::path& path);

}  // namespace crcrd::exec
