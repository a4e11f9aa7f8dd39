#pragma once
// The admin commands of crcrctl (docs/operations.md): each one request (recover: a few) to the
// admin API, printed as a table for people or, with --json, as the API's JSON. The command line
// is parsed in main/crcrctl.cpp; these take what it parsed.

#include <filesystem>
#include <iosfwd>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "crcrd/core/result.hpp"

namespace crcrd::app {

/// crcrctl's exit codes (docs/operations.md).
inline constexpr int k_exit_ok = 0;
inline constexpr int k_exit_failure = 1;  // anything below not covered (409, 5xx, a failed pass)
inline constexpr int k_exit_usage = 2;    // bad arguments, found locally or answered 400
inline constexpr int k_exit_unreachable = 3;   // cannot resolve, connect, or complete TLS
inline constexpr int k_exit_unauthorised = 4;  // 401 or 403
inline constexpr int k_exit_not_found = 5;     // 404

/// How crcrctl reaches the daemon; the same for every command.
struct AdminCliOptions {
    /// The daemon's base URL (the listener's scheme, host and port, plus a path prefix when a
    /// proxy adds one); each command appends its route (endpoint()).
    std::string url = "https://127.0.0.1:8443";
    std::optional<std::filesystem::path> token_file;
    std::optional<std::filesystem::path> cacert;
};

/// `base` (a --url) with `route` ("/api/v1/runs", "/webhook") appended. A trailing '/' and a
/// trailing "/webhook" of `base` are dropped first, so the URL given to `send` in older
/// invocations (https://host:8443/webhook) means the same daemon for every command.
std::string endpoint(std::string base, const std::string& route);

/// The exit code for an HTTP status: 2xx ok, 401/403 unauthorised, 404 not found, anything
/// else failure (the admin commands treat 400 as usage themselves).
int exit_code_of_status(int status);

/// The exit code for an http::send error code: "bad_url" usage, anything else ("network":
/// resolve, connect, TLS handshake or verification, timeout) unreachable.
int exit_code_of_error(Errc code);

enum class AdminCommand {
    runs_list,
    runs_show,
    runs_cancel,
    runs_retry,
    runs_trigger,
    jobs_log,
    runners_list,
    runners_drain,
    runners_undrain,
    deliveries_list,
    outbox_list,
    outbox_retry,
    recover,       // start a pass and wait for it
    recover_list,  // the last passes
    misses,
    builds_list,
    builds_show,
    builds_evict,
    trunk,          // the trunk grid
    tests_history,  // one test's results across runs
    tests_flaky,    // the flakiest tests
    stats,          // the daily roll-ups
    stats_rebuild,  // make them again from the history
};

/// An option of an admin command that becomes a query parameter: `names` as CLI11 takes them
/// ("--run,--run-id"), the API's parameter, the value's name in the help ("N"), and the help
/// line (naming the accepted values where the API has a fixed set).
struct QueryOption {
    std::string names;
    std::string param;
    std::string value;
    std::string help;
};

/// The query options of `c` (filters, paging, --tail); empty for a command without any.
std::span<const QueryOption> query_options(AdminCommand c);

/// One admin command as parsed.
struct AdminRequest {
    AdminCommand command = AdminCommand::runs_list;
    std::string target;  // ID or NAME, for the commands on one thing
    std::vector<std::pair<std::string, std::string>> query;  // API parameter, value
    bool json = false;               // listings: the API's JSON instead of a table
    std::string sha;                 // runs trigger
    std::vector<std::string> tiers;  // runs trigger; none: every tier
};

/// Runs `req` against the daemon of `opts`. Prints the result to `out` and problems to `err`
/// (the API's `error: detail`). Returns one of the k_exit_* codes: 2 also for an unreadable
/// token file or a 400 (the API refused an argument: an unknown filter or a bad value).
int admin_command(const AdminRequest& req, const AdminCliOptions& opts, std::ostream& out,
                  std::ostream& err);

}  // namespace crcrd::app
