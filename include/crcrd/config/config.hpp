#pragma once
// The daemon's configuration (docs/configuration.md), as loaded and validated from YAML.

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "crcrd/config/executor_keys.hpp"
#include "crcrd/core/units.hpp"
#include "crcrd/core/vocab.hpp"

namespace crcrd::config {

/// execution.isolation (docs/execution.md).
enum class Isolation { bwrap, user, none };
/// execution.network: `none` gives the tests no network (bwrap only).
enum class Network { host, none };
/// execution.rerun: what the rerun of a failed tier runs.
enum class RerunScope { failed_tests, tier };
/// classify.base_check (docs/verdicts.md): how a PR's failures are checked on its base.
enum class BaseCheck { lookup, run, off };
/// trust.fork_policy (docs/ingest.md).
enum class ForkPolicy { run, require_label, ignore };

}  // namespace crcrd::config

namespace crcrd {
template <>
struct Vocab<config::Isolation> {
    static constexpr std::array<std::string_view, 3> names{"bwrap", "user", "none"};
};
template <>
struct Vocab<config::Network> {
    static constexpr std::array<std::string_view, 2> names{"host", "none"};
};
template <>
struct Vocab<config::RerunScope> {
    static constexpr std::array<std::string_view, 2> names{"failed_tests", "tier"};
};
template <>
struct Vocab<config::BaseCheck> {
    static constexpr std::array<std::string_view, 3> names{"lookup", "run", "off"};
};
template <>
struct Vocab<config::ForkPolicy> {
    static constexpr std::array<std::string_view, 3> names{"run", "require_label", "ignore"};
};
}  // namespace crcrd

