#pragma once
// A real single-node Slurm cluster (slurmctld + slurmd, Slurm 22.05 as packaged by Debian 12)
// for integration tests. Everything it writes (slurm.conf, gres.conf, state, spool, pid files,
// logs, jobcomp.txt) lives in the directory it is given; the daemons listen on free ports, so
// several clusters can run side by side. It needs root (slurmd runs jobs as their user) and a
// working munged, which it starts when none runs (and then leaves running: it is shared).
//
// The node: NodeName=<short hostname>, CPUs=16 (more than the machine has: slurmd accepts it
// through SlurmdParameters=config_overrides), Gres=aiu:2 (or as many as the constructor is
// told: the Slurm benchmark runs 16 one-aiu jobs at once), in the partition "spyre" (the
// default) and in "cpu" (build_partition()).
//
// Slurm clients (sbatch, squeue, scontrol, sinfo, scancel) find the cluster only through
// SLURM_CONF; without it they look for a DNS SRV record and fail. Pass env() to whatever runs
// them, or use run().

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "support/process.hpp"

namespace crcrd {

class SlurmCluster {
  public:
    /// Writes the configuration into `dir`, makes sure munged runs, starts slurmctld and
    /// slurmd and waits until sinfo shows the node idle. Throws std::runtime_error (with the
    /// daemons' log tails) when the node does not come up.
    /// `aiu` is the node's count of aiu GRES (2 unless a benchmark asks for more).
    explicit SlurmCluster(const std::filesystem::path& dir, int aiu = 2);
    /// Cancels the cluster's jobs, then stops slurmd and slurmctld by PID (SIGTERM, a wait,
    /// SIGKILL). munged is left running.
    ~SlurmCluster();
    SlurmCluster(const SlurmCluster&) = delete;
    SlurmCluster& operator=(const SlurmCluster&) = delete;

    /// Why a cluster cannot run here (not root, a Slurm or munge binary missing), or "" if
    /// it can. For GTEST_SKIP() << SlurmCluster::skip_reason().
    static std::string skip_reason();

    /// What a Slurm client needs in its environment: SLURM_CONF=<dir>/slurm.conf.
    std::vector<std::string> env() const;
    /// Runs a Slurm client (argv[0] looked up in PATH) with env() added; returns its exit
    /// code and fills `output` (stdout+stderr).
    int run(const std::vector<std::string>& argv, std::string* output = nullptr) const;

    const std::filesystem::path& dir() const { return m_dir; }
    std::filesystem::path conf_path() const { return m_dir / "slurm.conf"; }
    std::filesystem::path jobcomp_path() const { return m_dir / "jobcomp.txt"; }
    std::filesystem::path slurmctld_log() const { return m_dir / "slurmctld.log"; }
    std::filesystem::path slurmd_log() const { return m_dir / "slurmd.log"; }
    std::string partition() const { return "spyre"; }
    /// A second partition on the same node, for a build stage's jobs.
    std::string build_partition() const { return "cpu"; }
    const std::string& node() const { return m_node; }
    int slurmctld_port() const { return m_ctld_port; }
    int slurmd_port() const { return m_slurmd_port; }

    /// The node's state as sinfo's StateLong prints it ("idle", "mixed", "allocated",
    /// "down", "idle*" while the controller has not heard from slurmd, ...).
    std::string node_state() const;
    /// Polls until node_state() is exactly "idle".
    bool wait_node_idle(std::chrono::milliseconds timeout = std::chrono::seconds(30)) const;

    /// Stops slurmd (SIGTERM by PID, then SIGKILL); jobs already running keep their
    /// slurmstepd. The controller marks the node DOWN* after SlurmdTimeout.
    void stop_node_daemon();
    /// Starts slurmd again (no-op if it runs); does not wait for the node to be idle.
    void start_node_daemon();
    /// `scontrol update nodename=<node> state=<state> reason=<reason>`; state is e.g. "down",
    /// "drain", "resume" (down and drain need a reason). Throws when scontrol fails.
    void set_node_state(const std::string& state, const std::string& reason = "");

    /// The last lines of both daemons' logs, for failure messages.
    std::string log_tail(std::size_t lines = 30) const;

  private:
    void write_config() const;
    void start_controller();
    void stop(std::unique_ptr<Process>& p);

    std::filesystem::path m_dir;
    std::string m_node;
    int m_ctld_port = 0;
    int m_slurmd_port = 0;
    int m_aiu = 2;
    std::unique_ptr<Process> m_ctld;
    std::unique_ptr<Process> m_slurmd;
};

}  // namespace crcrd
