#include <gtest/gtest.h>

#include <functional>

#include "crcrd/sched/attempt.hpp"
#include "crcrd/sched/planner.hpp"

namespace crcrd::sched {
namespace {

using Kind = NextStep::Kind;

struct StepCase {
    const char* name;
    Conclusion conclusion;
    std::int64_t infra_before, regressions_before;
    RetryPolicy policy;
    Kind kind;
    std::string reason;  // what the attempt or the tier ends with
};

TEST(NextStep, RetriesRerunsAndFinalOutcomesFollowThePolicy) {
    const RetryPolicy p{2, 1};
    const std::vector<StepCase> cases = {
        {"infra retried", Conclusion::infra_error, 0, 0, p, Kind::retry, "why"},
        {"device retried", Conclusion::device_unavailable, 1, 0, p, Kind::retry, "why"},
        {"infra out of retries", Conclusion::infra_error, 2, 0, p, Kind::finish, "why"},
        {"infra never retried", Conclusion::infra_error, 0, 0, {0, 1}, Kind::finish, "why"},
        {"regression rerun", Conclusion::regression, 0, 0, p, Kind::retry,
         "why; rerun to tell a flaky test"},
        {"regression again", Conclusion::regression, 0, 1, p, Kind::finish, "why, again on rerun"},
        {"regression, no reruns", Conclusion::regression, 0, 0, {2, 0}, Kind::finish, "why"},
        {"regression after infra retries", Conclusion::regression, 2, 0, p, Kind::retry,
         "why; rerun to tell a flaky test"},
        {"pass may be flaky", Conclusion::passed, 0, 1, p, Kind::finish_unless_flaky, "why"},
        {"timeout final", Conclusion::timeout, 0, 0, p, Kind::finish, "why"},
        {"cancelled final", Conclusion::cancelled, 0, 0, p, Kind::finish, "why"},
    };
    for (const auto& c : cases) {
        auto s = next_step(c.conclusion, "why", c.infra_before, c.regressions_before, c.policy);
        EXPECT_EQ(s.kind, c.kind) << c.name;
        EXPECT_EQ(s.conclusion, c.conclusion) << c.name;
        EXPECT_EQ(s.reason, c.reason) << c.name;
    }
    // A build stage's regression is built again, and says so.
    EXPECT_EQ(next_step(Conclusion::regression, "why", 0, 0, p, true).reason,
              "why; built again to tell a flaky build");
    EXPECT_EQ(next_step(Conclusion::regression, "why", 0, 1, p, true).reason,
              "why, again on rerun");
}

TEST(PreExistingReason, AllFailuresOnTheBaseOrItStaysARegression) {
    using store::BaseFailure;
    const std::string base = "abcdef0123456789abcdef0123456789abcdef01";
    struct Case {
        const char* what;
        std::vector<std::string> failed;
        std::vector<BaseFailure> on_base;
        std::optional<std::string> reason;
    };
    const std::vector<Case> cases = {
        {"one test, failing on the base", {"a"}, {{"a", 1, base}}, "1 test fails on abcdef0 too"},
        {"two tests, both on the base",
         {"a", "b"},
         {{"a", 1, base}, {"b", 2, base}},
         "2 tests fail on abcdef0 too"},
        {"one of two only on the PR", {"a", "b"}, {{"a", 1, base}}, std::nullopt},
        {"none on the base", {"a"}, {}, std::nullopt},
        {"no failed test", {}, {}, std::nullopt},
    };
    for (const auto& c : cases)
        EXPECT_EQ(pre_existing_reason(c.failed, c.on_base), c.reason) << c.what;
}

TEST(FlakyReason, CountsTests) {
    EXPECT_EQ(flaky_reason(1), "1 test failed, then passed on rerun");
    EXPECT_EQ(flaky_reason(3), "3 tests failed, then passed on rerun");
}

exec::RawOutcome exited(int code, std::vector<exec::TestResult> results = {}) {
    exec::RawOutcome o;
    o.exit_code = code;
    o.results = std::move(results);
    return o;
}

TEST(Judge, ClassifiesRawOutcomesAndKeepsTheEvidence) {
    const auto patterns = classify::compile_patterns({"device lost"}, {"No space left"});
    auto pass = judge(exited(0, {{"t1", TestOutcome::passed, 0.1, ""}}), patterns);
    EXPECT_EQ(pass.conclusion, Conclusion::passed);
    EXPECT_EQ(pass.exit_status, 0);

    auto failed = judge(exited(1, {{"t1", TestOutcome::failed, 0.1, "assert"},
                                   {"t2", TestOutcome::passed, 0.1, ""}}),
                        patterns);
    EXPECT_EQ(failed.conclusion, Conclusion::regression);
    EXPECT_EQ(failed.evidence["failed_tests"], nlohmann::json::array({"t1"}));
    EXPECT_EQ(failed.evidence["tests_total"], 2);

    exec::RawOutcome killed;
    killed.signal = 9;
    auto k = judge(killed, patterns);
    EXPECT_EQ(k.conclusion, Conclusion::infra_error);
    EXPECT_EQ(k.exit_status, 137);  // 128 + signal
    EXPECT_EQ(k.evidence["signal"], 9);

    auto device = exited(1);
    device.log_text = "step 3\ndevice lost on card 0\n";
    auto d = judge(device, patterns);
    EXPECT_EQ(d.conclusion, Conclusion::device_unavailable);
    EXPECT_EQ(d.evidence["log_lines"], nlohmann::json::array({"device lost on card 0"}));

    exec::RawOutcome not_run;
    not_run.not_run = "cannot check out the SHA";
    auto n = judge(not_run, patterns);
    EXPECT_EQ(n.conclusion, Conclusion::infra_error);
    EXPECT_EQ(n.reason, "cannot check out the SHA");
    EXPECT_FALSE(n.exit_status);

    auto timed_out = exited(0);
    timed_out.exit_code.reset();
    timed_out.signal = 15;
    timed_out.timed_out = true;
    EXPECT_EQ(judge(timed_out, patterns).conclusion, Conclusion::timeout);
}

TEST(PlanJobs, OneJobPerSelectedTierAtItsPositionInTheRules) {
    select::Rules rules;
    select::Tier a, b, c;
    a.name = "import";
    a.timeout = std::chrono::milliseconds(60'000);
    b.name = "smoke";
    b.timeout = std::chrono::milliseconds(120'000);
    b.labels = {"spyre"};
    c.name = "full";
    rules.tiers = {a, b, c};
    select::Selection sel;
    sel.tiers.push_back(select::TierChoice{"smoke", "rule", {"test_a.py", "test_b.py"}});
    sel.tiers.push_back(select::TierChoice{"gone", "rule", {}});
    auto jobs = plan_jobs(sel, rules);
    ASSERT_EQ(jobs.size(), 2u);
    EXPECT_EQ(jobs[0].tier, "smoke");
    EXPECT_EQ(jobs[0].position, 1);
    EXPECT_EQ(jobs[0].tests_json, R"(["test_a.py","test_b.py"])");
    EXPECT_EQ(jobs[0].timeout_ms, 120'000);
    EXPECT_EQ(jobs[0].labels_json, R"(["spyre"])");
    EXPECT_EQ(jobs[1].tier, "gone");  // a tier the rules no longer have: an hour, no labels
    EXPECT_EQ(jobs[1].timeout_ms, 3'600'000);
    EXPECT_EQ(jobs[1].labels_json, "[]");
    EXPECT_TRUE(plan_jobs(select::Selection{}, rules).empty());
    // With a build stage: its job first, before every tier, with build.timeout; nothing to
    // build for a run that selected nothing.
    auto built = plan_jobs(sel, rules, std::chrono::milliseconds(7'200'000));
    ASSERT_EQ(built.size(), 3u);
    EXPECT_EQ(built[0].tier, "build");
    EXPECT_EQ(built[0].position, -1);
    EXPECT_EQ(built[0].timeout_ms, 7'200'000);
    EXPECT_EQ(built[0].tests_json, "[]");
    EXPECT_EQ(built[1].tier, "smoke");
    EXPECT_TRUE(plan_jobs(select::Selection{}, rules, std::chrono::milliseconds(1)).empty());
}

// Every rule of an attempt's end (docs/verdicts.md), as a table over plain values: no SQLite.
TEST(PlanEnd, EveryWayAnAttemptEnds) {
    using C = Conclusion;
    using N = EndPlan::Next;
    const std::string base(40, 'b');  // a base check runs on the base SHA; a PR's base too
    const std::string base7 = base.substr(0, 7);
    const store::BaseFailure t1_on_base{"t1", 3, base, true};
    auto judged = [](C c, std::string reason, std::int64_t failed = 0, std::int64_t total = 3) {
        Judged j;
        j.conclusion = c;
        j.reason = std::move(reason);
        j.exit_status = c == C::passed ? 0 : 1;
        j.tests_failed = failed;
        j.tests_total = total;
        return j;
    };
    struct Case {
        const char* name;
        std::function<void(AttemptFacts&)> facts;
        N next;
        C conclusion;
        std::string reason;
        std::vector<std::string> flaky = {};
        std::int64_t flaky_count = 0;
        std::vector<std::string> evidence = {};  // the keys set
        std::vector<std::string> check = {};
    };
    const std::string failed1 = "1 of 3 tests failed";
    // A build's attempt: no tests, its rebuild already done.
    auto as_build = [&](AttemptFacts& f, std::string reason) {
        f.build = true;
        f.judged = judged(C::regression, std::move(reason), 0, 0);
        f.failed.clear();
        f.passed.clear();
        f.regressions_before = 1;
    };
    const std::vector<Case> cases = {
        {"a pass",
         [&](AttemptFacts& f) {
             f.judged = judged(C::passed, "3 tests passed");
             f.failed.clear();
         },
         N::finish, C::passed, "3 tests passed"},
        {"an infra failure is retried",
         [&](AttemptFacts& f) { f.judged = judged(C::infra_error, "exit status 2"); }, N::retry,
         C::infra_error, "exit status 2 (retried)"},
        {"a device failure is retried",
         [&](AttemptFacts& f) {
             f.judged = judged(C::device_unavailable, "RAS");
             f.infra_before = 1;
         },
         N::retry, C::device_unavailable, "RAS (retried)"},
        {"no infra retry left",
         [&](AttemptFacts& f) {
             f.judged = judged(C::infra_error, "exit status 2");
             f.infra_before = 2;
         },
         N::finish, C::infra_error, "exit status 2"},
        {"a lost worker is retried",
         [&](AttemptFacts& f) {
             f.origin = AttemptOrigin::lost;
             f.judged = judged(C::infra_error, "daemon restarted");
         },
         N::retry, C::infra_error, "daemon restarted (retried)"},
        {"no device within the wait: final",
         [&](AttemptFacts& f) {
             f.origin = AttemptOrigin::no_device;
             f.judged = judged(C::device_unavailable, "no healthy runner slot");
         },
         N::finish, C::device_unavailable, "no healthy runner slot"},
        {"a regression is rerun", [](AttemptFacts&) {}, N::retry, C::regression,
         failed1 + "; rerun to tell a flaky test (retried)"},
        {"a regression again on rerun", [](AttemptFacts& f) { f.regressions_before = 1; },
         N::finish, C::regression, failed1 + ", again on rerun"},
        {"no rerun configured", [](AttemptFacts& f) { f.retry.flaky_reruns = 0; }, N::finish,
         C::regression, failed1},
        {"a rerun counts the tests carried over",
         [](AttemptFacts& f) {
             f.carried = 5;
             f.regressions_before = 1;
         },
         N::finish, C::regression, "1 of 8 tests failed, again on rerun"},
        {"a pass after a regression is flaky",
         [&](AttemptFacts& f) {
             f.judged = judged(C::passed, "2 tests passed");
             f.regressions_before = 1;
             f.failed_in_last_regression = std::vector<std::string>{"t1", "t4"};
             f.failed.clear();
             f.passed = {"t1", "t2"};
         },
         N::finish,
         C::flaky,
         "2 tests failed, then passed on rerun",
         {"t1"},
         2},
        {"flaky even when no failed test ran again by name",
         [&](AttemptFacts& f) {
             f.judged = judged(C::passed, "1 tests passed");
             f.regressions_before = 1;
             f.failed_in_last_regression = std::vector<std::string>{"x"};
             f.failed.clear();
         },
         N::finish,
         C::flaky,
         "1 test failed, then passed on rerun",
         {},
         1},
        {"a timeout is final",
         [&](AttemptFacts& f) { f.judged = judged(C::timeout, "tier timeout reached"); }, N::finish,
         C::timeout, "tier timeout reached"},
        {"a cancellation is final",
         [&](AttemptFacts& f) { f.judged = judged(C::cancelled, "cancelled while running"); },
         N::finish, C::cancelled, "cancelled while running"},
        {"cancelled because the daemon stops: infra",
         [&](AttemptFacts& f) {
             f.judged = judged(C::cancelled, "cancelled while running");
             f.daemon_stopping = true;
         },
         N::retry, C::infra_error, "daemon stopped while the job ran (retried)"},
        {"a PR's failures all on its base: pre_existing",
         [&](AttemptFacts& f) {
             f.regressions_before = 1;
             f.found_on_base = {t1_on_base};
         },
         N::finish,
         C::pre_existing,
         "1 test fails on " + base7 + " too",
         {},
         0,
         {"pre_existing"}},
        {"one of a PR's failures only on the PR: regression",
         [&](AttemptFacts& f) {
             f.regressions_before = 1;
             f.failed = {"t1", "t2"};
             f.found_on_base = {t1_on_base};
         },
         N::finish,
         C::regression,
         failed1 + ", again on rerun",
         {},
         0,
         {"pre_existing"}},
        {"base_check run: the unknown ones are checked on the base",
         [&](AttemptFacts& f) {
             f.regressions_before = 1;
             f.failed = {"t1", "t2"};
             f.found_on_base = {t1_on_base};
             f.run_on_base = true;
         },
         N::check_on_base,
         C::regression,
         failed1 + ", again on rerun; checking 1 test on base " + base7,
         {},
         0,
         {"pre_existing"},
         {"t2"}},
        {"lookup off: a PR's regression stays",
         [&](AttemptFacts& f) {
             f.regressions_before = 1;
             f.lookup_base = false;
             f.found_on_base = {t1_on_base};
         },
         N::finish, C::regression, failed1 + ", again on rerun"},
        {"a push is never pre_existing",
         [&](AttemptFacts& f) {
             f.regressions_before = 1;
             f.pr = false;
             f.found_on_base = {t1_on_base};
         },
         N::finish, C::regression, failed1 + ", again on rerun"},
        {"base check: a checked test passes on the base",
         [&](AttemptFacts& f) {
             f.sha = base;
             f.checked = {"t1", "t2"};
         },
         N::finish,
         C::regression,
         "1 failing test passes on " + base7 + ": the change broke it",
         {},
         0,
         {"passes_on_base"}},
        {"base check: every checked test fails on the base too",
         [&](AttemptFacts& f) {
             f.sha = base;
             f.checked = {"t1"};
             f.found_before = {{"t0", 2, base, true}};
         },
         N::finish,
         C::pre_existing,
         "2 tests fail on " + base7 + " too",
         {},
         0,
         {"pre_existing"}},
        {"base check: an infra failure is retried",
         [&](AttemptFacts& f) {
             f.sha = base;
             f.checked = {"t1"};
             f.judged = judged(C::infra_error, "exit status 2");
         },
         N::retry, C::infra_error, "exit status 2 (retried)"},
        {"base check: no verdict, the regression stands",
         [&](AttemptFacts& f) {
             f.sha = base;
             f.checked = {"t1"};
             f.judged = judged(C::timeout, "tier timeout reached");
         },
         N::finish, C::regression,
         "the base check on " + base7 + " ended timeout: tier timeout reached"},
        {"base check: no device within the wait",
         [&](AttemptFacts& f) {
             f.origin = AttemptOrigin::no_device;
             f.sha = base;
             f.checked = {"t1"};
             f.judged = judged(C::device_unavailable, "no healthy runner slot");
         },
         N::finish, C::regression,
         "the base check on " + base7 + " ended device_unavailable: no healthy runner slot"},
        // A build stage (docs/build.md): against its base's build, after its rebuild.
        {"a build whose base fails to build too: pre_existing",
         [&](AttemptFacts& f) {
             as_build(f, "the build failed (exit 2)");
             f.base_build = BaseBuild{BaseBuild::Said::fails, base, 4};
         },
         N::finish,
         C::pre_existing,
         "the build fails on " + base7 + " too",
         {},
         0,
         {"pre_existing"}},
        {"a build whose base builds: a regression, saying so",
         [&](AttemptFacts& f) {
             as_build(f, "the build failed (exit 2)");
             f.base_build = BaseBuild{BaseBuild::Said::builds, base, 0};
         },
         N::finish, C::regression,
         "the build failed (exit 2), again on rerun; " + base7 + " builds"},
        {"a build whose base was not built here",
         [&](AttemptFacts& f) {
             as_build(f, "the build failed (exit 2)");
             f.base_build = BaseBuild{BaseBuild::Said::unknown, base, 0};
         },
         N::finish, C::regression,
         "the build failed (exit 2), again on rerun; " + base7 + " was not built here"},
        {"base_check run: a build whose base was not built here builds it",
         [&](AttemptFacts& f) {
             as_build(f, "the build failed (exit 2)");
             f.base_build = BaseBuild{BaseBuild::Said::unknown, base, 0};
             f.run_on_base = true;
         },
         N::check_on_base,
         C::regression,
         "the build failed (exit 2), again on rerun; building " + base7 + " to compare",
         {},
         0,
         {},
         {"build"}},
        {"a build's first failure is pre_existing at once when its base fails to build",
         [&](AttemptFacts& f) {
             as_build(f, "the build failed (exit 2)");
             f.regressions_before = 0;
             f.base_build = BaseBuild{BaseBuild::Said::fails, base, 4};
         },
         N::finish,
         C::pre_existing,
         "the build fails on " + base7 + " too",
         {},
         0,
         {"pre_existing"}},
        {"a build's first failure is built again when its base builds",
         [&](AttemptFacts& f) {
             as_build(f, "the build failed (exit 2)");
             f.regressions_before = 0;
             f.base_build = BaseBuild{BaseBuild::Said::builds, base, 0};
         },
         N::retry, C::regression,
         "the build failed (exit 2); built again to tell a flaky build (retried)"},
        {"a build's base check: the base builds",
         [&](AttemptFacts& f) {
             as_build(f, "built 0123456789ab");
             f.judged = judged(C::passed, "built 0123456789ab");
             f.sha = base;
             f.checked = {"build"};
         },
         N::finish, C::regression, "the build fails; " + base7 + " builds: the change broke it"},
        {"a build's base check: the base fails to build too",
         [&](AttemptFacts& f) {
             as_build(f, "the build failed (exit 2)");
             f.sha = base;
             f.checked = {"build"};
         },
         N::finish,
         C::pre_existing,
         "the build fails on " + base7 + " too",
         {},
         0,
         {"pre_existing"}},
        {"a build's base check: no verdict, the regression stands",
         [&](AttemptFacts& f) {
             as_build(f, "");
             f.judged = judged(C::timeout, "stalled");
             f.sha = base;
             f.checked = {"build"};
         },
         N::finish, C::regression, "the build of " + base7 + " ended timeout: stalled"},
    };
    for (const auto& c : cases) {
        AttemptFacts f;
        f.judged = judged(C::regression, failed1, 1, 3);
        f.run_id = 7;
        f.sha = std::string(40, 'a');
        f.failed = {"t1"};
        f.passed = {"t2", "t3"};
        f.retry = RetryPolicy{2, 1};
        f.pr = true;
        f.base_sha = base;
        f.lookup_base = true;
        c.facts(f);
        const auto p = plan_end(f);
        EXPECT_EQ(p.next, c.next) << c.name;
        EXPECT_EQ(p.conclusion, c.conclusion) << c.name;
        EXPECT_EQ(p.reason, c.reason) << c.name;
        EXPECT_EQ(p.flaky, c.flaky) << c.name;
        EXPECT_EQ(p.flaky_count, c.flaky_count) << c.name;
        std::vector<std::string> keys;
        for (const auto& [k, v] : p.evidence) keys.push_back(k);
        EXPECT_EQ(keys, c.evidence) << c.name;
        EXPECT_EQ(p.check_tests, c.check) << c.name;
        if (p.next == N::check_on_base) {
            EXPECT_EQ(p.base_sha, base) << c.name;
        }
        EXPECT_EQ(p.exit_status, f.judged.exit_status) << c.name;
    }
}

}  // namespace
}  // namespace crcrd::sched
