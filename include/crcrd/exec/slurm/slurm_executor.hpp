#pragma once
// The `slurm` executor (docs/execution.md): each job is one Slurm batch job. crcrd prepares the
// workspace under `execution.slurm.shared_root`, submits `sbatch --parsable --export=NONE` with
// an argv, and Slurm runs `crcrd --slurm-job` on a node, which supervises the command in the
// same sandbox as locally (exec/slurm/node_job.hpp). crcrd follows the job with `scontrol show
// job` every `poll_interval` (the job-completion file once it left the controller), maps its
// end to what the classifier needs, `scancel`s it when asked, and leaves it running in Slurm
// when the daemon stops, to adopt it at the next start.

#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "crcrd/exec/executor.hpp"
#include "crcrd/exec/prepare.hpp"
#include "crcrd/exec/slurm/slurm_cli.hpp"
#include "crcrd/exec/slurm/slurm_section.hpp"
#include "crcrd/exec/slurm/watch.hpp"

namespace crcrd::exec {

class SlurmExecutor : public Executor {
  public:
    explicit SlurmExecutor(std::shared_ptr<const ExecutorSettings> settings);
    void set_settings(std::shared_ptr<const ExecutorSettings> settings) override;

    /// `max_submitted` slots, slurm-1 … slurm-N, each offering every label of gres_per_label:
    /// the dispatcher never has more jobs in Slurm than that; with a build stage, build.slots
    /// build slots build-1 … build-N more, for build jobs only.
    std::vector<SlotOffer> slots() const override;
    RawOutcome run(const JobToRun& job, const std::atomic<bool>& cancel,
                   const AttemptHooks& hooks) override;
    /// Slurm owns its nodes' health: always ok.
    Health check_health(const std::string& slot) override;
    /// Nothing to do: a job comes here only when adoptable() found nothing of it in Slurm.
    int abandon(std::int64_t job_id) override;
    std::optional<std::string> adoptable(std::int64_t job_id,
                                         const std::optional<std::string>& external_id) override;
    RawOutcome adopt(const JobToRun& job, const std::string& external_id,
                     const std::atomic<bool>& cancel, const AttemptHooks& hooks) override;
    bool detach_on_stop() override;
    /// {"partition", "nodes": [{name, state, reason, gres, gres_used}], "error"}.
    nlohmann::json cluster() override;

    /// The name crcrd gives job `job_id`'s Slurm job.
    static std::string job_name(std::int64_t job_id);

  private:
    std::shared_ptr<const ExecutorSettings> settings() const;
    /// Where the attempt's files are, for one submitted now or by a previous daemon.
    struct Paths {
        std::filesystem::path control, spec, result, slurm_out, metadata;
    };
    Paths paths(const ExecutorSettings& s, std::int64_t job_id) const;
    /// Where a job goes: the tiers' partition with their labels' GRES and the nodes'
    /// devices, or a build's partition with neither (docs/build.md).
    struct Target {
        std::string partition;
        std::vector<std::string> gres;  // none for a build
        std::vector<std::string> sbatch_args;
        std::vector<std::string> devices;
    };
    static Target target_of(const ExecutorSettings& s, const JobToRun& job);
    /// The settings the workspace is prepared with: work_root is shared_root.
    static ExecutorSettings on_shared_root(const ExecutorSettings& s);
    /// sbatch for the attempt whose spec is written; the Slurm job id, or why not. `first`: when
    /// sbatch fails, a job it may have submitted anyway is looked up by name.
    Result<std::string> submit(const ExecutorSettings& s, const JobToRun& job, const Paths& p,
                               bool first);
    /// A pending or running job named for `job_id` other than `except`.
    std::optional<std::string> live_by_name(std::int64_t job_id, const std::string& except);
    /// The job as Slurm knows it now: the controller, else the job-completion file. nullopt
    /// with `*unreachable` set when the controller did not answer at all.
    std::optional<slurm::JobInfo> query(const std::string& id, bool* unreachable = nullptr);
    /// The job-completion file (JobCompLoc of `scontrol show config`), when it is a readable file.
    std::optional<std::string> read_jobcomp();
    /// scancel, tried three times; false when Slurm never took it.
    bool scancel(const std::string& id);
    /// What Slurm says of job `id` (query()), else what the node's result file says of a job
    /// that left the controller.
    std::optional<slurm::JobInfo> look(const std::string& id, const Paths& p,
                                       const std::string& name, bool* unreachable);
    /// After job `id` of `a` was preempted: the resubmission a previous daemon made, else a new
    /// one (the preempted run's result and JUnit removed).
    Result<std::string> resubmit(const ExecutorSettings& s, const JobToRun& job,
                                 const PreparedAttempt& a, const std::string& id);
    /// scancel a job that waits too long, and wait (at most 10 s) until Slurm ended it.
    void cancel_waiting(const std::string& id);
    /// Follows Slurm job `id` of `a` to its end and collects it: the poller of
    /// slurm::next() (exec/slurm/watch.hpp).
    RawOutcome watch(const ExecutorSettings& s, const JobToRun& job, const PreparedAttempt& a,
                     std::string id, const std::atomic<bool>& cancel,
                     const std::function<void(const Started&)>& on_running);
    /// The outcome of a job Slurm ended (`st.last`), from what its node wrote.
    void collect_ended(const ExecutorSettings& s, const JobToRun& job, const PreparedAttempt& a,
                       const slurm::WatchState& st, RawOutcome& out);
    /// Waits up to `d`, or less when the daemon stops or `cancel` is set.
    void pause(std::chrono::milliseconds d, const std::atomic<bool>& cancel);
    void wait_a_little(std::chrono::milliseconds poll, const std::atomic<bool>& cancel,
                       bool cancel_sent);
    bool detaching();

    mutable std::mutex m_mu;
    std::condition_variable m_cv;
    std::shared_ptr<const ExecutorSettings> m_settings;
    bool m_detaching = false;
    std::string m_node_binary;
    /// Held while the batch script in shared_root is checked and (re)written: the workers of
    /// concurrent first submissions would otherwise share its temporary file.
    std::mutex m_script_mu;
};

}  // namespace crcrd::exec
