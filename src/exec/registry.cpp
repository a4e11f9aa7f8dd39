#include "crcrd/exec/registry.hpp"

#include "exec/local/kind.hpp"
#include "exec/slurm/kind.hpp"

namespace crcrd::exec {

const std::vector<ExecutorKind>& executors() {
    // One line per executor: its folder's kind().
    static const std::vector<ExecutorKind> all = {local::kind(), slurm::kind()};
    return all;
}

const ExecutorKind* find_executor(std::string_view name) {
    for (const auto& k : executors())
        if (k.keys.name == name) return &k;
    return nullptr;
}

std::vector<config::ExecutorKeys> executor_keys() {
    std::vector<config::ExecutorKeys> out;
    for (const auto& k : executors()) out.push_back(k.keys);
    return out;
}

}  // namespace crcrd::exec
