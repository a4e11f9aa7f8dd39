#include "exec/slurm/kind.hpp"

#include <unistd.h>

#include "crcrd/core/files.hpp"
#include "crcrd/core/subprocess.hpp"
#include "crcrd/exec/slurm/node_job.hpp"
#include "crcrd/exec/slurm/slurm_executor.hpp"
#include "crcrd/exec/slurm/slurm_section.hpp"

namespace crcrd::exec::slurm {

namespace {

/// `partition` (the value of key `key`) is known to the cluster's controller.
void check_partition(const std::string& key, const std::string& partition,
                     std::vector<std::string>& errors) {
    SubprocessOptions o;
    o.timeout = std::chrono::seconds(30);
    o.max_output = 64 * 1024;
    auto r = run_subprocess({"scontrol", "show", "partition", partition}, o);
    if (!r || r->exit_code != 0) {
        const std::string why = !r             ? r.error().message
                                : r->timed_out ? "timed out"
                                               : trim(r->err + r->out);
        errors.push_back(key + ": '" + partition +
                         "' is not a partition of the cluster (scontrol: " + why.substr(0, 300) +
                         ")");
    }
}

/// Slurm's commands on PATH, the shared root a folder, the node binary executable, the
/// partitions (the tiers', the build's) known to the controller.
void check(const config::Config& c, std::vector<std::string>& errors) {
    const auto* sl = c.execution.section<SlurmSection>();
    if (!sl) return;
    bool commands = true;
    for (const char* cmd : {"sbatch", "scontrol", "scancel", "squeue"}) {
        if (!find_in_path(cmd)) {
            errors.push_back(std::string("execution.slurm: '") + cmd +
                             "' is not on PATH (Debian package slurm-client)");
            commands = false;
        }
    }
    std::error_code ec;
    if (!std::filesystem::is_directory(sl->shared_root, ec)) {
        errors.push_back("execution.slurm.shared_root: " + sl->shared_root.string() +
                         " is not a directory");
    }
    if (sl->node_binary && ::access(sl->node_binary->c_str(), X_OK) != 0) {
        errors.push_back("execution.slurm.node_binary: " + sl->node_binary->string() +
                         " is not an executable file here");
    }
    if (!commands) return;
    check_partition("execution.slurm.partition", sl->partition, errors);
    if (c.build) {
        if (const auto* b = c.build->section<SlurmBuildSection>())
            check_partition("build.partition", b->partition, errors);
    }
}

}  // namespace

ExecutorKind kind() {
    ExecutorKind k;
    k.keys = keys();
    k.check = check;
    k.hidden_dirs = [](const config::Config& c) {
        std::vector<std::filesystem::path> dirs;
        if (const auto* sl = c.execution.section<SlurmSection>()) dirs.push_back(sl->shared_root);
        return dirs;
    };
    k.make = [](std::shared_ptr<const ExecutorSettings> s) -> std::unique_ptr<Executor> {
        return std::make_unique<SlurmExecutor>(std::move(s));
    };
    k.describe = [](const config::Config& c) {
        const auto* sl = c.execution.section<SlurmSection>();
        if (!sl) return std::string("Slurm, not configured");
        return "Slurm partition " + sl->partition + ", at most " +
               std::to_string(sl->max_submitted) +
               " job(s) submitted, isolation=" + std::string(to_string(c.execution.isolation)) +
               ", shared_root=" + sl->shared_root.string();
    };
    k.node_entry = NodeEntry{
        "--slurm-job",
        "--slurm-job SPEC (on a Slurm node, started by crcrd's batch job) run one test command",
        [](int argc, char** argv) {
            if (argc != 3) return 2;
            return run_node_job(argv[2]);
        }};
    return k;
}

}  // namespace crcrd::exec::slurm
