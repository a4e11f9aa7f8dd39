#pragma once
// The seam between scheduling and execution (docs/architecture.md): the dispatcher decides
// *which* job may start; an Executor decides *where* (leasing a slot) and *how* (running
// it). LocalExecutor runs processes on this host's slots; a Kubernetes executor would create
// one Job per lease behind the same three calls.

#include <atomic>
#include <chrono>
#include <functional>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "crcrd/exec/junit.hpp"
#include "crcrd/store/sqlite.hpp"

namespace crcrd::exec {

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
    std::string slot;  // set by lease()
};

struct JobOutcome {
    std::string conclusion;  // a §5 class
    std::string reason;
    std::optional<int> exit_status;
    std::vector<TestResult> results;
    nlohmann::json metadata = nlohmann::json::object();
    /// What the class rests on: exit_status, signal, timed_out, stalled, failed_tests,
    /// log_lines, junit_error (stored as jobs.evidence, served with the job).
    nlohmann::json evidence = nlohmann::json::object();
    std::string log_path;
    bool requeue = false;        // the slot failed its health check: not an attempt, try again
    bool slot_unhealthy = false; // take the slot offline
    nlohmann::json health = nullptr;
};

class Executor {
public:
    virtual ~Executor() = default;
    /// Inside the writer's transaction: claims a free slot whose labels cover `job.labels`;
    /// returns its name, or nullopt when none is free. Never blocks.
    virtual std::optional<std::string> lease(store::Db& db, const JobToRun& job) = 0;
    /// Runs a leased job to its end on the calling (worker) thread. `cancel` asks it to stop.
    /// `on_running` is called once the command started, with its process group.
    virtual JobOutcome run(const JobToRun& job, const std::atomic<bool>& cancel,
                           const std::function<void(std::int64_t pgid)>& on_running) = 0;
    /// Inside the writer's transaction: gives the slot back (or takes it offline).
    virtual void release(store::Db& db, const JobToRun& job, const JobOutcome& outcome) = 0;
    /// Blocking: the slot's health check now, as {"ok": bool, "at", "exit_status", "output"}.
    virtual nlohmann::json check_health(const std::string& slot) = 0;
};

}  // namespace crcrd::exec
