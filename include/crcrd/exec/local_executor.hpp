#pragma once
// Runner slots on this host (CONTRACT.md §4): slots from `runners:` with labels, env, devices
// and a health check; the test command supervised in a pinned workspace, under bubblewrap by
// default; JUnit results, metadata and the log kept per job.

#include <memory>
#include <mutex>

#include "crcrd/classify/classify.hpp"
#include "crcrd/config/config.hpp"
#include "crcrd/exec/executor.hpp"
#include "crcrd/exec/job_env.hpp"
#include "crcrd/store/writer.hpp"

namespace crcrd::exec {

struct LocalSettings {
    std::vector<config::RunnerConfig> runners;
    config::ExecutionConfig execution;
    config::UpstreamConfig upstream;
    classify::Patterns patterns;                      // classify.*_patterns, compiled once
    std::vector<std::filesystem::path> hidden_dirs;   // config and state folders
    std::vector<std::filesystem::path> hidden_files;  // secrets, tokens, keys
};

class LocalExecutor : public Executor {
public:
    explicit LocalExecutor(std::shared_ptr<const LocalSettings> settings);
    void set_settings(std::shared_ptr<const LocalSettings> settings);

    std::optional<std::string> lease(store::Db& db, const JobToRun& job) override;
    JobOutcome run(const JobToRun& job, const std::atomic<bool>& cancel,
                   const std::function<void(std::int64_t)>& on_running) override;
    void release(store::Db& db, const JobToRun& job, const JobOutcome& outcome) override;
    nlohmann::json check_health(const std::string& slot) override;

    /// Inside a write: makes the slots table match `runners:` (new ones idle; removed ones
    /// deleted unless busy).
    static void sync_slots(store::Db& db, const std::vector<config::RunnerConfig>& runners);

    /// Runs a slot's health check; {"ok","exit_status","output","at"}. A slot without one is healthy.
    static nlohmann::json health_check(const config::RunnerConfig& r);

private:
    std::shared_ptr<const LocalSettings> settings() const;
    const config::RunnerConfig* runner(const LocalSettings& s, const std::string& name) const;

    mutable std::mutex m_mu;
    std::shared_ptr<const LocalSettings> m_settings;
};

}  // namespace crcrd::exec
