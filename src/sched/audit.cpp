#include "crcrd/sched/audit.hpp"

#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <charconv>
#include <regex>

#include "crcrd/core/time.hpp"
#include "crcrd/select/selection.hpp"
#include "crcrd/vcs/mirror.hpp"

namespace crcrd::sched {

namespace {

using nlohmann::json;

/// A PR number of at most 12 digits, else nullopt.
std::optional<std::int64_t> number(std::string_view digits) {
    if (digits.empty() || digits.size() > 12) return std::nullopt;
    std::int64_t n = 0;
    auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), n);
    if (ec != std::errc() || p != digits.data() + digits.size() || n <= 0) return std::nullopt;
    return n;
}

/// A commit between the two scheduled runs, as git tells it.
struct Commit {
    std::string sha, parent;  // parent: "" for a root commit
    std::string subject;
    std::optional<std::int64_t> pr;
    std::vector<std::string> paths;
};

/// Fills in `c`'s subject, PR and changed paths.
Status describe(const config::UpstreamConfig& up, Commit& c) {
    auto msg = vcs::commit_message(up, c.sha);
    if (!msg) return msg.error();
    c.subject = msg->subject;
    c.pr = pr_from_message(msg->body);
    auto paths = vcs::commit_paths(up, c.sha, c.parent);
    if (!paths) return paths.error();
    c.paths = std::move(*paths);
    return Ok{};
}

/// The stored form of the commits in between: [{sha, subject, pr, paths, paths_total, rules,
/// runs}], the rules being those a push of the commit's paths matches.
std::string commits_json(const std::vector<Commit>& commits,
                         const std::vector<store::CommitRuns>& runs, const select::Rules& rules) {
    json out = json::array();
    for (std::size_t i = 0; i < commits.size(); ++i) {
        const Commit& c = commits[i];
        select::ChangedPaths changed{select::Source::git, c.paths, ""};
        json matched = json::array();
        for (const auto& m : select::decide(rules, changed, RunEvent::push).rules)
            matched.push_back(m.name);
        const auto listed = std::min(c.paths.size(), k_audit_max_paths);
        json item = {
            {"sha", c.sha},
            {"subject", c.subject},
            {"pr", c.pr ? json(*c.pr) : json(nullptr)},
            {"paths", std::vector<std::string>(
                          c.paths.begin(), c.paths.begin() + static_cast<std::ptrdiff_t>(listed))},
            {"rules", std::move(matched)},
            {"runs", runs[i].run_ids}};
        if (listed < c.paths.size()) item["paths_total"] = c.paths.size();
        out.push_back(std::move(item));
    }
    return out.dump();
}

}  // namespace

std::optional<std::int64_t> pr_from_message(std::string_view message) {
    static const std::regex k_resolved(
        R"(Pull Request resolved:[ \t]*https?://github\.com/[^/\s]+/[^/\s]+/pull/([0-9]+))");
    std::match_results<std::string_view::const_iterator> m;
    if (std::regex_search(message.begin(), message.end(), m, k_resolved)) {
        if (auto n =
                number(std::string_view(&*m[1].first, static_cast<std::size_t>(m[1].length()))))
            return n;
    }
    // "<subject> (#N)": the first line, trailing blanks aside.
    std::string_view subject = message.substr(0, message.find('\n'));
    while (!subject.empty() &&
           (subject.back() == ' ' || subject.back() == '\t' || subject.back() == '\r')) {
        subject.remove_suffix(1);
    }
    if (subject.size() < 4 || subject.back() != ')') return std::nullopt;
    const auto open = subject.rfind("(#");
    if (open == std::string_view::npos) return std::nullopt;
    return number(subject.substr(open + 2, subject.size() - open - 3));
}

