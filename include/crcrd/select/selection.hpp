#pragma once
// From changed paths to tiers and tests (docs/selection.md), with the explanation every run
// stores and `crcrctl explain` prints (docs/selection.md).

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "crcrd/core/vocab.hpp"
#include "crcrd/select/rules.hpp"

namespace crcrd::select {

/// Where the changed paths came from (docs/selection.md), as stored on the run.
enum class Source { payload, push_commits, git, github_api, unknown, schedule, manual };
std::string to_string(Source s);

struct ChangedPaths {
    Source source = Source::unknown;
    std::vector<std::string> paths;
    std::string note;  // why earlier sources did not answer, e.g. "mirror: cannot fetch <sha>"
};

struct RuleMatch {
    std::string name;
    std::vector<std::string> paths;  // the first k_listed paths it matched
    std::size_t matched = 0;         // how many it matched in all
};

struct TierChoice {
    std::string name;
    std::string reason;
    std::vector<std::string> tests;
};

struct Selection {
    Source source = Source::unknown;
    std::size_t changed_paths = 0;
    std::vector<RuleMatch> rules;
    std::vector<TierChoice> tiers;             // in rules-file order
    std::vector<std::string> unmatched_paths;  // the first k_listed
    std::size_t unmatched = 0;
    bool docs_only = false;
    std::string reason;  // why nothing was selected, when `tiers` is empty
    std::string note;

    /// The stored and served form: {"source","changed_paths","rules":[{"name","paths","matched"}],
    /// "tiers":[{"name","reason","tests"}],"unmatched","unmatched_paths","docs_only","reason","note"}.
    nlohmann::json to_json() const;

    /// Exactly the text of to_json().dump() (keys sorted, compact), written without building
    /// the tree. A string that is not valid UTF-8 (a path git allows) has its invalid bytes
    /// replaced by U+FFFD, as dump() with error_handler_t::replace does, rather than throwing:
    /// a run whose explanation cannot be stored would otherwise never be planned.
    std::string to_json_text() const;
};

/// Paths listed per rule and unmatched in an explanation; counts are always complete.
inline constexpr std::size_t k_listed = 100;

/// Decides what a run of `event` runs.
/// A schedule run gets every tier with every rule's tests. Otherwise: always tiers run
/// (unless the change is documentation-only and docs_only is nothing); the from_rules tier
/// runs the tests of the rules the paths matched, or of every rule when the source is
/// unknown or (unmatched: all_rules) some path matched no rule; scheduled tiers do not run.
/// `requested` (a manual or bisect run's tiers; empty: every tier) only matters for those events,
/// which, like "schedule", runs whole tiers whatever changed.
Selection decide(const Rules& rules, const ChangedPaths& changed, RunEvent event,
                 const std::vector<std::string>& requested = {});

/// A human-readable explanation (what `crcrctl explain` prints).
std::string explain_text(const Selection& s);

}  // namespace crcrd::select
