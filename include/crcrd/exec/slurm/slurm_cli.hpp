#pragma once
// What crcrd says to Slurm's commands and reads back from them (docs/execution.md), as pure
// functions: the sbatch argv, `scontrol show job -o` and job-completion records, the mapping
// of Slurm's job states to what crcrd does next, and the partition's nodes for the runners view.

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace crcrd::exec::slurm {

/// `Key=value` fields of one line of `scontrol show job -o`, `scontrol show node -o` or a
/// jobcomp/filetxt record. A value runs to the next space; a word without `=` continues the
/// value before it (a reason with spaces).
std::map<std::string, std::string> parse_fields(std::string_view line);

/// One Slurm job as crcrd follows it.
struct JobInfo {
    std::string id;
    std::string state;      // JobState, e.g. PENDING, RUNNING, COMPLETED, TIMEOUT
    std::string reason;     // Reason, e.g. Resources, NodeDown, None
    std::string node;       // NodeList (BatchHost when NodeList is empty)
    std::string exit_code;  // ExitCode, "code:signal"
    std::string name;       // JobName (Name in a jobcomp record)
};

/// The job in one record; nullopt when it names no JobId and JobState.
std::optional<JobInfo> job_info(std::string_view line);

/// The last record for job `id` in the text of a jobcomp/filetxt file.
std::optional<JobInfo> find_completion(std::string_view jobcomp_text, const std::string& id);

/// The last record of a job named `name` (JobName) in the text of a jobcomp/filetxt file.
std::optional<JobInfo> find_completion_by_name(std::string_view jobcomp_text,
                                               const std::string& name);

/// What crcrd does with a job in `state` (docs/execution.md).
enum class Phase {
    waiting,    // PENDING, CONFIGURING, REQUEUED, RESIZING, SUSPENDED, ...: look again later
    running,    // RUNNING, COMPLETING: look again later
    finished,   // COMPLETED, FAILED: the tests decide (JUnit; none: infra_error)
    timed_out,  // TIMEOUT, DEADLINE: timeout
    infra,      // NODE_FAIL, BOOT_FAIL, OUT_OF_MEMORY, and what crcrd does not know: infra_error
    preempted,  // PREEMPTED (ended, not requeued): submitted again, not counted as an attempt
    cancelled,  // CANCELLED: cancelled when crcrd asked for it, else infra_error
};
Phase phase_of(std::string_view state);

/// Whether a PENDING job's reason means it waits for a device (Resources, ReqNodeNotAvail,
/// NodeDown): past `device_wait` it ends device_unavailable.
bool waits_for_device(std::string_view reason);

/// `--time` for a tier timeout: minutes:seconds, rounded up to a whole second (Slurm itself
/// rounds up to the minute).
std::string time_limit(std::chrono::milliseconds timeout);

/// The job id `sbatch --parsable` printed ("id" or "id;cluster"); nullopt when it is none.
std::optional<std::string> parse_sbatch_id(std::string_view out);

struct Submission {
    std::string partition;
    std::vector<std::string> gres;  // from the job's labels through gres_per_label
    std::chrono::milliseconds timeout{0};
    std::string job_name;              // crcrd-<job id>
    std::string comment;               // crcrd's ids, without spaces
    std::string output;                // Slurm's own output file (crcrd's helper messages)
    std::string chdir;                 // the control folder
    std::vector<std::string> extra;    // execution.slurm.sbatch_args
    std::string script;                // the fixed batch script: exec "$@"
    std::vector<std::string> command;  // what the script execs: crcrd --slurm-job <spec>
};

/// The sbatch argv (never a shell string): --parsable, --export=NONE, --no-requeue (crcrd owns
/// retries), --job-name, --comment, --partition, --time, --gres, --output, --chdir, the extra
/// arguments, then the script and the command it runs.
std::vector<std::string> sbatch_argv(const Submission& s);

/// The GRES a job needs: gres_per_label's value for each of its labels that has one.
std::vector<std::string> gres_for(const std::vector<std::string>& labels,
                                  const std::map<std::string, std::string>& gres_per_label);

/// sinfo's argv for the nodes of `partition`, one line each: host|state|gres|gres used|reason.
std::vector<std::string> sinfo_nodes_argv(const std::string& partition);

/// The nodes in sinfo_nodes_argv()'s output: [{name, state, gres, gres_used, reason}].
nlohmann::json nodes_of(std::string_view sinfo_output);

}  // namespace crcrd::exec::slurm