std::vector<store::TierTest> decide_misses(
    const std::vector<store::TierTest>& failed, const std::set<store::TierTest>& passed_before,
    const std::vector<std::set<std::string>>& selected_tiers) {
    std::vector<store::TierTest> out;
    if (selected_tiers.empty()) return out;
    for (const auto& f : failed) {
        if (!passed_before.count(f)) continue;
        const bool selected = std::any_of(
            selected_tiers.begin(), selected_tiers.end(),
            [&](const std::set<std::string>& tiers) { return tiers.count(f.tier) > 0; });
        if (!selected) out.push_back(f);
    }
    return out;
}

Status audit_scheduled_run(const FollowupContext& ctx, std::int64_t run_id) {
    auto in = store::read_audit_inputs(ctx.db_path, run_id);
    if (!in) return in.error();
    if (!in->found || in->event != RunEvent::schedule || in->failed.empty()) return Ok{};
    if (!in->previous) {
        spdlog::info(
            "run_id={} selection-miss audit: no earlier scheduled run of {} to compare with",
            run_id, in->ref.value_or("its ref"));
        return Ok{};
    }
    const auto& prev = *in->previous;
    if (in->passed_before.empty()) {
        spdlog::info("run_id={} selection-miss audit: none of its {} failed tests passed in run {}",
                     run_id, in->failed.size(), prev.id);
        return Ok{};
    }
    const auto& up = ctx.sources.upstream;
    if (up.mirror.empty()) {
        spdlog::warn(
            "run_id={} selection-miss audit skipped: no upstream.mirror to list the commits since "
            "run {}",
            run_id, prev.id);
        return Ok{};
    }
    if (auto s = vcs::ensure_mirror(up); !s) return s;
    if (auto s = vcs::fetch(up, {prev.sha, in->sha}); !s) return s;
    // One more than the cap, so that a longer range is seen as such.
    auto listed = vcs::first_parent_commits(up, prev.sha, in->sha, k_audit_max_commits + 1);
    if (!listed) return listed.error();
    std::vector<Commit> commits;
    for (auto& c : *listed)
        commits.push_back({std::move(c.sha), std::move(c.parent), "", std::nullopt, {}});
    if (commits.size() > k_audit_max_commits) {
        spdlog::warn(
            "run_id={} selection-miss audit: more than {} commits since run {} ({}..{}); nothing "
            "recorded",
            run_id, k_audit_max_commits, prev.id, prev.sha.substr(0, 12), in->sha.substr(0, 12));
        return Ok{};
    }
    if (commits.empty()) {
        spdlog::info(
            "run_id={} selection-miss audit: no commit since run {}: its failures are not "
            "selection misses",
            run_id, prev.id);
        return Ok{};
    }
    for (auto& c : commits) {
        if (auto s = describe(up, c); !s) return s;
    }
    std::vector<store::CommitKey> keys;
    for (const auto& c : commits) keys.push_back({c.sha, c.pr});
    auto runs = store::read_commit_runs(ctx.db_path, keys);
    if (!runs) return runs.error();
    std::vector<std::set<std::string>> selected;
    for (const auto& r : *runs) selected.push_back(r.tiers);
    const auto missed = decide_misses(in->failed, in->passed_before, selected);
    if (missed.empty()) {
        spdlog::info(
            "run_id={} selection-miss audit: every failed test that passed in run {} was selected "
            "by a PR or push "
            "run of the {} commits since",
            run_id, prev.id, commits.size());
        return Ok{};
    }
    const std::string stored = commits_json(commits, *runs, ctx.rules);
    std::vector<store::NewSelectionMiss> rows;
    for (const auto& m : missed) rows.push_back({run_id, prev.id, m.tier, m.test, stored});
    std::int64_t added = 0;
    auto s = ctx.writer.run_sync([&](store::Db& db) {
        added = store::record_selection_misses(db, rows, std::chrono::system_clock::now());
    });
    if (!s) return s;
    spdlog::warn(
        "run_id={} selection miss: {} failed tests passed in run {} and no PR or push run of the "
        "{} commits since "
        "selected their tier (first: {} in {}); {} newly recorded",
        run_id, missed.size(), prev.id, commits.size(), missed.front().test, missed.front().tier,
        added);
    return Ok{};
}

}  // namespace crcrd::sched
