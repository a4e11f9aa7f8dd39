#pragma once
// The build stage's files (docs/build.md): the key a build is known by, the folder a build
// fills and its atomic publication into the cache, the checks on what a build left there, and
// the cache's housekeeping. The dispatcher decides when; these do the file work.

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "crcrd/config/config.hpp"
#include "crcrd/core/result.hpp"

namespace crcrd::exec {

/// Bumped when what a build is given changes in a way its key must see.
inline constexpr int k_build_recipe_version = 1;

/// Everything a build's output depends on, as the key sees it.
struct BuildKeyInputs {
    std::string upstream_sha;
    std::string backend_sha;                                   // "" without execution.backend_dir
    std::vector<std::string> argv;                             // build.command
    std::string command_sha256;                                // of the command file's bytes
    std::vector<std::pair<std::string, std::string>> key_env;  // build.key_env, in order
    int version = k_build_recipe_version;
};

/// SHA-256 (hex) of the inputs, each field length-prefixed so that no two inputs share a key.
/// Pure.
std::string build_key(const BuildKeyInputs& in);

/// The inputs of every key this configuration makes, but the upstream SHA: the backend's HEAD
/// (git, blocking), the command file's hash, the key_env values.
BuildKeyInputs build_recipe(const config::BuildConfig& b,
                            const std::map<std::string, std::string>& execution_env,
                            const std::optional<std::filesystem::path>& backend_dir);

/// `<cache_dir>/<key>`: a published build.
std::filesystem::path build_dir(const std::filesystem::path& cache_dir, const std::string& key);
/// `<cache_dir>/.partial/<key>.<job_id>`: where attempt `job_id` builds `key`.
std::filesystem::path partial_dir(const std::filesystem::path& cache_dir, const std::string& key,
                                  std::int64_t job_id);
/// Makes an empty partial folder for the attempt (an old one of the same attempt is removed).
Result<std::filesystem::path> make_partial(const std::filesystem::path& cache_dir,
                                           const std::string& key, std::int64_t job_id);

/// Checks what a build left in `out` and publishes it as `<cache_dir>/<key>` with one rename;
/// its size in bytes. Refused (code infra_error, the path named, nothing published, `out`
/// removed): a symbolic link whose target leaves the folder (absolute, or `..` past its top),
/// a file that is neither regular, a folder nor such a link (a fifo, a socket, a device),
/// more than `max_entries` entries.
Result<std::int64_t> publish_build(const std::filesystem::path& out,
                                   const std::filesystem::path& cache_dir, const std::string& key,
                                   std::int64_t max_entries = 5'000'000);

/// Removes a published build (renamed aside first, so a half-removed folder is never seen as
/// the build).
void remove_build(const std::filesystem::path& cache_dir, const std::string& key);
/// At start: removes every partial folder but `keep` (those of builds that go on outside the
/// daemon, adopted), and whatever a removal left aside.
void clean_partials(const std::filesystem::path& cache_dir,
                    const std::vector<std::filesystem::path>& keep = {});

}  // namespace crcrd::exec
