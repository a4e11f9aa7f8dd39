// The selection-miss audit's pure parts (docs/verdicts.md): the PR a merged commit came from,
// read from its message, and which failed tests are misses, case by case.
#include <gtest/gtest.h>

#include "crcrd/sched/audit.hpp"

namespace crcrd::sched {
namespace {

TEST(AuditPrFromMessage, PytorchMergeBotMessagesAndTheirVariants) {
    struct Case {
        const char* what;
        const char* message;
        std::optional<std::int64_t> pr;
    };
    const std::vector<Case> cases = {
        {"merge bot: both forms agree",
         "[inductor] fuse reductions (#140123)\n\nLonger text.\n\nPull Request resolved: "
         "https://github.com/pytorch/pytorch/pull/140123\nApproved by: "
         "https://github.com/someone\n",
         140123},
        {"the resolved line wins over the subject",
         "Revert \"x (#1)\" (#2)\n\nPull Request resolved: "
         "https://github.com/pytorch/pytorch/pull/3\n",
         3},
        {"resolved line only",
         "Fix a kernel\n\nPull Request resolved: https://github.com/pytorch/pytorch/pull/77\n", 77},
        {"another repository's URL still names the PR",
         "Sync\n\nPull Request resolved: https://github.com/pytorch/vision/pull/9\n", 9},
        {"subject suffix only", "Fix a kernel (#4242)", 4242},
        {"subject suffix with trailing blanks and CR", "Fix a kernel (#12)  \r\n\nbody", 12},
        {"a reference in the middle of the subject is not the PR", "Follow-up to (#12) for CUDA",
         std::nullopt},
        {"a reference in the body is not the PR", "Fix a kernel\n\nSee (#12)", std::nullopt},
        {"no PR at all", "Direct push to main\n\nno PR here", std::nullopt},
        {"empty message", "", std::nullopt},
        {"not a number", "Fix (#abc)", std::nullopt},
        {"empty number", "Fix (#)", std::nullopt},
        {"zero is no PR", "Fix (#0)", std::nullopt},
        {"too many digits", "Fix (#1234567890123)", std::nullopt},
        {"a resolved line without a number falls back to the subject",
         "Fix (#5)\n\nPull Request resolved: https://github.com/pytorch/pytorch/pull/\n", 5},
        {"a malformed resolved URL falls back to the subject",
         "Fix (#6)\n\nPull Request resolved: https://example.org/pull/7\n", 6},
    };
    for (const auto& c : cases) {
        EXPECT_EQ(pr_from_message(c.message), c.pr) << c.what;
    }
}

TEST(AuditDecideMisses, ATestIsAMissWhenItPassedBeforeAndNoCommitRanItsTier) {
    using T = store::TierTest;
    using Tiers = std::vector<std::set<std::string>>;
    const std::vector<T> failed = {
        {"affected", "test_ops.py::a"}, {"affected", "test_ops.py::b"}, {"full", "test_nn.py::c"}};
    struct Case {
        const char* what;
        std::set<T> passed_before;
        Tiers selected;  // per commit in between
        std::vector<T> misses;
    };
    const std::vector<Case> cases = {
        {"no commit ran any tier: every test that passed before",
         {failed[0], failed[2]},
         {{}, {}},
         {failed[0], failed[2]}},
        {"a commit ran the tier: not a miss",
         {failed[0], failed[1]},
         {{}, {"import", "affected"}},
         {}},
        {"only the other tier ran", {failed[0], failed[2]}, {{"full"}}, {failed[0]}},
        {"nothing passed before: new or already broken tests", {}, {{}, {}}, {}},
        {"a pass in another tier does not count", {{"full", "test_ops.py::a"}}, {{}}, {}},
        {"no commits in between: nothing to miss", {failed[0]}, {}, {}},
        {"always tiers alone do not cover affected",
         {failed[0], failed[1], failed[2]},
         {{"import", "smoke"}, {"import"}},
         {failed[0], failed[1], failed[2]}},
    };
    for (const auto& c : cases) {
        EXPECT_EQ(decide_misses(failed, c.passed_before, c.selected), c.misses) << c.what;
    }
}

}  // namespace
}  // namespace crcrd::sched
