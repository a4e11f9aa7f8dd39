#pragma once
// The local upstream mirror: a bare repository crcrd keeps up to date, used for changed
// paths (select), the newest SHA of a branch (the full matrix, sched) and pinned checkouts
// (exec). git runs by execve with `upstream.git_timeout`, no prompts and a clean environment,
// and never runs a hook or an fsmonitor, whatever a repository's config says; a mirror whose
// config includes other files is refused. Blocking: call from worker threads. Every error has
// the code "git" and git's message.

#include <filesystem>
#include <string>
#include <vector>

#include "crcrd/config/config.hpp"
#include "crcrd/core/result.hpp"
#include "crcrd/core/subprocess.hpp"

namespace crcrd::vcs {

/// Runs `git --git-dir=<mirror> ARGS`; a non-zero exit is an error (code "git") carrying
/// git's message, and so is a mirror config with an [include] or [includeIf] section.
Result<SubprocessResult> git(const config::UpstreamConfig& up, std::vector<std::string> args);

/// The commit checked out in the repository or worktree `dir` (`git rev-parse HEAD`).
Result<std::string> head_of(const std::filesystem::path& dir);

/// Whether the mirror has `rev` as a commit.
bool has_commit(const config::UpstreamConfig& up, const std::string& rev);

/// Creates the bare mirror on first use.
Status ensure_mirror(const config::UpstreamConfig& up);

/// Fetches those of `revs` (SHAs) the mirror does not have from `upstream.remote`.
Status fetch(const config::UpstreamConfig& up, const std::vector<std::string>& revs);

/// A detached worktree of the mirror at `sha` in `dest` (fetched first when missing),
/// verified to have HEAD == sha. Errors name the step that failed. Safe to call from several
/// threads: worktree records are changed under one lock per mirror (with remove_checkout).
Status add_checkout(const config::UpstreamConfig& up, const std::filesystem::path& dest,
                    const std::string& sha);

/// Removes a checkout made by add_checkout (and git's record of it). Best effort.
void remove_checkout(const config::UpstreamConfig& up, const std::filesystem::path& dest);

/// The newest commit of branch `ref` in the mirror (created on first use), fetched from the
/// remote first when one is configured.
Result<std::string> newest_sha(const config::UpstreamConfig& up, const std::string& ref);

/// The paths that differ between merge-base(`base`, `sha`) and `sha` (`git diff --name-only`,
/// renames as a deletion and an addition). `base` is a SHA, fetched when missing, or a full
/// ref name ("refs/heads/main"), fetched under its own name when `upstream.remote` is set.
/// Creates the mirror on first use.
Result<std::vector<std::string>> changed_paths(const config::UpstreamConfig& up,
                                               const std::string& base, const std::string& sha);

/// A commit of a first-parent line and its first parent ("" for a root commit).
struct FirstParentCommit {
    std::string sha, parent;
};

/// The first-parent commits after `from` up to `to` (`git rev-list --first-parent from..to`),
/// oldest first; at most `max`, the newest ones. Both must be in the mirror (see fetch).
Result<std::vector<FirstParentCommit>> first_parent_commits(const config::UpstreamConfig& up,
                                                            const std::string& from,
                                                            const std::string& to, std::size_t max);

/// A commit's message: its subject (the first paragraph on one line, as `%s`) and the whole
/// text, trailing newlines removed.
struct CommitMessage {
    std::string subject, body;
};
Result<CommitMessage> commit_message(const config::UpstreamConfig& up, const std::string& sha);

/// The paths commit `sha` changed against `parent` (`git diff --name-only`, renames as a
/// deletion and an addition), or every file of a root commit when `parent` is "".
Result<std::vector<std::string>> commit_paths(const config::UpstreamConfig& up,
                                              const std::string& sha, const std::string& parent);

}  // namespace crcrd::vcs
