#pragma once
// Admin-internal: trunk health as the API shows it (docs/dashboard.md), pure functions over the
// store's rows: the grid of a ref's runs by commit, since when a tier is red, and a test's
// results across runs with its flaky rate. No I/O here; trunk_routes.cpp reads and answers.

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

#include "crcrd/store/trunk.hpp"

namespace crcrd::admin {

/// A configured branch ("main" or "refs/heads/main") as the full ref runs store.
std::string full_ref(const std::string& branch);

/// Since when a tier is red: the oldest run of the streak of regressions that the newest
/// outcomes (newest first) start with. Runs of the tier that did not finish, or ended in a class
/// that says nothing of the code (infra_error, device_unavailable, timeout, cancelled), neither
/// break nor extend the streak; passed or flaky ends it. Nullopt when the newest telling
/// outcome is not a regression. `runs` counts the regressions of the streak.
struct RedSince {
    std::int64_t run_id = 0;
    std::string sha;
    std::int64_t runs = 0;
    std::vector<std::int64_t> run_ids;  // every regression run of the streak, newest first
};
std::optional<RedSince> red_since(const std::vector<store::TierOutcome>& newest_first);
/// The commit a bisection of `red`'s streak in `tier` found (the one of its newest run with a
/// culprit) among `bisections`; nullopt when none did.
std::optional<std::string> streak_culprit(const RedSince& red, const std::string& tier,
                                          const std::vector<store::Bisection>& bisections);
/// Whether `newest_first` holds the end of the streak red_since() looks for (a telling outcome
/// that is not a regression): older outcomes cannot change its answer.
bool streak_ends(const std::vector<store::TierOutcome>& newest_first);

/// The grid's body for `page` (GET /api/v1/trunk): "tiers" (the columns: the tiers the page's
/// runs have, by position, then `configured` ones they lack), "rows" (one per commit, newest
/// first: its runs, each tier's cell from the newest run that ran it, the bisections of its
/// runs and those it is the culprit of). `commits` ({sha: {subject, author, committed_at}})
/// completes the rows it knows. No "red_since", "ref" or cursor: the route adds them.
nlohmann::json trunk_json(const store::TrunkPage& page, const std::vector<std::string>& configured,
                          const nlohmann::json& commits);

/// What a test's result in a run shows: flaky, pre_existing (failed in an attempt classed
/// pre_existing), or the outcome as stored (passed, failed, skipped).
std::string test_result_shown(const store::TestHistoryRow& r);

/// Test `name`'s history (GET /api/v1/tests/{name}/history) from its results newest first: one
/// entry per run and tier (its last attempt's result) up to `limit`, the counts of each result,
/// the flaky rate (flaky / runs shown) and the first and last failure (failed, flaky or
/// pre_existing) among them.
nlohmann::json test_history_json(const std::string& name,
                                 const std::vector<store::TestHistoryRow>& newest_first, int limit);

/// A flaky list's entry (GET /api/v1/tests?flaky=1) for test `name` from its newest runs:
/// "flaky_rate" (flaky / runs, as its history says over the same runs), "flaky", "runs" and
/// "last_flaky" (the newest flaky run's run_id, job_id and at; null without one).
nlohmann::json flaky_item(const std::string& name, const store::FlakyWindow& window);

}  // namespace crcrd::admin
