#pragma once
// The seam between scheduling and execution (docs/architecture.md). The dispatcher (sched)
// decides which job starts, on which of the offered slots, stores everything and classifies;
// an Executor only offers slots and runs a job on one, returning what happened, raw. It knows
// nothing of the database or of classes: a new executor (Slurm, Kubernetes) is one folder that
// implements these four calls. LocalExecutor runs processes on this host's slots.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "crcrd/exec/junit.hpp"

namespace crcrd::exec {

/// A slot the executor can run jobs on, with the labels a job's tier may require.
struct SlotOffer {
    std::string name;
    std::vector<std::string> labels;
};

struct JobToRun {
    std::int64_t job_id = 0;
    std::int64_t run_id = 0;
    int attempt = 1;
    std::string tier;
    std::string sha;
    std::optional<std::int64_t> pr;
    std::vector<std::string> tests;
    std::vector<std::string> labels;
    std::chrono::milliseconds timeout{std::chrono::hours(1)};
    std::string slot;  // the leased slot
};

/// What one attempt left behind, before any classification.
struct RawOutcome {
    /// The slot failed its health check before the command started: the job did not run and
    /// goes back to the queue; the slot goes offline. `health` holds the check.
    bool slot_unhealthy = false;
    /// crcrd could not run the command (no such slot, workspace, account, start): why.
    std::optional<std::string> not_run;
    std::optional<int> exit_code;
    std::optional<int> signal;
    bool timed_out = false;
    bool stalled = false;
    bool cancelled = false;  // stopped because `cancel` was set (not by a timeout)
    std::vector<TestResult> results;
    std::optional<std::string> junit_error;  // malformed or refused JUnit output
    std::string log_path;
    std::string log_text;                    // the kept log (head and tail), for the classifier
    nlohmann::json metadata = nlohmann::json::object();  // §4's metadata of the attempt
    nlohmann::json health = nullptr;         // the health check that ran before, if any
};

class Executor {
public:
    virtual ~Executor() = default;
    /// The slots this executor offers now (they change on reload). Never blocks.
    virtual std::vector<SlotOffer> slots() const = 0;
    /// Runs `job` on `job.slot` to its end on the calling (worker) thread. `cancel` asks it to
    /// stop; `on_running` is called once the command started, with its process group. Never
    /// throws for anything a test does.
    virtual RawOutcome run(const JobToRun& job, const std::atomic<bool>& cancel,
                           const std::function<void(std::int64_t pgid)>& on_running) = 0;
    /// Blocking: the slot's health check now, as {"ok": bool, "at", "exit_status", "output"}.
    virtual nlohmann::json check_health(const std::string& slot) = 0;
    /// Ends whatever attempt `job_id` of a previous daemon left running; how many processes.
    virtual int abandon(std::int64_t job_id) = 0;
};

}  // namespace crcrd::exec
