#pragma once
// A daemon with a build stage (docs/build.md), for the tests that run one: its scripts
// installed where the sandbox's user can reach them, its configuration, and deliveries of a
// chosen upstream SHA.

#include <cstdint>
#include <filesystem>
#include <string>

#include "support/daemon.hpp"

namespace crcrd {

/// Writes `text` as an executable script at `path`, its folder traversable (a backend's
/// scripts live outside the daemon's folders).
void install_script(const std::filesystem::path& path, const std::string& text);

/// What a build-stage daemon runs and how.
struct BuildStageSetup {
    std::filesystem::path build_script;  // build.command
    std::filesystem::path test_script;   // execution.command
    std::string tiers;                   // the tiers of selection.yaml, each "  - {...}\n"
    std::string env;                     // ", KEY: value" pairs for execution.env
    std::string execution;               // more lines under execution: (each "  key: value\n")
    std::string build;                   // more lines under build:
    std::string admin_tokens;            // the entries of admin.tokens
};

/// Writes `dir`/selection.yaml and returns the daemon's extra configuration: one card
/// (card-0), the tiers' command, state/work, a build: section with cache_dir state/builds and a
/// one-minute timeout, the report file state/statuses.jsonl, and the admin tokens.
std::string build_stage_config(const std::filesystem::path& dir, const BuildStageSetup& s);

/// Posts a CRCR delivery (the relay's direct form) of `sha` as PR `pr` (its base: the
/// fixture's), signed with Standard Webhooks; the run it queued.
std::int64_t post_sha(TestDaemon& daemon, const std::string& sha, int pr, const std::string& id);

}  // namespace crcrd
