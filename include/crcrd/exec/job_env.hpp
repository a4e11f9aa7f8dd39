#pragma once
// What a test command gets (docs/execution.md): exactly this environment and nothing of the
// daemon's own, a tests file with ${PYTORCH_DIR} expanded, and (by default) a bubblewrap
// sandbox that hides the daemon's configuration, secrets, database and /proc.

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "crcrd/core/result.hpp"

namespace crcrd::exec {

struct JobContext {
    std::int64_t run_id = 0;
    std::int64_t job_id = 0;
    int attempt = 1;
    std::string tier;
    std::string pytorch_sha;
    std::optional<std::filesystem::path> pytorch_dir;  // the pinned checkout, when a mirror is set
    std::optional<std::int64_t> pr;
    std::string slot;
    std::filesystem::path job_dir;     // fresh, the command's cwd and HOME
    std::filesystem::path tests_file;  // inside job_dir
    std::filesystem::path junit_dir;   // inside job_dir
    /// The rerun of a failed tier (docs/execution.md, execution.rerun: failed_tests): the failed
    /// test ids of the previous attempt, one per line, as CRCR_RERUN_FILE. Unset on a first
    /// attempt.
    std::optional<std::filesystem::path> rerun_file;
    /// The build stage's variables (docs/build.md): CRCR_BUILD_OUT, CRCR_BACKEND_DIR,
    /// CRCR_BUILD_NEAREST and CCACHE_* for a build, CRCR_BUILD_DIR for a tier. Like CRCR_*,
    /// nothing in the configuration overrides them.
    std::map<std::string, std::string> stage_env;
};

/// The environment, in order: PATH, HOME (the job directory), LANG; then
/// `execution.env`; then the slot's `env` (a slot's value wins over the global one); then the
/// CRCR_* variables, which nothing overrides. PATH may be set by either env map.
std::vector<std::string> job_environment(const JobContext& ctx,
                                         const std::map<std::string, std::string>& execution_env,
                                         const std::map<std::string, std::string>& slot_env);

/// Writes one test per line into ctx.tests_file, ${PYTORCH_DIR} replaced by the checkout
/// (entries stay as written when there is none), and creates ctx.junit_dir.
Status write_tests_file(const JobContext& ctx, const std::vector<std::string>& tests);

/// What the sandbox must hide and what it must expose.
struct SandboxSpec {
    std::vector<std::filesystem::path>
        hidden_dirs;  // tmpfs over each (config dir, state dir, work root)
    std::vector<std::filesystem::path> hidden_files;  // /dev/null over each (secrets, tokens, keys)
    std::filesystem::path job_dir;                    // bound read-write
    std::optional<std::filesystem::path> pytorch_dir;  // bound read-only
    /// The build stage's folders (docs/build.md), bound after the masks: read-only (the
    /// published build, the nearest one) and writable (a build's output and ccache folder).
    std::vector<std::filesystem::path> ro_binds;
    std::vector<std::filesystem::path> rw_binds;
    std::vector<std::string> devices;                  // the slot's devices, bound in
    std::optional<std::filesystem::path> command_dir;  // bound read-only (it may lie under /tmp)
    bool no_network = false;                           // execution.network: none
    /// When the daemon runs as root: the unprivileged account the command runs as (bubblewrap
    /// mounts as root, then `setpriv` drops to it with no capabilities). Unset: the daemon is
    /// not root, and bubblewrap runs in a user namespace of the daemon's own uid.
    struct Account {
        unsigned uid = 0;
        unsigned gid = 0;
    };
    std::optional<Account> run_as;
};

/// The argv prefix that runs a command in the sandbox (docs/execution.md): its own pid, IPC,
/// UTS (and, with no_network, network) namespaces, a new session, a fresh /proc and /dev, a
/// read-only view of the host, tmpfs over /tmp and the hidden directories, the command's own
/// folder bound read-only before the masks (so it can unhide nothing), the job directory
/// writable, the checkout read-only, /dev/null over every hidden file last, dies with its
/// parent, and no capabilities: an unprivileged uid when the daemon is root, a user namespace
/// without nested user namespaces when it is not. Append the command after it.
std::vector<std::string> bwrap_prefix(const SandboxSpec& spec);

/// Removes from a sandboxed argv (bwrap_prefix's, or behind the launcher's client) the masks
/// over paths this host does not have (`--tmpfs D` other than /tmp, `--ro-bind-try /dev/null
/// F`): bubblewrap cannot mount over a path that does not exist, and what is absent needs no
/// hiding. Run where the command runs (a Slurm node's host may differ from the daemon's).
/// Anything else stays as it is.
void drop_absent_masks(std::vector<std::string>& argv);

/// Whether `path` is `dir` or lies inside it (lexically, both absolute and normal).
bool is_within(const std::filesystem::path& path, const std::filesystem::path& dir);

}  // namespace crcrd::exec
