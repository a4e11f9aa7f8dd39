#include "crcrd/sched/attempt.hpp"

#include <algorithm>

namespace crcrd::sched {

using nlohmann::json;

Judged judge(const exec::RawOutcome& o, const classify::Patterns& patterns) {
    Judged j;
    if (o.not_run) {
        j.conclusion = Conclusion::infra_error;
        j.reason = *o.not_run;
        if (!o.external.is_null()) j.evidence["executor"] = o.external;
        return j;
    }
    classify::Evidence ev;
    ev.exit_code = o.exit_code;
    ev.signal = o.signal;
    ev.timed_out = o.timed_out;
    ev.stalled = o.stalled;
    ev.cancelled = o.cancelled;
    ev.junit_error = o.junit_error;
    const auto counts = exec::count(o.results);
    ev.tests_total = o.results.size();
    ev.tests_failed = counts.failed;
    ev.log_text = o.log_text;
    auto verdict = classify::decide(ev, patterns);
    j.conclusion = verdict.conclusion;
    j.reason = verdict.reason;
    j.exit_status = o.exit_code ? o.exit_code : (o.signal ? std::optional<int>(128 + *o.signal) : std::nullopt);
    json failed_tests = json::array();
    for (const auto& t : o.results) {
        if (t.outcome == "failed" && failed_tests.size() < 100) failed_tests.push_back(t.name);
    }
    j.evidence = {{"exit_status", o.exit_code ? json(*o.exit_code) : json(nullptr)},
                  {"signal", o.signal ? json(*o.signal) : json(nullptr)},
                  {"timed_out", o.timed_out},
                  {"stalled", o.stalled},
                  {"tests_total", ev.tests_total},
                  {"failed_tests", failed_tests},
                  {"log_lines", verdict.log_line ? json::array({*verdict.log_line}) : json::array()},
                  {"junit_error", o.junit_error ? json(*o.junit_error) : json(nullptr)}};
    if (verdict.signature) j.evidence["signature"] = *verdict.signature;
    if (!o.external.is_null()) j.evidence["executor"] = o.external;
    // What the executor's cluster said outranks what the command left (it may have left nothing).
    if (o.device_unavailable) {
        j.conclusion = Conclusion::device_unavailable;
        j.reason = *o.device_unavailable;
    } else if (o.infra_failure) {
        j.conclusion = Conclusion::infra_error;
        j.reason = *o.infra_failure;
    }
    return j;
}

std::optional<std::string> pre_existing_reason(const std::vector<std::string>& failed,
                                               const std::vector<store::BaseFailure>& on_base) {
    if (failed.empty()) return std::nullopt;
    for (const auto& t : failed) {
        if (std::none_of(on_base.begin(), on_base.end(), [&](const store::BaseFailure& b) { return b.test == t; })) {
            return std::nullopt;
        }
    }
    // The PR's base SHA when a test failed there, else the newer branch commit.
    auto where = std::find_if(on_base.begin(), on_base.end(), [](const store::BaseFailure& b) { return b.on_base_sha; });
    const std::string sha7 = (where != on_base.end() ? *where : on_base.front()).sha.substr(0, 7);
    return std::to_string(failed.size()) + (failed.size() == 1 ? " test fails on " : " tests fail on ") + sha7 + " too";
}

NextStep next_step(Conclusion conclusion, const std::string& reason, std::int64_t infra_before,
                   std::int64_t regressions_before, const RetryPolicy& policy) {
    using Kind = NextStep::Kind;
    if (is_infra(conclusion) && infra_before < static_cast<std::int64_t>(policy.infra_retries)) return {Kind::retry, conclusion, reason};
    if (conclusion == Conclusion::regression) {
        if (regressions_before < static_cast<std::int64_t>(policy.flaky_reruns)) {
            return {Kind::retry, conclusion, reason + "; rerun to tell a flaky test"};
        }
        if (regressions_before > 0) return {Kind::finish, conclusion, reason + ", again on rerun"};
    }
    if (conclusion == Conclusion::passed) return {Kind::finish_unless_flaky, conclusion, reason};
    return {Kind::finish, conclusion, reason};
}

std::string flaky_reason(std::int64_t flaky_tests) {
    return std::to_string(flaky_tests) + (flaky_tests == 1 ? " test" : " tests") + " failed, then passed on rerun";
}

}  // namespace crcrd::sched
