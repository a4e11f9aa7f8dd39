#include "crcrd/select/changed_paths.hpp"

#include <spdlog/spdlog.h>

#include <filesystem>
#include <functional>

#include "crcrd/github/auth.hpp"
#include "crcrd/github/client.hpp"
#include "crcrd/http/client.hpp"
#include "crcrd/vcs/mirror.hpp"

namespace crcrd::select {

using nlohmann::json;

namespace {

std::optional<std::vector<std::string>> strings_at(const json& j, const char* key) {
    if (!j.contains(key) || !j[key].is_array()) return std::nullopt;
    std::vector<std::string> v;
    for (const auto& e : j[key])
        if (e.is_string()) v.push_back(e.get<std::string>());
    return v;
}

}  // namespace

Result<std::vector<std::string>> git_changed_paths(const RunRef& run,
                                                   const config::UpstreamConfig& up) {
    if (auto s = vcs::ensure_mirror(up); !s) return s.error();
    // The base: the payload's base SHA, else the base branch's tip.
    std::string base = run.base_sha;
    if (base.empty() && !run.base_ref.empty()) base = "refs/heads/" + run.base_ref;
    if (base.empty()) return make_error(Errc::git, "no base commit to compare with");
    return vcs::changed_paths(up, base, run.sha);
}

Result<std::vector<std::string>> github_changed_paths(std::int64_t pr,
                                                      const config::GithubReportConfig& gh,
                                                      github::Auth& auth,
                                                      const std::string& upstream_repo) {
    // A token file (read each time) or a GitHub App's installation token (cached by `auth`).
    auto token = auth.token();
    if (!token) return make_error(Errc::github_api, token.error().message);
    github::Client client(gh.api_url, *token, gh.ca_file, std::chrono::seconds(30));
    std::vector<std::string> files;
    auto listed = client.list(
        "/repos/" + upstream_repo + "/pulls/" + std::to_string(pr) + "/files?per_page=100", 40,
        [&](const json& page) {
            for (const auto& f : page) {
                if (f.is_object() && f.contains("filename") && f["filename"].is_string()) {
                    files.push_back(f["filename"].get<std::string>());
                }
                // A rename changes its old path too.
                if (f.is_object() && f.contains("previous_filename") &&
                    f["previous_filename"].is_string()) {
                    files.push_back(f["previous_filename"].get<std::string>());
                }
            }
            return true;
        });
    if (const auto& e = listed.error) {
        using Kind = github::ListError::Kind;
        switch (e->kind) {
            case Kind::transport:
                return make_error(Errc::github_api, e->message);
            case Kind::status:
                // A revoked or expired installation token: exchanged anew at the next look-up.
                if (e->status == 401 && gh.app_id) auth.invalidate();
                return make_error(Errc::github_api,
                                  "GET " + e->url + " answered " + std::to_string(e->status));
            case Kind::not_a_list:
                return make_error(Errc::github_api, "unexpected answer from " + e->url);
            case Kind::foreign_next:
                return make_error(Errc::github_api, "the Link header's next page " +
                                                        e->url.substr(0, 200) + " is not on " +
                                                        client.base() +
                                                        "; not followed with the token");
        }
    }
    return files;
}

namespace {

/// The sources read from the run itself, in order: the answer, if one of them has it.
std::optional<ChangedPaths> from_the_run(const RunRef& run,
                                         const std::function<void(const std::string&)>& note) {
    if (run.event == RunEvent::schedule)
        return ChangedPaths{Source::schedule, {}, ""};  // every tier anyway
    if (run.event == RunEvent::manual || run.event == RunEvent::bisect)
        return ChangedPaths{Source::manual, {}, ""};  // the tiers asked for
    if (auto files = strings_at(run.inputs, "changed_files")) {
        return ChangedPaths{Source::payload, std::move(*files), ""};
    }
    if (auto files = strings_at(run.inputs, "push_files")) {
        std::size_t commits = run.inputs.value("push_commit_count", std::size_t{0});
        if (commits < k_push_commit_cap && !run.base_sha.empty()) {
            return ChangedPaths{Source::push_commits, std::move(*files), ""};
        }
        note(run.base_sha.empty()
                 ? "push_commits: a new ref has no base to compare with"
                 : "push_commits: " + std::to_string(commits) + " commits may be truncated");
    }
    return std::nullopt;
}

}  // namespace

bool needs_lookup(const RunRef& run, const SourceSettings& settings) {
    // The settings first: with no source to look in, the run's own paths (a copy of every
    // changed file) are not read for nothing.
    if (settings.upstream.mirror.empty() && !(run.pr && settings.github)) return false;
    return !from_the_run(run, [](const std::string&) {});
}

bool needs_github_lookup(const RunRef& run, const SourceSettings& settings) {
    // The mirror comes before the API: with one, the API is never the next source.
    return settings.upstream.mirror.empty() && needs_lookup(run, settings);
}

ChangedPaths resolve_changed_paths(const RunRef& run, const SourceSettings& settings) {
    ChangedPaths out;
    std::string notes;
    auto note = [&](const std::string& n) { notes += (notes.empty() ? "" : "; ") + n; };

    if (auto answer = from_the_run(run, note)) return std::move(*answer);
    if (!settings.upstream.mirror.empty()) {
        auto files = git_changed_paths(run, settings.upstream);
        if (files) return ChangedPaths{Source::git, std::move(*files), notes};
        note(files.error().message);
    } else {
        note("git: no upstream.mirror configured");
    }
    if (run.pr && settings.github) {
        std::shared_ptr<github::Auth> auth = settings.github_auth;
        if (!auth)
            auth = std::make_shared<github::Auth>(*settings.github, std::chrono::seconds(30));
        auto files = github_changed_paths(*run.pr, *settings.github, *auth, settings.upstream_repo);
        if (files) return ChangedPaths{Source::github_api, std::move(*files), notes};
        note(files.error().message);
    } else {
        note(run.pr ? "github_api: report.github is not configured"
                    : "github_api: not a pull request");
    }
    out.source = Source::unknown;
    out.note = notes;
    return out;
}

}  // namespace crcrd::select
