#pragma once
// `execution.slurm` (docs/execution.md): the Slurm executor's own keys, read by this folder
// (config/executor_keys.hpp), kept in the configuration as this type.

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "crcrd/config/executor_keys.hpp"
#include "crcrd/core/units.hpp"

namespace crcrd::exec::slurm {

/// Jobs handed to an existing Slurm cluster.
struct SlurmSection : config::ExecutorSection {
    std::string partition;
    std::map<std::string, std::string> gres_per_label;  // a job's label -> --gres, e.g. "aiu:1"
    std::vector<std::string> sbatch_args;               // argv additions, never a shell string
    std::filesystem::path shared_root;                  // visible on every node at this path
    Duration poll_interval = std::chrono::seconds(5);
    std::uint32_t max_submitted = 16;  // jobs crcrd keeps in Slurm at once
    /// At a stop, scancel what is still pending in Slurm (running jobs always go on).
    bool cancel_pending_on_stop = false;
    /// crcrd's binary on the nodes (it supervises the command there); default: this daemon's.
    std::optional<std::filesystem::path> node_binary;
    /// Device paths bound into the sandbox on the node (Slurm's cgroup decides which it may open).
    std::vector<std::string> devices;
};

/// The build stage's Slurm keys (docs/build.md): its jobs go to their own partition, with
/// no GRES.
struct SlurmBuildSection : config::ExecutorSection {
    std::string partition;                 // build.partition
    std::vector<std::string> sbatch_args;  // build.sbatch_args
};

/// How the configuration reads `execution.slurm` (required with `executor: slurm`) and the
/// build's `partition` and `sbatch_args`: every key checked, errors under their key path.
config::ExecutorKeys keys();

}  // namespace crcrd::exec::slurm
