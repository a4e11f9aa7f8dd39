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
    j.exit_status =
        o.exit_code ? o.exit_code : (o.signal ? std::optional<int>(128 + *o.signal) : std::nullopt);
    j.tests_failed = static_cast<std::int64_t>(counts.failed);
    j.tests_total = static_cast<std::int64_t>(o.results.size());
    json failed_tests = json::array();
    for (const auto& t : o.results) {
        if (t.outcome == TestOutcome::failed && failed_tests.size() < 100)
            failed_tests.push_back(t.name);
    }
    j.evidence = {
        {"exit_status", o.exit_code ? json(*o.exit_code) : json(nullptr)},
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
        if (std::none_of(on_base.begin(), on_base.end(),
                         [&](const store::BaseFailure& b) { return b.test == t; })) {
            return std::nullopt;
        }
    }
    // The PR's base SHA when a test failed there, else the newer branch commit.
    auto where = std::find_if(on_base.begin(), on_base.end(),
                              [](const store::BaseFailure& b) { return b.on_base_sha; });
    const std::string sha7 = (where != on_base.end() ? *where : on_base.front()).sha.substr(0, 7);
    return std::to_string(failed.size()) +
           (failed.size() == 1 ? " test fails on " : " tests fail on ") + sha7 + " too";
}

NextStep next_step(Conclusion conclusion, const std::string& reason, std::int64_t infra_before,
                   std::int64_t regressions_before, const RetryPolicy& policy, bool build) {
    using Kind = NextStep::Kind;
    if (is_infra(conclusion) && infra_before < static_cast<std::int64_t>(policy.infra_retries))
        return {Kind::retry, conclusion, reason};
    if (conclusion == Conclusion::regression) {
        if (regressions_before < static_cast<std::int64_t>(policy.flaky_reruns)) {
            return {Kind::retry, conclusion,
                    reason + (build ? "; built again to tell a flaky build"
                                    : "; rerun to tell a flaky test")};
        }
        if (regressions_before > 0) return {Kind::finish, conclusion, reason + ", again on rerun"};
    }
    if (conclusion == Conclusion::passed) return {Kind::finish_unless_flaky, conclusion, reason};
    return {Kind::finish, conclusion, reason};
}

std::string flaky_reason(std::int64_t flaky_tests) {
    return std::to_string(flaky_tests) + (flaky_tests == 1 ? " test" : " tests") +
           " failed, then passed on rerun";
}

namespace {

json evidence_of(const std::vector<store::BaseFailure>& found) {
    json where = json::array();
    for (const auto& f : found)
        where.push_back({{"test", f.test}, {"run_id", f.run_id}, {"sha", f.sha}});
    return where;
}

bool contains(const std::vector<std::string>& v, const std::string& x) {
    return std::find(v.begin(), v.end(), x) != v.end();
}

std::string tests_word(std::size_t n) {
    return n == 1 ? " test" : " tests";
}

/// `p`, final with `conclusion` and `reason`.
EndPlan finish(EndPlan p, Conclusion conclusion, std::string reason) {
    p.next = EndPlan::Next::finish;
    p.conclusion = conclusion;
    p.reason = std::move(reason);
    return p;
}

/// A build's base check (the base built as the build job's next attempt): the base failed to
/// build too, pre_existing; it built, the regression stands; no verdict, the regression stands.
EndPlan end_of_build_base_check(const AttemptFacts& f, EndPlan p) {
    const std::string base7 = f.sha.substr(0, 7);
    const Conclusion c = p.conclusion;
    if (c == Conclusion::passed)
        return finish(std::move(p), Conclusion::regression,
                      "the build fails; " + base7 + " builds: the change broke it");
    if (c == Conclusion::regression || c == Conclusion::pre_existing) {
        p.evidence.emplace_back(
            "pre_existing", json{{"base_sha", f.sha}, {"run_id", f.run_id}, {"base_check", true}});
        return finish(std::move(p), Conclusion::pre_existing,
                      "the build fails on " + base7 + " too");
    }
    std::string why =
        "the build of " + base7 + " ended " + std::string(to_string(c)) + ": " + p.reason;
    return finish(std::move(p), Conclusion::regression, std::move(why));
}

/// A base check with a verdict of its own: the tier's regression stands, or is pre_existing.
EndPlan end_of_base_check(const AttemptFacts& f, EndPlan p) {
    if (f.build) return end_of_build_base_check(f, std::move(p));
    const std::string base7 = f.sha.substr(0, 7);
    const Conclusion c = p.conclusion;
    if (c != Conclusion::regression && c != Conclusion::passed && c != Conclusion::flaky) {
        // No verdict (infra, device, timeout, cancelled): the PR's failures stand.
        std::string why =
            "the base check on " + base7 + " ended " + std::string(to_string(c)) + ": " + p.reason;
        return finish(std::move(p), Conclusion::regression, std::move(why));
    }
    std::vector<std::string> pass_on_base;
    for (const auto& t : f.checked)
        if (!contains(f.failed, t)) pass_on_base.push_back(t);
    if (!pass_on_base.empty()) {
        const auto n = pass_on_base.size();
        p.evidence.emplace_back("passes_on_base", json(pass_on_base));
        return finish(std::move(p), Conclusion::regression,
                      std::to_string(n) +
                          (n == 1 ? " failing test passes on " : " failing tests pass on ") +
                          base7 + ": the change broke " + (n == 1 ? "it" : "them"));
    }
    // Every test failed on the base: those found earlier and the ones checked here.
    std::vector<store::BaseFailure> all = f.found_before;
    for (const auto& t : f.checked) all.push_back({t, f.run_id, f.sha, true});
    std::vector<std::string> names;
    for (const auto& b : all) names.push_back(b.test);
    p.evidence.emplace_back("pre_existing", evidence_of(all));
    auto why = pre_existing_reason(names, all);
    return finish(std::move(p), Conclusion::pre_existing,
                  why.value_or("the failing tests fail on " + base7 + " too"));
}

/// A final regression of a build, against its base's build under the same recipe.
EndPlan regression_of_a_build(const AttemptFacts& f, EndPlan p) {
    const BaseBuild& base = *f.base_build;
    const std::string base7 = base.sha.substr(0, 7);
    switch (base.said) {
        case BaseBuild::Said::fails:
            p.evidence.emplace_back("pre_existing",
                                    json{{"base_sha", base.sha}, {"build_id", base.build_id}});
            return finish(std::move(p), Conclusion::pre_existing,
                          "the build fails on " + base7 + " too");
        case BaseBuild::Said::builds:
            p.reason += "; " + base7 + " builds";
            return p;
        case BaseBuild::Said::unknown:
            break;
    }
    if (!f.run_on_base) {
        p.reason += "; " + base7 + " was not built here";
        return p;
    }
    p.next = EndPlan::Next::check_on_base;
    p.reason += "; building " + base7 + " to compare";
    p.check_tests = {std::string(k_build_stage)};
    p.base_sha = base.sha;
    return p;
}

/// A final regression of a PR: its failing tests looked up on the base.
EndPlan regression_of_a_pr(const AttemptFacts& f, EndPlan p) {
    if (f.failed.empty()) return p;
    if (!f.found_on_base.empty())
        p.evidence.emplace_back("pre_existing", evidence_of(f.found_on_base));
    if (auto why = pre_existing_reason(f.failed, f.found_on_base))
        return finish(std::move(p), Conclusion::pre_existing, *why);
    if (!f.run_on_base || !f.base_sha || f.base_sha->empty()) return p;
    std::vector<std::string> unknown;
    for (const auto& t : f.failed) {
        if (std::none_of(f.found_on_base.begin(), f.found_on_base.end(),
                         [&](const auto& b) { return b.test == t; })) {
            unknown.push_back(t);
        }
    }
    p.next = EndPlan::Next::check_on_base;
    p.reason += "; checking " + std::to_string(unknown.size()) + tests_word(unknown.size()) +
                " on base " + f.base_sha->substr(0, 7);
    p.check_tests = std::move(unknown);
    p.base_sha = *f.base_sha;
    return p;
}

}  // namespace

