#pragma once
// The rules for one attempt of a tier, as pure functions over values (docs/execution.md, docs/reporting.md):
// what class a raw outcome gets, and whether the attempt is retried, rerun to tell a flaky test,
// or final. The dispatcher applies them; tests/unit/sched/attempt_test.cpp holds their tables.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "crcrd/classify/classify.hpp"
#include "crcrd/core/vocab.hpp"
#include "crcrd/exec/executor.hpp"
#include "crcrd/store/jobs.hpp"

namespace crcrd::sched {

/// A raw outcome classified: the class (docs/verdicts.md), why, the exit status to store (the exit code, or
/// 128 + signal), and the evidence served with the job.
struct Judged {
    Conclusion conclusion = Conclusion::passed;
    std::string reason;
    std::optional<int> exit_status;
    nlohmann::json evidence = nlohmann::json::object();
};

/// Classifies what an executor returned. An outcome whose command never ran (`not_run`) is
/// infra_error with that reason; one the cluster ended (`infra_failure`, `device_unavailable`)
/// takes that class and reason; the executor's record goes into the evidence as "executor". Pure.
Judged judge(const exec::RawOutcome& outcome, const classify::Patterns& patterns);

/// docs/verdicts.md: a tier whose failed tests all failed on the PR's base too is pre_existing, with the
/// reason "N test(s) fail on <sha7> too" (the base SHA when one failed there, else the SHA
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
        retry,              // the attempt completes with `conclusion`; attempt + 1 is queued
        finish,             // final: the tier ends with `conclusion`
        finish_unless_flaky // a pass: flaky if tests of an earlier regression now passed
    } kind = Kind::finish;
    Conclusion conclusion = Conclusion::passed;
    std::string reason;
};

/// An infra-class failure (infra_error, device_unavailable) is retried while fewer than
/// `infra_retries` earlier attempts of the tier ended so; a regression is rerun while fewer than
/// `flaky_reruns` earlier attempts regressed, and is final "again on rerun" after one; a pass
/// may turn flaky; anything else is final. Pure.
NextStep next_step(Conclusion conclusion, const std::string& reason, std::int64_t infra_before,
                   std::int64_t regressions_before, const RetryPolicy& policy);

/// "1 test failed, then passed on rerun" / "N tests ...".
std::string flaky_reason(std::int64_t flaky_tests);

}  // namespace crcrd::sched
