#include "crcrd/vcs/mirror.hpp"

#include <algorithm>
#include <cctype>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>

#include "crcrd/core/files.hpp"

namespace crcrd::vcs {

namespace {

/// The NUL-separated fields of `git ... -z` output.
std::vector<std::string> lines_z(const std::string& out) {
    std::vector<std::string> v;
    std::size_t start = 0;
    while (start < out.size()) {
        auto end = out.find('\0', start);
        if (end == std::string::npos) end = out.size();
        if (end > start) v.push_back(out.substr(start, end - start));
        start = end + 1;
    }
    return v;
}

/// The first `[include]` or `[includeIf ...]` section of a git config text (section names
/// are case-insensitive), or "" when it has none.
std::string include_section(const std::string& text) {
    std::size_t start = 0;
    while (start < text.size()) {
        std::size_t end = text.find('\n', start);
        if (end == std::string::npos) end = text.size();
        std::string line = trim(text.substr(start, end - start));
        start = end + 1;
        if (line.size() < 8 || line.front() != '[') continue;
        std::string name = line.substr(1, 7);
        std::transform(name.begin(), name.end(), name.begin(),
                       [](unsigned char c) { return std::tolower(c); });
        if (name == "include") return line;
    }
    return {};
}

/// Every git command crcrd runs, `git WHERE... ARGS...` (args[0] the subcommand).
Result<SubprocessResult> run_git(const std::vector<std::string>& where,
                                 const std::vector<std::string>& args,
                                 std::chrono::milliseconds timeout) {
    // Whatever a repository's config says, no hook and no fsmonitor runs: hooksPath names a
    // file, so no hook is ever found under it. No system or user configuration, no prompts.
    std::vector<std::string> argv = {"git", "-c", "core.hooksPath=/dev/null", "-c",
                                     "core.fsmonitor=false"};
    argv.insert(argv.end(), where.begin(), where.end());
    argv.insert(argv.end(), args.begin(), args.end());
    SubprocessOptions o;
    o.timeout = timeout;
    o.env = std::vector<std::string>{
        "PATH=/usr/local/bin:/usr/bin:/bin", "GIT_TERMINAL_PROMPT=0", "GIT_CONFIG_NOSYSTEM=1",
        "GIT_CONFIG_GLOBAL=/dev/null",       "HOME=/nonexistent",     "LANG=C"};
    auto r = run_subprocess(argv, o);
    if (!r) return r.error();
    const std::string& what = args.front();
    if (r->timed_out) return make_error(Errc::git, "git " + what + " timed out");
    if (r->exit_code != 0) {
        std::string msg = trim(r->err);
        if (msg.size() > 300) msg.resize(300);
        return make_error(Errc::git, "git " + what + ": " + msg);
    }
    return r;
}

/// The lock over a mirror's worktree records: `git worktree add` of one job and `git worktree
/// prune` of another, at once, let the prune remove the half-made record of the add.
std::mutex& worktrees_lock(const std::filesystem::path& mirror) {
    static std::mutex guard;
    static std::map<std::string, std::unique_ptr<std::mutex>> locks;
    std::lock_guard lk(guard);
    auto& m = locks[mirror.lexically_normal().string()];
    if (!m) m = std::make_unique<std::mutex>();
    return *m;
}

}  // namespace

Result<SubprocessResult> git(const config::UpstreamConfig& up, std::vector<std::string> args) {
    // A config include could bring settings from a file the daemon does not own; the mirror's
    // own config is the daemon's alone (docs/security.md).
    if (auto text = read_file(up.mirror / "config", 1 << 20)) {
        if (auto section = include_section(*text); !section.empty()) {
            return make_error(Errc::git,
                              "the mirror's config " + (up.mirror / "config").string() + " has " +
                                  section +
                                  ": crcrd uses no config includes in its mirror; remove it");
        }
    }
    return run_git({"--git-dir=" + up.mirror.string()}, args, up.git_timeout);
}

Result<std::string> head_of(const std::filesystem::path& dir) {
    auto r = run_git({"-C", dir.string()}, {"rev-parse", "HEAD"}, std::chrono::seconds(30));
    if (!r) return r.error();
    return trim(r->out);
}

bool has_commit(const config::UpstreamConfig& up, const std::string& rev) {
    return static_cast<bool>(git(up, {"cat-file", "-e", rev + "^{commit}"}));
}

Status ensure_mirror(const config::UpstreamConfig& up) {
    if (std::filesystem::exists(up.mirror / "HEAD")) return Ok{};
    std::error_code ec;
    std::filesystem::create_directories(up.mirror, ec);
    if (!run_git({}, {"init", "--bare", "--quiet", up.mirror.string()}, up.git_timeout)) {
        return make_error(Errc::git, "cannot create mirror " + up.mirror.string());
    }
    return Ok{};
}

/// Fetches `revs` that the mirror does not have yet (SHAs or ref names).
Status fetch(const config::UpstreamConfig& up, const std::vector<std::string>& revs) {
    std::vector<std::string> missing;
    for (const auto& r : revs)
        if (!has_commit(up, r)) missing.push_back(r);
    if (missing.empty()) return Ok{};
    if (up.remote.empty())
        return make_error(Errc::git,
                          "upstream.remote is not set and the mirror lacks " + missing.front());
    std::vector<std::string> args = {"fetch", "--quiet", "--no-tags", "--no-write-fetch-head",
                                     up.remote};
    args.insert(args.end(), missing.begin(), missing.end());
    auto r = git(up, args);
    if (!r) return r.error();
    return Ok{};
}

Status add_checkout(const config::UpstreamConfig& up, const std::filesystem::path& dest,
                    const std::string& sha) {
    if (up.mirror.empty()) return make_error(Errc::git, "no upstream.mirror configured");
    if (auto s = ensure_mirror(up); !s) return s;
    if (auto s = fetch(up, {sha}); !s) return s;
    std::error_code ec;
    std::filesystem::create_directories(dest.parent_path(), ec);
    std::unique_lock lk(worktrees_lock(up.mirror));
    auto added = git(up, {"worktree", "add", "--quiet", "--detach", "--force", dest.string(), sha});
    lk.unlock();
    if (!added) return added.error();
    auto head = head_of(dest);
    if (!head || *head != sha) {
        remove_checkout(up, dest);
        return make_error(Errc::git, "checkout " + dest.string() + " is not at " + sha);
    }
    return Ok{};
}

void remove_checkout(const config::UpstreamConfig& up, const std::filesystem::path& dest) {
    std::lock_guard lk(worktrees_lock(up.mirror));
    (void)git(up, {"worktree", "remove", "--force", dest.string()});
    std::error_code ec;
    std::filesystem::remove_all(dest, ec);
    (void)git(up, {"worktree", "prune"});
}

Result<std::string> newest_sha(const config::UpstreamConfig& up, const std::string& ref) {
    if (up.mirror.empty()) return make_error(Errc::git, "no upstream.mirror configured");
    if (auto s = ensure_mirror(up); !s) return s.error();
    const std::string full = "refs/heads/" + ref;
    if (!up.remote.empty()) {
        auto f = git(up, {"fetch", "--quiet", "--no-tags", "--no-write-fetch-head", up.remote,
                          "+" + full + ":" + full});
        if (!f) return f.error();
    }
    auto r = git(up, {"rev-parse", "--verify", full + "^{commit}"});
    if (!r) return r.error();
    return trim(r->out);
}

Result<std::vector<std::string>> changed_paths(const config::UpstreamConfig& up,
                                               const std::string& base, const std::string& sha) {
    if (auto s = ensure_mirror(up); !s) return s.error();
    std::vector<std::string> want = {sha};
    if (base.rfind("refs/", 0) == 0) {
        // A branch is fetched into the mirror under its own name, so it can be compared.
        if (!up.remote.empty()) {
            auto r = git(up, {"fetch", "--quiet", "--no-tags", "--no-write-fetch-head", up.remote,
                              "+" + base + ":" + base});
            if (!r) return r.error();
        } else if (!has_commit(up, base)) {
            return make_error(Errc::git,
                              "the mirror has no " + base + " and upstream.remote is not set");
        }
    } else {
        want.push_back(base);
    }
    if (auto s = fetch(up, want); !s) return s.error();
    if (!has_commit(up, sha)) return make_error(Errc::git, "the mirror cannot fetch " + sha);
    auto mb = git(up, {"merge-base", base, sha});
    if (!mb) return mb.error();
    std::string merge_base = trim(mb->out);
    auto diff = git(up, {"diff", "--name-only", "-z", "--no-renames", merge_base, sha});
    if (!diff) return diff.error();
    return lines_z(diff->out);
}

Result<std::vector<FirstParentCommit>> first_parent_commits(const config::UpstreamConfig& up,
                                                            const std::string& from,
                                                            const std::string& to,
                                                            std::size_t max) {
    auto r = git(up, {"rev-list", "--first-parent", "--parents",
                      "--max-count=" + std::to_string(max), from + ".." + to});
    if (!r) return r.error();
    std::vector<FirstParentCommit> out;
    std::istringstream lines(r->out);
    for (std::string line; std::getline(lines, line);) {
        if (line.empty()) continue;
        std::istringstream words(line);
        FirstParentCommit c;
        words >> c.sha >> c.parent;  // later parents (a merge's) are not needed
        out.push_back(std::move(c));
    }
    std::reverse(out.begin(), out.end());  // rev-list lists newest first
    return out;
}

Result<CommitMessage> commit_message(const config::UpstreamConfig& up, const std::string& sha) {
    auto r = git(up, {"show", "--no-patch", "--format=%s%x00%B", sha});
    if (!r) return r.error();
    std::string out = std::move(r->out);
    while (!out.empty() && out.back() == '\n') out.pop_back();
    const auto nul = out.find('\0');
    if (nul == std::string::npos) return CommitMessage{out, out};
    return CommitMessage{out.substr(0, nul), out.substr(nul + 1)};
}

Result<std::vector<std::string>> commit_paths(const config::UpstreamConfig& up,
                                              const std::string& sha, const std::string& parent) {
    auto r =
        parent.empty()
            ? git(up, {"diff-tree", "--root", "-r", "--name-only", "--no-commit-id", "-z", sha})
            : git(up, {"diff", "--name-only", "--no-renames", "-z", parent, sha});
    if (!r) return r.error();
    return lines_z(r->out);
}

}  // namespace crcrd::vcs
