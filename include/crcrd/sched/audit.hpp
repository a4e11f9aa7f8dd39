#pragma once
// The selection-miss audit (docs/verdicts.md "Selection-miss audit"): when a
// scheduled run fails a test that passed in the previous scheduled run of its ref, and no PR or
// push run of the first-parent commits in between ran that test's tier, path rules missed a
// change. The audit records one selection miss per such test, with the commits, their changed
// paths and the rules those paths matched. It runs on the planner's thread as the `audit`
// followup of a scheduled run that ended `regression` (sched/followups.hpp).

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "crcrd/core/result.hpp"
#include "crcrd/sched/followups.hpp"
#include "crcrd/store/selection_misses.hpp"

namespace crcrd::sched {

/// Beyond this many commits between two scheduled runs nothing is recorded (a warning says why):
/// a range that long says more about a paused schedule than about the rules.
inline constexpr std::size_t k_audit_max_commits = 500;
/// A commit's changed paths listed in a miss; `paths_total` counts them all.
inline constexpr std::size_t k_audit_max_paths = 200;

/// The PR a commit was merged from, read from its message: "Pull Request resolved:
/// https://github.com/<owner>/<repo>/pull/N" anywhere in it, else a trailing "(#N)" on its first
/// line (pytorch's merge bot writes both). nullopt when it names none.
std::optional<std::int64_t> pr_from_message(std::string_view message);

/// The misses among `failed` (in its order): the tests that passed before (`passed_before`)
/// and whose tier is in none of `selected_tiers` (per commit in between, the tiers its PR and
/// push runs had a job for). With no commits in between there is nothing to miss: empty.
std::vector<store::TierTest> decide_misses(
    const std::vector<store::TierTest>& failed, const std::set<store::TierTest>& passed_before,
    const std::vector<std::set<std::string>>& selected_tiers);

/// Audits scheduled run `run_id` once: reads on read-only connections of `ctx.db_path`, lists
/// the commits on the mirror `ctx.sources.upstream` (fetching the two runs' SHAs when it lacks
/// them), matches their paths against `ctx.rules`, and records the misses in one writer item,
/// idempotently (a second audit of the same run adds nothing). Ok also when there is nothing
/// to record (no such run, not a scheduled run, no failed test, no previous scheduled run,
/// no mirror configured, more than k_audit_max_commits commits). Errors: "git" when git fails
/// (the mirror cannot fetch or list), a storage code when the database cannot be read or
/// written: the followup is kept and tried again.
Status audit_scheduled_run(const FollowupContext& ctx, std::int64_t run_id);

}  // namespace crcrd::sched
