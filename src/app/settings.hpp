#pragma once
// App-internal: the configuration as the daemon's parts take it. One function per part derives
// its settings from a checked configuration; the daemon applies them all at start and again,
// unchanged, on every reload (daemon.cpp's apply()), so the two never drift apart.

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "crcrd/config/config.hpp"
#include "crcrd/exec/local/local_executor.hpp"
#include "crcrd/ingest/recovery.hpp"
#include "crcrd/ingest/webhook.hpp"
#include "crcrd/report/outbox.hpp"
#include "crcrd/sched/dispatcher.hpp"
#include "crcrd/sched/planner.hpp"

namespace crcrd::app {

/// The config plus what it points at (secrets, the rules file), or every error found.
struct Checked {
    std::optional<config::Config> config;
    std::shared_ptr<const ingest::Policy> policy;
    std::shared_ptr<const sched::PlannerConfig> planner;  // null without selection.rules
    std::vector<std::string> errors;
};

/// Loads the config at `path` and checks everything it points at: secrets and credentials are
/// readable, the TLS pair matches, the rules file parses, the test command is visible to the
/// sandbox and its account exists. `config` is set only when `errors` is empty.
Checked load_checked(const std::filesystem::path& path);

/// The folders the sandbox hides: the configuration's, the database's, the work root and (Slurm)
/// the shared root.
std::vector<std::filesystem::path> hidden_dirs(const config::Config& c);
/// The dispatcher's timings, retry policy and compiled classification patterns.
sched::DispatcherSettings dispatcher_settings(const config::Config& c);
/// The executor's slots, execution settings and what the sandbox hides.
std::shared_ptr<const exec::ExecutorSettings> executor_settings(const config::Config& c);
/// Missed-delivery recovery's hook and GitHub credentials; only with `recovery` configured.
ingest::RecoverySettings recovery_settings(const config::Config& c);
/// Which sinks the outbox fills and how statuses name and link themselves.
report::OutboxSettings outbox_settings(const config::Config& c);
/// The rules file's tier names, in order (none without a rules file).
std::vector<std::string> tier_names(const std::shared_ptr<const sched::PlannerConfig>& planner);

}  // namespace crcrd::app
