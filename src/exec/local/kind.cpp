#include "exec/local/kind.hpp"

#include "crcrd/exec/local/local_executor.hpp"

namespace crcrd::exec::local {

ExecutorKind kind() {
    ExecutorKind k;
    k.keys = config::ExecutorKeys{"local", nullptr, false, {}, nullptr};
    k.slots_from_runners = true;
    k.needs_work_root = true;
    k.check = [](const config::Config&, std::vector<std::string>&) {};
    k.hidden_dirs = [](const config::Config&) { return std::vector<std::filesystem::path>{}; };
    k.make = [](std::shared_ptr<const ExecutorSettings> s) -> std::unique_ptr<Executor> {
        return std::make_unique<LocalExecutor>(std::move(s));
    };
    k.describe = [](const config::Config& c) {
        return std::to_string(c.runners.size()) +
               " runner slot(s), isolation=" + std::string(to_string(c.execution.isolation)) +
               ", work_root=" + c.execution.work_root.string();
    };
    return k;
}

}  // namespace crcrd::exec::local