namespace crcrd::config {

CRCRD_VOCAB_JSON(Isolation)
CRCRD_VOCAB_JSON(Network)
CRCRD_VOCAB_JSON(RerunScope)
CRCRD_VOCAB_JSON(BaseCheck)
CRCRD_VOCAB_JSON(ForkPolicy)

using Path = std::filesystem::path;
using Strings = std::vector<std::string>;

struct SecretRef {
    std::string id;
    Path file;
};

struct TlsConfig {
    Path cert;
    Path key;
};

struct ServerConfig {
    std::string host = "127.0.0.1";
    std::uint16_t port = 8443;
    std::optional<TlsConfig> tls;
    std::string public_url;
    std::uint64_t max_body_bytes = 1024 * 1024;
    std::uint64_t max_header_bytes = 16 * 1024;
    std::uint32_t max_connections = 1024;
    std::uint32_t max_connections_per_ip = 64;
    std::uint32_t threads = 2;
    std::string webhook_path = "/webhook";
    Duration handshake_timeout = std::chrono::seconds(5);
    Duration header_timeout = std::chrono::seconds(10);
    Duration body_timeout = std::chrono::seconds(30);
    Duration write_timeout = std::chrono::seconds(10);
    Duration idle_timeout = std::chrono::seconds(30);
    Duration drain_timeout = std::chrono::seconds(10);
};

struct StorageConfig {
    Path path;
    Duration busy_timeout = std::chrono::seconds(5);
    std::uint32_t max_pending_writes = 10000;  // beyond this, 503 "overloaded"
    Duration retry_after = std::chrono::seconds(30);
    /// Delivery bodies, outbox rows and job logs older than this are pruned; 0: kept forever.
    Duration retention = std::chrono::hours(24 * 90);
    /// Rows of rejected requests (no body, no run) older than this are deleted; 0: kept forever.
    Duration rejected_retention = std::chrono::hours(24 * 7);
    Duration prune_interval = std::chrono::hours(1);
};

struct IngestConfig {
    std::vector<SecretRef> secrets;
    std::vector<SecretRef> standard_webhooks_secrets;
    Duration max_clock_skew = std::chrono::seconds(300);
};

struct TrustConfig {
    std::string upstream_repo = "pytorch/pytorch";
    std::string downstream_repo;
    Strings senders;
    ForkPolicy fork_policy = ForkPolicy::require_label;
    Strings fork_labels;
    Strings events = {"pull_request", "push", "pytorch-pr-trigger", "pytorch-crcr"};
};

struct UpstreamConfig {
    Path mirror;
    std::string remote;
    Duration git_timeout = std::chrono::minutes(10);
};

struct SelectionConfig {
    Path rules;
    std::map<std::string, std::string> concurrency = {{"pull_request", "pr"}, {"push", "branch"}};
    bool post_merge = false;  // a merged PR's `closed` also queues a run on merge_commit_sha
    Duration reuse_window = std::chrono::seconds(
        0);  // docs/verdicts.md: a tier passed on the same SHA within it is not run again
};

struct RunnerConfig {
    std::string name;
    Strings labels;
    std::map<std::string, std::string> env;
    Strings devices;
    Strings health_check;
    std::optional<std::string> device_model;
};

struct ExecutionConfig {
    std::string executor = "local";  // one of exec::executor_keys()'s names
    RerunScope rerun = RerunScope::failed_tests;
    /// The chosen executor's own section (`execution.<executor>`), as its folder read it;
    /// null when it has none. section<T>() gives it as the executor's type.
    std::shared_ptr<const ExecutorSection> executor_section;
    template <class T>
    const T* section() const {
        return dynamic_cast<const T*>(executor_section.get());
    }
    Strings command;
    Path work_root;
    std::map<std::string, std::string> env;
    Isolation isolation = Isolation::bwrap;
    /// The account tests run as: with isolation user, and with bwrap when the daemon runs as
    /// root (default there: nobody).
    std::optional<std::string> user;
    Network network = Network::host;
    /// The sandbox launcher's socket (crcrd-sandbox.socket): bubblewrap starts there, in a unit
    /// allowed to make namespaces, instead of under the daemon (bwrap, local executor, not root).
    std::optional<Path> sandbox_socket;
    Duration stall_timeout = std::chrono::seconds(300);
    Duration device_wait = std::chrono::minutes(30);
    Duration health_interval = std::chrono::seconds(30);
    /// After a stall or timeout, how long a slot's devices may stay held before it goes offline
    /// (docs/execution.md).
    Duration card_release_timeout = std::chrono::seconds(60);
    Duration lease_ttl = std::chrono::seconds(60);
    std::uint64_t max_log_bytes = 64ULL * 1024 * 1024;
    std::uint64_t min_free_bytes = 1ULL * 1024 * 1024 * 1024;
    std::uint32_t infra_retries = 2;
    std::uint32_t flaky_reruns = 1;
    bool keep_failed_workspaces = false;
    std::optional<Path> backend_dir;
    Strings driver_version_command;
};

struct ClassifyConfig {
    BaseCheck base_check = BaseCheck::lookup;
    Duration base_window = std::chrono::hours(24);
    // Defaults for a PyTorch accelerator backend (docs/reporting.md); RE2 regexes.
    // The hardware signatures docs/execution.md lists first (torch-spyre's CI maps them so): the
    // matched signature is kept in the evidence.
    Strings device_patterns = {"RAS::VFIO::DeviceOpenFail",
                               "RAS::CBRB::ResponseTimeout",
                               "RAS::PCI::BusFence",
                               "RAS::[A-Za-z0-9_]+::[A-Za-z0-9_]+",
                               "[Ff]ailed to open (the )?(VFIO )?device",
                               "Device or resource busy",
                               "No (Spyre|AIU) devices? (found|available)"};
    Strings infra_patterns = {
        "No space left on device", "ERROR: Could not install packages",
        "Could not resolve host",  "Temporary failure in name resolution",
        "fatal: unable to access", "ModuleNotFoundError: No module named 'torch'"};
};

/// docs/verdicts.md: trunk regressions on these branches (and in scheduled runs) are placed in a
/// range of commits; with max_runs > 0 crcrd bisects it with runs of only the failing tests.
struct BisectConfig {
    std::uint32_t max_runs = 0;  // 0: report the range only
    Strings refs = {"main"};     // branch names ("main" or "refs/heads/main")
};

/// One window of a request budget: at most `requests` requests in any span of `per`.
struct BudgetWindowConfig {
    std::int64_t requests = 0;
    Duration per{};
};

struct GithubReportConfig {
    std::string api_url = "https://api.github.com";
    std::string repo;
    std::optional<Path> token_file;
    std::optional<Path> ca_file;
    std::optional<std::int64_t> app_id;
    std::optional<Path> private_key_file;
    std::optional<std::int64_t> installation_id;
    std::string context_prefix = "crcr";
    std::string mode = "advisory";
    /// GitHub's published secondary limits for content-creating requests (docs/reporting.md).
    std::vector<BudgetWindowConfig> budget = {{80, std::chrono::minutes(1)},
                                              {500, std::chrono::hours(1)}};
};

/// report.crcr_callback (docs/reporting.md): the relay's callback endpoint, or a file that
/// receives the same bodies (the demo, or a dry run before the relay is set up).
struct CrcrCallbackConfig {
    std::string url;                 // https://.../github/callback; or empty with `file`
    std::optional<Path> file;        // instead of url: append each body as a JSON line
    std::optional<Path> token_file;  // read at every use
    Strings token_command;           // argv; stdout is the token (an OIDC JWT), cached token_ttl
    Duration token_ttl = std::chrono::minutes(5);
    std::string workflow_name = "crcrd";
    std::string scheduled_event_type = "nightly";  // nightly | periodic
    std::optional<Path> ca_file;
    /// The relay's limit per repository (its RATE_LIMIT_PER_MIN default).
    std::vector<BudgetWindowConfig> budget = {{100, std::chrono::minutes(1)}};
};

struct ReportConfig {
    std::optional<GithubReportConfig> github;
    std::optional<Path> file;
    std::optional<CrcrCallbackConfig> crcr_callback;
    // crcrd's additions (docs/reporting.md):
    std::optional<std::string> context_prefix;  // for the file sink when report.github is absent
    std::string target_url;                     // "{run_id}" is replaced; empty: no link
    Duration retry_initial = std::chrono::seconds(2);
    Duration retry_max = std::chrono::minutes(10);
    Duration timeout = std::chrono::seconds(30);      // one request to GitHub or the relay
    Duration min_interval = std::chrono::seconds(1);  // between two POSTs to GitHub (its advice)
    /// The context prefix in force: report.github's, else report.context_prefix, else "crcr".
    std::string prefix() const {
        return github ? github->context_prefix : context_prefix.value_or("crcr");
    }
};

struct AdminToken {
    std::string name;
    std::string sha256;  // lower-case hex
    std::string role;    // read | admin
};

struct AdminConfig {
    std::vector<AdminToken> tokens;
    std::optional<std::string> listen;  // "HOST:PORT": a listener of its own for the admin API
    std::string listen_host;            // parsed from `listen`
    std::uint16_t listen_port = 0;
    bool metrics_public = false;
    bool ui_public =
        false;  // the dashboard readable without a token (writes still need an admin session)
};

/// recovery: (docs/ingest.md) finding the deliveries GitHub failed to make while crcrd was
/// down, through the hook's delivery log, and asking GitHub to redeliver them.
struct RecoveryConfig {
    std::string repo;  // the repository hook: {repo, hook_id}
    std::int64_t hook_id = 0;
    bool app = false;  // or the GitHub App's own hook (App JWT)
    Duration interval = std::chrono::minutes(10);
    Duration lookback = std::chrono::hours(72);  // the first pass; GitHub keeps 3 days
};

/// `build.ccache`: a compiler cache the build gets as CCACHE_DIR, CCACHE_BASEDIR, CCACHE_MAXSIZE.
struct BuildCcacheConfig {
    Path dir;
    std::uint64_t max_size = 5ULL * 1024 * 1024 * 1024;
};

/// `build:` (docs/build.md): one build per key, on CPU build slots, before any tier of a run
/// leases a device; absent, runs have no build stage.
struct BuildConfig {
    Strings command;  // argv, like execution.command
    Duration timeout = std::chrono::hours(2);
    Duration stall_timeout = std::chrono::minutes(30);
    /// CPU build slots build-1 ... build-N: builds at once (local: on this host; slurm: build
    /// jobs in Slurm).
    std::uint32_t slots = 1;
    /// The chosen executor's own keys of `build:`, as its folder read them (null: none);
    /// section<T>() gives them as the executor's type.
    std::shared_ptr<const ExecutorSection> executor_section;
    template <class T>
    const T* section() const {
        return dynamic_cast<const T*>(executor_section.get());
    }
    Path cache_dir;
    std::uint64_t cache_max_bytes = 50ULL * 1024 * 1024 * 1024;
    Strings key_env;  // names of execution.env variables that enter the key
    std::optional<BuildCcacheConfig> ccache;
};

struct Config {
    Path source;  // the file this was loaded from
    std::string log_level = "info";
    ServerConfig server;
    StorageConfig storage;
    IngestConfig ingest;
    TrustConfig trust;
    UpstreamConfig upstream;
    SelectionConfig selection;
    std::vector<RunnerConfig> runners;
    ExecutionConfig execution;
    ClassifyConfig classify;
    BisectConfig bisect;
    std::optional<BuildConfig> build;  // set when the file has a build section
    ReportConfig report;
    AdminConfig admin;
    std::optional<RecoveryConfig> recovery;  // set when recovery.github_hook is
};

/// What loading produced: a config when `errors` is empty, otherwise every error found, each
/// starting with the key path ("server.tls.cert: ...") and the YAML line when known.
struct Loaded {
    std::optional<Config> config;
    std::vector<std::string> errors;
};

/// Reads and validates `path`, knowing the executors `executors` (exec::executor_keys()).
/// Relative paths inside the file are resolved against the file's directory. Never throws
/// for bad input; never reads secret files (see secrets.hpp).
Loaded load(const Path& path, const std::vector<ExecutorKeys>& executors);

/// Same as load() for YAML text already in memory; `base_dir` resolves relative paths.
Loaded parse(const std::string& yaml_text, const Path& base_dir,
             const std::vector<ExecutorKeys>& executors, const Path& source = {});

}  // namespace crcrd::config
