#pragma once
// Runner slots on this host (docs/execution.md): slots from `runners:` with labels, env, devices
// and a health check; the test command supervised in a pinned workspace, under bubblewrap by
// default; JUnit results, metadata and the log kept per job.

#include <memory>
#include <mutex>
#include <set>
#include <string>

#include "crcrd/config/config.hpp"
#include "crcrd/exec/executor.hpp"
#include "crcrd/exec/job_env.hpp"
#include "crcrd/exec/prepare.hpp"

namespace crcrd::exec {

using LocalSettings = ExecutorSettings;

class LocalExecutor : public Executor {
  public:
    explicit LocalExecutor(std::shared_ptr<const LocalSettings> settings);
    void set_settings(std::shared_ptr<const LocalSettings> settings) override;

    std::vector<SlotOffer> slots() const override;
    RawOutcome run(const JobToRun& job, const std::atomic<bool>& cancel,
                   const AttemptHooks& hooks) override;
    Health check_health(const std::string& slot) override;
    /// Kills every process whose environment names CRCR_JOB_ID=<job_id>: the command, bubblewrap
    /// and whatever they detached, even in a session of their own.
    int abandon(std::int64_t job_id) override;

    /// Runs a slot's health check; {"ok","exit_status","output","at"}. A slot without one is
    /// healthy.
    static Health health_check(const config::RunnerConfig& r);

  private:
    /// After a stall or timeout: waits up to card_release_timeout for no process to hold the
    /// slot's devices, then its health check; a health record. Still held: the slot is
    /// remembered, and its health checks fail until they are free.
    Health after_release(const config::RunnerConfig& slot, const config::ExecutionConfig& x);
    /// The slot's health: its devices free if they were held after a job, then health_check().
    Health slot_health(const config::RunnerConfig& r);
    std::shared_ptr<const LocalSettings> settings() const;
    const config::RunnerConfig* runner(const LocalSettings& s, const std::string& name) const;
    static bool is_build_slot(const LocalSettings& s, const std::string& name);

    mutable std::mutex m_mu;
    std::shared_ptr<const LocalSettings> m_settings;
    std::set<std::string>
        m_devices_held;  // slots whose devices stayed held after a stall or timeout
};

}  // namespace crcrd::exec