EndPlan plan_end(const AttemptFacts& f) {
    EndPlan p;
    p.conclusion = f.judged.conclusion;
    p.reason = f.judged.reason;
    p.exit_status = f.judged.exit_status;
    if (p.conclusion == Conclusion::cancelled && f.daemon_stopping) {
        p.conclusion = Conclusion::infra_error;
        p.reason = "daemon stopped while the job ran";
    }
    // A rerun of the failed tests counts the tests carried over from the attempts before.
    if (p.conclusion == Conclusion::regression && f.carried > 0) {
        p.reason = std::to_string(f.judged.tests_failed) + " of " +
                   std::to_string(f.judged.tests_total + f.carried) + " tests failed";
    }
    const bool base_check = !f.checked.empty();
    if (f.origin == AttemptOrigin::no_device)
        return base_check ? end_of_base_check(f, std::move(p)) : p;
    // A base check looks for tests failing on the base: no flaky rerun; an infra failure is
    // retried as any attempt is.
    if (base_check && (!is_infra(p.conclusion) ||
                       f.infra_before >= static_cast<std::int64_t>(f.retry.infra_retries))) {
        return end_of_base_check(f, std::move(p));
    }
    // A build that fails on its base too is not built again: that costs a build, and says
    // nothing more.
    if (f.build && p.conclusion == Conclusion::regression && f.base_build &&
        f.base_build->said == BaseBuild::Said::fails)
        return regression_of_a_build(f, std::move(p));
    const auto step =
        next_step(p.conclusion, p.reason, f.infra_before, f.regressions_before, f.retry, f.build);
    switch (step.kind) {
        case NextStep::Kind::retry:
            p.next = EndPlan::Next::retry;
            p.conclusion = step.conclusion;
            p.reason = step.reason + " (retried)";
            return p;
        case NextStep::Kind::finish_unless_flaky:
            if (f.failed_in_last_regression) {
                const auto& before = *f.failed_in_last_regression;
                for (const auto& t : f.passed)
                    if (contains(before, t)) p.flaky.push_back(t);
                // Failures whose names do not appear in the rerun still count: the tier passed.
                p.flaky_count = std::max(static_cast<std::int64_t>(p.flaky.size()),
                                         static_cast<std::int64_t>(before.size()));
                if (p.flaky_count > 0) {
                    std::string why = flaky_reason(p.flaky_count);
                    return finish(std::move(p), Conclusion::flaky, std::move(why));
                }
            }
            return finish(std::move(p), step.conclusion, step.reason);
        case NextStep::Kind::finish:
            break;
    }
    p = finish(std::move(p), step.conclusion, step.reason);
    if (p.conclusion == Conclusion::regression && f.build && f.base_build)
        return regression_of_a_build(f, std::move(p));
    if (p.conclusion == Conclusion::regression && f.lookup_base && f.pr)
        return regression_of_a_pr(f, std::move(p));
    return p;
}

}  // namespace crcrd::sched
