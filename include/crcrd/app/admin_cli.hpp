#pragma once
// The admin commands of crcrctl (CONTRACT.md §8): each one request to the admin API,
// printed as a table for people or, with --json, as the API's JSON.

#include <filesystem>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

namespace crcrd::app {

struct AdminCliOptions {
    std::string url = "https://127.0.0.1:8443";  // the admin listener, without a path
    std::optional<std::filesystem::path> token_file;
    std::optional<std::filesystem::path> cacert;
};

/// True for the command groups admin_command() handles: runs, jobs, runners, deliveries, outbox.
bool is_admin_command(const std::string& group);

/// Runs `group args...` (e.g. "runs", {"list", "--state", "running"}). Prints the result to
/// `out` and problems to `err`. Returns 0 on success, 1 when the request failed or the API
/// refused it (its message is printed), 2 on bad arguments or an unreadable token file.
int admin_command(const std::string& group, const std::vector<std::string>& args, const AdminCliOptions& opts,
                  std::ostream& out, std::ostream& err);

/// The usage lines of the admin commands.
const char* admin_usage();

}  // namespace crcrd::app
