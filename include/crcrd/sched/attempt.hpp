#pragma once
// The end of one attempt of a tier, decided in one place (docs/verdicts.md): judge() classes
// what an executor returned; plan_end() turns that class and the facts of the tier (earlier
// attempts, the base's failures, the policy) into an EndPlan: final (and with which class and
// reason), retried, rerun to tell a flaky test, or checked on the base. Pure functions over
// values; sched/attempt_end.hpp reads the facts and applies the plan, and
// tests/unit/sched/attempt_test.cpp holds the tables.

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "crcrd/classify/classify.hpp"
#include "crcrd/core/vocab.hpp"
#include "crcrd/exec/executor.hpp"
#include "crcrd/store/jobs.hpp"

namespace crcrd::sched {

/// A raw outcome classified: the class (docs/verdicts.md), why, the exit status to store (the exit
/// code, or 128 + signal), and the evidence served with the job.
struct Judged {
    Conclusion conclusion = Conclusion::passed;
    std::string reason;
    std::optional<int> exit_status;
    nlohmann::json evidence = nlohmann::json::object();
    std::int64_t tests_failed = 0;  // this attempt's JUnit results
    std::int64_t tests_total = 0;
};

/// Classifies what an executor returned. An outcome whose command never ran (`not_run`) is
/// infra_error with that reason; one the cluster ended (`infra_failure`, `device_unavailable`)
/// takes that class and reason; the executor's record goes into the evidence as "executor". Pure.
Judged judge(const exec::RawOutcome& outcome, const classify::Patterns& patterns);

/// docs/verdicts.md: a tier whose failed tests all failed on the PR's base too is pre_existing,
/// with the reason "N test(s) fail on <sha7> too" (the base SHA when one failed there, else the SHA
/// where the first of them failed); nullopt
/// when one of them fails only on the PR (it stays a regression). Pure.
std::optional<std::string> pre_existing_reason(const std::vector<std::string>& failed,
                                               const std::vector<store::BaseFailure>& on_base);

struct RetryPolicy {
    std::uint32_t infra_retries = 2;  // execution.infra_retries
    std::uint32_t flaky_reruns = 1;   // execution.flaky_reruns
};

/// What becomes of an ended attempt.
struct NextStep {
    enum class Kind {
        retry,               // the attempt completes with `conclusion`; attempt + 1 is queued
        finish,              // final: the tier ends with `conclusion`
        finish_unless_flaky  // a pass: flaky if tests of an earlier regression now passed
    } kind = Kind::finish;
    Conclusion conclusion = Conclusion::passed;
    std::string reason;
};

/// An infra-class failure (infra_error, device_unavailable) is retried while fewer than
/// `infra_retries` earlier attempts of the tier ended so; a regression is rerun while fewer than
/// `flaky_reruns` earlier attempts regressed, and is final "again on rerun" after one; a pass
/// may turn flaky; anything else is final. `build`: the attempt is a build stage's (its rerun
/// builds again, to tell a flaky build). Pure.
NextStep next_step(Conclusion conclusion, const std::string& reason, std::int64_t infra_before,
                   std::int64_t regressions_before, const RetryPolicy& policy, bool build = false);

/// "1 test failed, then passed on rerun" / "N tests ...".
std::string flaky_reason(std::int64_t flaky_tests);

/// How an attempt came to its end.
enum class AttemptOrigin {
    ran,   // the executor ran it (or could not): the judged class
    lost,  // its worker was lost (a lease expired, the daemon restarted): infra_error, retried as
           // any
    no_device,  // no slot with its labels became free within execution.device_wait: it never ran,
                // final
};

/// What the build of a failed build's base said (docs/build.md): the base is the PR's base SHA,
/// or for a push the ref's previous SHA, built under the same recipe.
struct BaseBuild {
    enum class Said {
        unknown,  // never built here, or it ended without a verdict (infra, timeout)
        builds,   // it built (ready, or evicted since)
        fails,    // it failed as a regression or pre_existing itself
    } said = Said::unknown;
    std::string sha;
    std::int64_t build_id = 0;  // fails: the builds row
};

/// Everything the end of an attempt depends on, read once (sched/attempt_end.hpp).
struct AttemptFacts {
    AttemptOrigin origin = AttemptOrigin::ran;
    Judged judged;                 // the attempt's class, reason, exit status, counts
    bool daemon_stopping = false;  // the daemon stops: a cancelled attempt was not the user's doing
    std::int64_t run_id = 0;
    std::string sha;                  // the attempt's SHA (a base check's: the base's)
    std::int64_t carried = 0;         // results carried into this rerun from earlier attempts
    std::vector<std::string> failed;  // the tests this attempt failed
    std::vector<std::string> passed;  // the tests this attempt passed
    std::int64_t infra_before =
        0;  // earlier attempts of the tier that ended infra_error or device_unavailable
    std::int64_t regressions_before = 0;
    std::optional<std::vector<std::string>>
        failed_in_last_regression;     // nullopt: no earlier regression
    std::vector<std::string> checked;  // a base check: the PR's failing tests it runs on the base
    std::vector<store::BaseFailure>
        found_before;  // a base check: what the PR's attempt found on the base
    bool pr = false;
    std::optional<std::string> base_sha;
    std::vector<store::BaseFailure>
        found_on_base;  // this attempt's failures found failing on the base
    RetryPolicy retry;
    bool lookup_base = false;  // classify.base_check lookup (or run)
    bool run_on_base = false;  // classify.base_check run
    bool build = false;        // the attempt is a run's build stage (docs/build.md)
    /// A build that ended a regression: what its base's build said (nullopt: no base, or
    /// classify.base_check off).
    std::optional<BaseBuild> base_build;
};

/// What becomes of an ended attempt.
struct EndPlan {
    enum class Next {
        finish,         // the tier ends with `conclusion` (later tiers and the run follow from it)
        retry,          // the attempt completes with `conclusion`; attempt + 1 is queued
        check_on_base,  // the attempt completes with `conclusion`; a base check of `check_tests` is
                        // queued
    } next = Next::finish;
    Conclusion conclusion = Conclusion::passed;
    std::string reason;
    std::optional<int> exit_status;
    std::vector<std::string> flaky;  // this attempt's tests to mark flaky
    std::int64_t flaky_count = 0;    // the tier's flaky tests (> 0 when it ends flaky)
    std::vector<std::pair<std::string, nlohmann::json>> evidence;  // keys set in the job's evidence
    std::vector<std::string> check_tests;
    std::string base_sha;
};

/// The end of an attempt, by these rules in order (docs/verdicts.md): an attempt cancelled
/// while the daemon stops is infra_error; no device within the wait is final; a base check is
/// judged on its own once it has no infra retries left (a failing test it checks that passes
/// on the base makes the tier a regression, all of them failing makes it pre_existing, no
/// verdict leaves the regression); otherwise next_step(): an infra failure is retried, a
/// regression is rerun, a pass after a regression is flaky (the tests that failed before and
/// pass now; at least as many as failed), and a final regression of a PR whose failing tests
/// all fail on its base too is pre_existing, or (base_check: run) is checked on the base. A
/// build that failed where its base's build failed too is pre_existing at once (not built
/// again); a final regression of a build stays a regression saying the base builds, or
/// (base_check: run, the base never built here) builds the base as its base check, whose own
/// class then decides. Pure.
EndPlan plan_end(const AttemptFacts& f);

}  // namespace crcrd::sched
