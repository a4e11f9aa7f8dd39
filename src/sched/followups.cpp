#include "crcrd/sched/followups.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "crcrd/core/time.hpp"
#include "crcrd/sched/audit.hpp"
#include "crcrd/sched/bisect.hpp"
#include "crcrd/store/bisections.hpp"
#include "crcrd/vcs/mirror.hpp"

namespace crcrd::sched {

using nlohmann::json;

namespace {

/// A range wider than this is not bisected: a good run that old says little.
constexpr std::size_t k_max_commits = 10'000;

std::string short_sha(const std::string& sha) {
    return sha.substr(0, 7);
}

bool bisected_ref(const config::BisectConfig& cfg, const std::string& ref) {
    return std::any_of(cfg.refs.begin(), cfg.refs.end(),
                       [&](const std::string& r) { return ref == r || ref == "refs/heads/" + r; });
}

std::string plural(std::size_t n, const char* one, const char* many) {
    return std::to_string(n) + " " + (n == 1 ? one : many);
}

/// The first-parent commits after `good` up to `bad`, oldest first, from the mirror.
Result<std::vector<std::string>> first_parent_range(const config::UpstreamConfig& up,
                                                    const std::string& good,
                                                    const std::string& bad) {
    if (auto s = vcs::ensure_mirror(up); !s) return s.error();
    if (auto s = vcs::fetch(up, {good, bad}); !s) return s.error();
    if (!vcs::git(up, {"merge-base", "--is-ancestor", good, bad})) {
        return make_error(Errc::git, short_sha(good) + " is not an ancestor of " + short_sha(bad) +
                                         " (was the branch rewritten?)");
    }
    // One more than the bound: a range that wide is refused, not cut.
    auto r = vcs::first_parent_commits(up, good, bad, k_max_commits + 1);
    if (!r) return r.error();
    std::vector<std::string> out;
    for (auto& c : *r) out.push_back(std::move(c.sha));
    if (out.empty() || out.back() != bad)
        return make_error(Errc::git, short_sha(bad) + " is not on the first-parent line after " +
                                         short_sha(good));
    return out;
}

/// What the bisection's runs say of each commit; the bad commit is bad.
std::vector<Mark> marks_of(const store::Bisection& b, const std::vector<store::BisectRun>& runs) {
    std::vector<Mark> marks(b.commits.size(), Mark::unknown);
    if (!marks.empty()) marks.back() = Mark::bad;
    for (const auto& r : runs) {
        auto it = std::find(b.commits.begin(), b.commits.end(), r.sha);
        if (it == b.commits.end()) continue;
        auto& m = marks[static_cast<std::size_t>(it - b.commits.begin())];
        // A run that had nothing to run (its tier left the rules file) says nothing.
        if (r.state == RunState::completed && r.conclusion && r.had_jobs)
            m = mark_of(*r.conclusion);
        else if (!is_open(r.state))
            m = Mark::skip;
    }
    return marks;
}

/// Moves a running bisection on by the results of its runs: ends it (found, exhausted, budget
/// spent) or queues the next run. Writer side.
void advance(store::BisectionsRepo& repo, const store::Bisection& b, const std::string& ref,
             std::uint32_t max_runs, SystemTime now) {
    const auto runs = repo.runs(b.id);
    if (std::any_of(runs.begin(), runs.end(), [](const auto& r) { return is_open(r.state); }))
        return;
    const auto marks = marks_of(b, runs);
    const auto step = next_step(marks);
    const auto range = narrow(marks);
    const std::string good =
        range.good < 0 ? b.good_sha.value_or("") : b.commits[static_cast<std::size_t>(range.good)];
    const std::string span = short_sha(good) + ".." + short_sha(b.commits[range.bad]);
    const std::string after = runs.empty() ? "" : " after " + plural(runs.size(), "run", "runs");
    switch (step.kind) {
        case BisectStep::Kind::found: {
            const auto& culprit = b.commits[step.index];
            repo.finish(b.id, BisectionState::found,
                        "culprit " + short_sha(culprit) + " of " +
                            plural(b.commits.size(), "commit", "commits") + after,
                        culprit, now);
            spdlog::info("bisection {} of run {}: culprit {}{}", b.id, b.bad_run_id, culprit,
                         after);
            return;
        }
        case BisectStep::Kind::exhausted:
            repo.finish(b.id, BisectionState::inconclusive,
                        "the culprit is one of " + plural(range.suspects(), "commit", "commits") +
                            " (" + span + "): the runs between ended without a verdict",
                        std::nullopt, now);
            return;
        case BisectStep::Kind::test:
            break;
    }
    if (max_runs == 0) {
        repo.finish(b.id, BisectionState::range,
                    "the culprit is one of " + plural(range.suspects(), "commit", "commits") +
                        " (" + span + ")",
                    std::nullopt, now);
        return;
    }
    if (runs.size() >= max_runs) {
        repo.finish(b.id, BisectionState::budget_spent,
                    "the budget of " + plural(max_runs, "run", "runs") +
                        " is spent: the culprit is one of " +
                        plural(range.suspects(), "commit", "commits") + " (" + span + ")",
                    std::nullopt, now);
        return;
    }
    const auto& sha = b.commits[step.index];
    json inputs = {{"form", "bisect"},
                   {"tiers", {b.tier}},
                   {"tests", b.tests},
                   {"bisection", b.id},
                   {"bad_run_id", b.bad_run_id}};
    auto tier_tests = json::parse(repo.tier_tests_json(b.bad_run_id, b.tier), nullptr, false);
    if (tier_tests.is_array()) inputs["tier_tests"] = tier_tests;
    auto id = repo.queue_run(b, sha, ref, store::JsonText(inputs), now);
    repo.set_reason(b.id, "run " + std::to_string(id) + " tests " + short_sha(sha) +
                              "; the culprit is one of " +
                              plural(range.suspects(), "commit", "commits") + " (" + span + ")");
    spdlog::info("bisection {} of run {}: run_id={} on {} ({} suspects)", b.id, b.bad_run_id, id,
                 sha, range.suspects());
}

/// A trunk run that ended a regression: its range, then the first bisect run (docs/verdicts.md). A
/// git failure is retried (an error) until `last_try`, when the bisection ends `failed`. While
/// another bisection of the tier on the ref runs, only the range is reported: a branch that
/// stays broken over many pushes is bisected once, not once per push.
Status start_bisection(const FollowupContext& ctx, const store::Followup& f, bool last_try) {
    std::optional<store::BisectSource> bad;
    std::optional<std::pair<std::int64_t, std::string>> good;
    std::optional<std::pair<std::int64_t, std::int64_t>> busy;
    bool seen = false;
    auto read = ctx.writer.run_sync([&](store::Db& db) {
        store::BisectionsRepo repo(db);
        seen = repo.of_bad_run(f.run_id).has_value();
        bad = repo.source(f.run_id);
        if (bad) good = repo.good_run(*bad);
        if (bad) busy = repo.running_on(bad->ref, bad->tier);
    });
    if (!read) return read;
    auto drop = [&] {
        return ctx.writer.run_sync([&](store::Db& db) { store::BisectionsRepo(db).done(f); });
    };
    if (seen || !bad || !bisected_ref(ctx.bisect, bad->ref)) return drop();

    store::NewBisection nb;
    nb.bad_run_id = bad->run_id;
    nb.tier = bad->tier;
    nb.tests = bad->tests;
    nb.bad_sha = bad->sha;
    nb.state = BisectionState::running;
    if (!good) {
        nb.state = BisectionState::no_good;
        nb.reason = "no earlier run of " + bad->tier + " on " + bad->ref + " passed";
    } else {
        nb.good_run_id = good->first;
        nb.good_sha = good->second;
        if (good->second == bad->sha) {
            nb.state = BisectionState::inconclusive;
            nb.reason = "the same commit passed in run " + std::to_string(good->first) +
                        ": the failure may be flaky";
        } else if (auto commits = first_parent_range(ctx.sources.upstream, good->second, bad->sha);
                   !commits) {
            if (!last_try) return commits.error();
            nb.state = BisectionState::failed;
            nb.reason = commits.error().message;
        } else if (commits->size() > k_max_commits) {
            nb.state = BisectionState::failed;
            nb.reason = "the range has more than " + std::to_string(k_max_commits) + " commits";
        } else {
            nb.commits = std::move(*commits);
            if (busy) {
                nb.state = BisectionState::range;
                nb.reason = "bisection " + std::to_string(busy->first) + " (of run " +
                            std::to_string(busy->second) + ") is bisecting " + nb.tier + " on " +
                            bad->ref + "; the culprit is one of " +
                            plural(nb.commits.size(), "commit", "commits") + " (" +
                            short_sha(good->second) + ".." + short_sha(bad->sha) + ")";
            }
        }
    }
    return ctx.writer.run_sync([&](store::Db& db) {
        store::BisectionsRepo repo(db);
        if (repo.of_bad_run(f.run_id)) return repo.done(f);
        const auto now = std::chrono::system_clock::now();
        auto id = repo.insert(nb, now);
        if (nb.state == BisectionState::running) {
            if (auto b = repo.load(id)) advance(repo, *b, bad->ref, ctx.bisect.max_runs, now);
        } else {
            spdlog::warn("bisection {} of run {}: {}: {}", id, nb.bad_run_id, to_string(nb.state),
                         nb.reason);
        }
        repo.done(f);
    });
}

/// A bisect run ended: its bisection moves on, or ends cancelled with it.
Status step_bisection(const FollowupContext& ctx, const store::Followup& f) {
    return ctx.writer.run_sync([&](store::Db& db) {
        store::BisectionsRepo repo(db);
        repo.done(f);
        auto id = repo.bisection_of(f.run_id);
        if (!id) return;
        auto b = repo.load(*id);
        if (!b || b->state != BisectionState::running) return;
        const auto now = std::chrono::system_clock::now();
        for (const auto& r : repo.runs(b->id)) {
            if (r.run_id == f.run_id && r.state == RunState::cancelled) {
                repo.finish(b->id, BisectionState::cancelled,
                            "run " + std::to_string(r.run_id) + " was cancelled", std::nullopt,
                            now);
                return;
            }
        }
        auto ref = repo.ref_of(b->bad_run_id);
        advance(repo, *b, ref, ctx.bisect.max_runs, now);
    });
}

}  // namespace

std::size_t Followups::handle(const FollowupContext& ctx) {
    std::vector<store::Followup> todo;
    auto s =
        ctx.writer.run_sync([&](store::Db& db) { todo = store::BisectionsRepo(db).followups(); });
    if (!s) {
        spdlog::error("followups: {}", s.error().message);
        return 0;
    }
    std::size_t done = 0;
    const auto now = std::chrono::steady_clock::now();
    for (const auto& f : todo) {
        const auto key = std::make_pair(f.run_id, f.kind);
        auto failed = m_failures.find(key);
        if (failed != m_failures.end() && now < failed->second.next) continue;  // backing off
        const bool last_try =
            failed != m_failures.end() && failed->second.tries + 1 >= k_followup_tries;
        Status r = Ok{};
        try {
            switch (f.kind) {
                case FollowupKind::bisect:
                    r = start_bisection(ctx, f, last_try);
                    break;
                case FollowupKind::bisect_step:
                    r = step_bisection(ctx, f);
                    break;
                case FollowupKind::audit:
                    r = audit_scheduled_run(ctx, f.run_id);
                    if (r)
                        r = ctx.writer.run_sync(
                            [&](store::Db& db) { store::BisectionsRepo(db).done(f); });
                    break;
            }
        } catch (const std::exception& e) {
            r = make_error(Errc::internal, e.what());
        }
        if (r) {
            m_failures.erase(key);
            ++done;
            continue;
        }
        auto& fail = m_failures[key];
        if (++fail.tries < k_followup_tries) {
            // 15 s, 30 s, 1 min, … up to 10 min between tries: a network outage of about half an
            // hour is ridden out, and a failing followup costs nothing between its tries.
            const auto pause = std::min<std::chrono::seconds>(
                std::chrono::seconds(15) * (1 << (fail.tries - 1)), std::chrono::minutes(10));
            fail.next = now + pause;
            spdlog::warn("followup {} of run {}: {} (tried again in {} s)", to_string(f.kind),
                         f.run_id, r.error().message, pause.count());
            continue;
        }
        spdlog::error("followup {} of run {}: {}; given up after {} tries", to_string(f.kind),
                      f.run_id, r.error().message, k_followup_tries);
        m_failures.erase(key);
        (void)ctx.writer.run_sync([&](store::Db& db) { store::BisectionsRepo(db).done(f); });
    }
    return done;
}

}  // namespace crcrd::sched
