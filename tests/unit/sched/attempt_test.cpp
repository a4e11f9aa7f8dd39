#include <gtest/gtest.h>

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
        {"regression rerun", Conclusion::regression, 0, 0, p, Kind::retry, "why; rerun to tell a flaky test"},
        {"regression again", Conclusion::regression, 0, 1, p, Kind::finish, "why, again on rerun"},
        {"regression, no reruns", Conclusion::regression, 0, 0, {2, 0}, Kind::finish, "why"},
        {"regression after infra retries", Conclusion::regression, 2, 0, p, Kind::retry, "why; rerun to tell a flaky test"},
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
        {"two tests, both on the base", {"a", "b"}, {{"a", 1, base}, {"b", 2, base}}, "2 tests fail on abcdef0 too"},
        {"one of two only on the PR", {"a", "b"}, {{"a", 1, base}}, std::nullopt},
        {"none on the base", {"a"}, {}, std::nullopt},
        {"no failed test", {}, {}, std::nullopt},
    };
    for (const auto& c : cases) EXPECT_EQ(pre_existing_reason(c.failed, c.on_base), c.reason) << c.what;
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
    auto pass = judge(exited(0, {{"t1", "passed", 0.1, ""}}), patterns);
    EXPECT_EQ(pass.conclusion, Conclusion::passed);
    EXPECT_EQ(pass.exit_status, 0);

    auto failed = judge(exited(1, {{"t1", "failed", 0.1, "assert"}, {"t2", "passed", 0.1, ""}}), patterns);
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
}

}  // namespace
}  // namespace crcrd::sched
