#pragma once
// Resolving a run's changed paths (docs/selection.md): payload, complete push commits, the
// local upstream mirror, GitHub's PR files API, else unknown. Blocking (git, HTTPS): call it
// from a worker thread.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "crcrd/config/config.hpp"
#include "crcrd/core/vocab.hpp"
#include "crcrd/github/auth.hpp"
#include "crcrd/select/selection.hpp"

namespace crcrd::select {

/// What a run knows about its commit.
struct RunRef {
    RunEvent event = RunEvent::pull_request;
    std::string sha;
    std::optional<std::int64_t> pr;
    std::string ref;
    std::string base_ref;
    std::string base_sha;
    nlohmann::json inputs =
        nlohmann::json::object();  // changed_files, push_files, push_commit_count
};

struct SourceSettings {
    config::UpstreamConfig upstream;                   // mirror empty: no git source
    std::optional<config::GithubReportConfig> github;  // unset: no API source
    /// Credentials for `github`, kept between look-ups so that a GitHub App's installation
    /// token is exchanged once, not for every run; made for each look-up when unset.
    std::shared_ptr<github::Auth> github_auth;
    std::string upstream_repo = "pytorch/pytorch";
};

/// GitHub includes at most this many commits in a push payload; a push with this many is
/// not known to be complete.
inline constexpr std::size_t k_push_commit_cap = 20;

/// Tries each source in order and returns the first answer; `note` says why earlier ones
/// did not answer. Never throws; the worst case is Source::unknown. Safe to call from several
/// threads at once for runs that needs_github_lookup() (the planner's look-up pool); runs
/// that need the mirror are resolved by the planner's thread alone.
ChangedPaths resolve_changed_paths(const RunRef& run, const SourceSettings& settings);

/// Whether resolve_changed_paths() would start with the GitHub API for `run` (the run itself
/// does not say, and there is no mirror), so that the planner looks those up concurrently.
/// Runs that need the mirror are looked up one after the other, in order, as the mirror is
/// one repository on disk.
bool needs_github_lookup(const RunRef& run, const SourceSettings& settings);

/// Whether resolve_changed_paths() would look `run`'s paths up anywhere (the mirror or the
/// GitHub API). False when the run itself has them (payload, push commits), needs none
/// (schedule, manual, bisect) or no source is configured: then it answers at once, without
/// blocking, and the run can be planned inside the writer's transaction that stores it.
bool needs_lookup(const RunRef& run, const SourceSettings& settings);

/// The mirror source alone: the run's base SHA, else its base branch, compared with its SHA
/// by vcs::changed_paths (the mirror at `upstream.mirror` is created on first use).
Result<std::vector<std::string>> git_changed_paths(const RunRef& run,
                                                   const config::UpstreamConfig& upstream);

/// The API source alone: GET /repos/{repo}/pulls/{n}/files, every page, with `auth`'s token.
Result<std::vector<std::string>> github_changed_paths(std::int64_t pr,
                                                      const config::GithubReportConfig& gh,
                                                      github::Auth& auth,
                                                      const std::string& upstream_repo);

}  // namespace crcrd::select
