#pragma once
// The executors crcrd has, each from its own folder (src/exec/<name>/kind.cpp): its name and
// keys, what --check-config checks of the host, what its jobs' sandbox must also hide, how it
// is made, a command-line entry for its other side (a Slurm node's), and how the daemon
// describes it. Nothing outside src/exec/<name>/ knows an executor by name: a new one (say
// Kubernetes) is a folder with its kind() and one line in src/exec/registry.cpp
// (docs/architecture.md, "Adding an executor").

#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "crcrd/config/config.hpp"
#include "crcrd/exec/executor.hpp"
#include "crcrd/exec/prepare.hpp"

namespace crcrd::exec {

/// `crcrd <flag> ARGS...`: an entry of the crcrd binary for an executor's other side.
struct NodeEntry {
    std::string flag;   // e.g. "--slurm-job"
    std::string usage;  // the line `crcrd --help` shows
    std::function<int(int argc, char** argv)> main;
};

/// One executor.
struct ExecutorKind {
    config::ExecutorKeys keys;  // its name and `execution.<name>` section
    /// Whether its slots come from `runners:` (without runners there is nothing to run on),
    /// and whether it prepares workspaces under `execution.work_root` on this host.
    bool slots_from_runners = false;
    bool needs_work_root = false;
    /// --check-config beyond the keys: what this host must have (commands, a partition the
    /// cluster knows). Blocking, bounded; appends one error per problem.
    std::function<void(const config::Config&, std::vector<std::string>& errors)> check;
    /// Folders of the daemon's its jobs must not see, besides the configuration's, the
    /// database's and the work root (Slurm's shared root).
    std::function<std::vector<std::filesystem::path>(const config::Config&)> hidden_dirs;
    /// The executor, with its first settings.
    std::function<std::unique_ptr<Executor>(std::shared_ptr<const ExecutorSettings>)> make;
    /// What the daemon's start-up line says of it ("4 runner slot(s), isolation=bwrap, ...").
    std::function<std::string(const config::Config&)> describe;
    std::optional<NodeEntry> node_entry;
};

/// Every executor, in the order `execution.executor`'s error message lists them.
const std::vector<ExecutorKind>& executors();

/// The executor named `name`; nullptr when there is none (the configuration refused it).
const ExecutorKind* find_executor(std::string_view name);

/// Every executor's keys, for config::load.
std::vector<config::ExecutorKeys> executor_keys();

}  // namespace crcrd::exec
