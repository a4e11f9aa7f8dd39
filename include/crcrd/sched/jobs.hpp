#pragma once
// The job state machine between tiers (docs/selection.md, docs/execution.md, docs/verdicts.md): a
// tier starts only when the tiers before it passed; a tier that ends otherwise cancels the later
// ones with the reason; a run completes with the most severe class of its jobs. Functions run
// inside a writer item (a storage failure fails the item).

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "crcrd/core/time.hpp"
#include "crcrd/core/vocab.hpp"
#include "crcrd/store/fwd.hpp"
#include "crcrd/store/jobs.hpp"

namespace crcrd::sched {

/// The more severe of two classes by severity() (core/vocab.hpp), `a` on a tie; nullopt
/// counts as nothing (the other is returned).
std::optional<Conclusion> more_severe(std::optional<Conclusion> a, std::optional<Conclusion> b);

/// A run's class and the reason shown for it.
struct RunClass {
    Conclusion conclusion = Conclusion::passed;
    std::string reason;
};

/// The class of a run from the latest completed attempt of each of its tiers (in tier order):
/// the most severe, with "<tier>: <reason>"; "passed" says every selected tier passed; "flaky"
/// counts the flaky tests; no completed tier at all means the run was cancelled when
/// `last_tier` ended `last_conclusion`. Pure.
RunClass run_class(const std::vector<store::TierResult>& tiers, const std::string& last_tier,
                   Conclusion last_conclusion);

/// Jobs that may start now: queued, of a queued or running run, and every job of an earlier
/// tier of that run completed as passed, flaky or pre_existing. At most one per run, oldest runs
/// first.
std::vector<std::int64_t> startable_jobs(store::Db& db, int limit = 64);

/// Records that a job ended with `conclusion` (a class, docs/verdicts.md). When that is not a pass
/// (passed, flaky, pre_existing), the run's later queued jobs end cancelled ("<tier> ended
/// <class>"). When no job of the run is left queued, leased or running, the run completes with the
/// most severe class of its completed jobs. Returns the run's conclusion when it completed.
/// `now`: when it ends.
std::optional<Conclusion> finish_job(store::Db& db, std::int64_t job_id, Conclusion conclusion,
                                     const std::string& reason, std::optional<int> exit_status,
                                     SystemTime now);

}  // namespace crcrd::sched
