#include <gtest/gtest.h>

#include <random>

#include "crcrd/select/selection.hpp"
#include "reference_glob.hpp"

namespace crcrd::select {
namespace {

// The example of docs/selection.md ("The rules file").
const char* k_rules = R"(
tiers:
  - {name: import,   always: true, tests: [tests/test_import.py, tests/test_device_registration.py], timeout: 10m}
  - {name: smoke,    always: true, tests: [tests/smoke]}
  - {name: affected, from_rules: true, timeout: 60m}
  - {name: full,     scheduled: true, tests: ["${PYTORCH_DIR}/test/test_torch.py", "${PYTORCH_DIR}/test/test_nn.py"]}
rules:
  - {name: dispatch, paths: ["aten/src/ATen/native/**", "c10/core/**", "torch/csrc/**"], tests: ["${PYTORCH_DIR}/test/test_ops.py"]}
  - {name: compile,  paths: ["torch/_inductor/**", "torch/_dynamo/**"], tests: ["${PYTORCH_DIR}/test/inductor/test_torchinductor.py"]}
  - {name: docs,     paths: ["docs/**", "**/*.md"], skip: true}
unmatched: all_rules
docs_only: always_tiers
full_matrix: {schedule: "0 3 * * *", ref: main}
)";

Rules rules(const std::string& extra = "") {
    std::vector<std::string> errors;
    auto r = parse_rules(std::string(k_rules) + extra, "selection.yaml", &errors);
    EXPECT_TRUE(r) << (errors.empty() ? "" : errors.front());
    return r ? *r : Rules{};
}

std::vector<std::string> names(const Selection& s) {
    std::vector<std::string> out;
    for (const auto& t : s.tiers) out.push_back(t.name);
    return out;
}

using V = std::vector<std::string>;

TEST(Selection, RealisticPytorchChanges) {
    auto r = rules();
    struct Case {
        const char* what;
        V paths;
        V tiers;
        V rules_matched;
    };
    const std::vector<Case> cases = {
        {"an ATen kernel",
         {"aten/src/ATen/native/BinaryOps.cpp"},
         {"import", "smoke", "affected"},
         {"dispatch"}},
        {"c10 core",
         {"c10/core/TensorImpl.h", "c10/core/impl/PyInterpreter.cpp"},
         {"import", "smoke", "affected"},
         {"dispatch"}},
        {"inductor",
         {"torch/_inductor/codegen/wrapper.py"},
         {"import", "smoke", "affected"},
         {"compile"}},
        {"both",
         {"torch/_dynamo/eval_frame.py", "torch/csrc/autograd/engine.cpp"},
         {"import", "smoke", "affected"},
         {"dispatch", "compile"}},
        {"docs only",
         {"docs/source/index.rst", "README.md", "docs/cpp/source/notes.md"},
         {"import", "smoke"},
         {"docs"}},
        // A path that a skip rule and a code rule both match still selects the code rule.
        {"README inside inductor",
         {"torch/_inductor/README.md"},
         {"import", "smoke", "affected"},
         {"compile", "docs"}},
        {"docs plus code",
         {"docs/source/index.rst", "c10/core/Scalar.h"},
         {"import", "smoke", "affected"},
         {"dispatch", "docs"}},
        {"unmatched path selects every rule",
         {"tools/setup_helpers/cmake.py"},
         {"import", "smoke", "affected"},
         {}},
        {"nothing changed", {}, {"import", "smoke"}, {}},
    };
    for (const auto& c : cases) {
        auto s = decide(r, ChangedPaths{Source::git, c.paths, ""}, RunEvent::pull_request);
        EXPECT_EQ(names(s), c.tiers) << c.what;
        V matched;
        for (const auto& m : s.rules) matched.push_back(m.name);
        EXPECT_EQ(matched, c.rules_matched) << c.what;
    }
}

TEST(Selection, TestsAndReasons) {
    auto r = rules();
    auto s = decide(r, ChangedPaths{Source::payload, {"torch/_inductor/ir.py"}, ""},
                    RunEvent::pull_request);
    ASSERT_EQ(s.tiers.size(), 3u);
    EXPECT_EQ(s.tiers[0].reason, "always");
    EXPECT_EQ(s.tiers[2].reason, "rules matched: compile");
    EXPECT_EQ(s.tiers[2].tests, V{"${PYTORCH_DIR}/test/inductor/test_torchinductor.py"});

    auto unmatched = decide(r, ChangedPaths{Source::git, {"setup.py"}, ""}, RunEvent::push);
    EXPECT_EQ(unmatched.unmatched, 1u);
    EXPECT_EQ(unmatched.tiers[2].tests, (V{"${PYTORCH_DIR}/test/test_ops.py",
                                           "${PYTORCH_DIR}/test/inductor/test_torchinductor.py"}));
    EXPECT_NE(unmatched.tiers[2].reason.find("matched no rule"), std::string::npos);

    auto docs = decide(r, ChangedPaths{Source::git, {"docs/a.rst"}, ""}, RunEvent::pull_request);
    EXPECT_TRUE(docs.docs_only);
    EXPECT_EQ(docs.tiers[0].reason, "always (documentation-only change)");
}

TEST(Selection, UnknownSourceFailsSafe) {
    auto s = decide(rules(), ChangedPaths{Source::unknown, {}, "mirror: cannot fetch"},
                    RunEvent::pull_request);
    EXPECT_EQ(names(s), (V{"import", "smoke", "affected"}));
    EXPECT_EQ(s.tiers[2].tests.size(), 2u);
    EXPECT_NE(s.tiers[2].reason.find("fail safe"), std::string::npos);
    EXPECT_EQ(s.to_json()["note"], "mirror: cannot fetch");
}

TEST(Selection, Policies) {
    auto nothing = rules("");
    nothing.unmatched_all_rules = false;
    nothing.docs_only_always = false;
    auto s = decide(nothing, ChangedPaths{Source::git, {"setup.py"}, ""}, RunEvent::pull_request);
    EXPECT_EQ(names(s), (V{"import", "smoke"}));
    auto docs =
        decide(nothing, ChangedPaths{Source::git, {"docs/x.md"}, ""}, RunEvent::pull_request);
    EXPECT_TRUE(docs.tiers.empty());
    EXPECT_EQ(docs.reason, "documentation-only change (docs_only: nothing)");
}

TEST(Selection, ScheduleRunsEveryTier) {
    auto s = decide(rules(), ChangedPaths{Source::schedule, {}, ""}, RunEvent::schedule);
    EXPECT_EQ(names(s), (V{"import", "smoke", "affected", "full"}));
    EXPECT_EQ(s.tiers[2].tests.size(), 2u);
    EXPECT_EQ(s.tiers[3].tests.size(), 2u);
}

TEST(Selection, ThreeThousandPathsAreCountedAndListsCapped) {
    std::vector<std::string> paths;
    for (int i = 0; i < 3000; ++i)
        paths.push_back("aten/src/ATen/native/gen/Op" + std::to_string(i) + ".cpp");
    paths.push_back("docs/x.md");
    for (int i = 0; i < 150; ++i) paths.push_back("other/u" + std::to_string(i));
    auto s = decide(rules(), ChangedPaths{Source::github_api, paths, ""}, RunEvent::pull_request);
    ASSERT_EQ(s.rules.size(), 2u);
    EXPECT_EQ(s.rules[0].matched, 3000u);
    EXPECT_EQ(s.rules[0].paths.size(), k_listed);
    EXPECT_EQ(s.rules[0].paths.back(), paths[k_listed - 1]);
    EXPECT_EQ(s.changed_paths, 3151u);
    EXPECT_EQ(s.unmatched, 150u);
    ASSERT_EQ(s.unmatched_paths.size(), k_listed);
    EXPECT_EQ(s.unmatched_paths.front(), "other/u0");
    EXPECT_EQ(s.unmatched_paths.back(), "other/u99");
    EXPECT_FALSE(s.docs_only);
    auto j = s.to_json();
    EXPECT_EQ(j["source"], "github_api");
    EXPECT_EQ(j["rules"][0]["matched"], 3000);
    EXPECT_EQ(j["tiers"].size(), 3u);
}

// Property: the rules, counts and listed paths of an explanation are those the old matcher
// (every glob of every rule, one at a time) gives, over random rules of several globs each
// (so that one path often matches several globs of one rule) and random paths.
TEST(Selection, SameExplanationAsTheReferenceMatcher) {
    std::mt19937 rng(7);
    const char* dirs[] = {"aten", "c10", "torch", "docs", "test"};
    const char* names[] = {"x.cpp", "y.py", "z.md", "Op1.cpp", "test_a.py"};
    auto dir = [&] { return std::string(dirs[rng() % 5]); };
    std::string yaml = "tiers: [{name: t, from_rules: true}]\nrules:\n";
    for (int r = 0; r < 40; ++r) {
        const std::string globs[] = {dir() + "/**", "**/*.md", dir() + "/*/" + names[rng() % 5],
                                     "**/test_?.py",
                                     dir() + "/*" + std::to_string(rng() % 3) + ".cpp"};
        yaml += "  - {name: r" + std::to_string(r) + ", paths: [\"" + globs[rng() % 5] + "\", \"" +
                globs[rng() % 5] + "\"], " +
                (r % 7 == 0 ? "skip: true" : "tests: [t" + std::to_string(r) + "]") + "}\n";
    }
    std::vector<std::string> errors;
    auto rules = parse_rules(yaml, "random.yaml", &errors);
    ASSERT_TRUE(rules) << (errors.empty() ? "" : errors.front());
    std::vector<std::string> paths;
    for (int i = 0; i < 400; ++i) {
        std::string p = dir();
        for (auto depth = rng() % 3; depth > 0; --depth) p += "/" + dir();
        paths.push_back(p + "/" + names[rng() % 5]);
    }
    const auto s = decide(*rules, ChangedPaths{Source::git, paths, ""}, RunEvent::pull_request);
    std::vector<RuleMatch> expected;
    std::size_t unmatched = 0;
    std::vector<std::string> unmatched_paths;
    for (const auto& rule : rules->rules) {
        RuleMatch m{rule.name, {}, 0};
        for (const auto& p : paths) {
            bool hit = false;
            for (const auto& g : rule.paths) hit = hit || reference::matches(g, p);
            if (hit && m.matched++ < k_listed) m.paths.push_back(p);
        }
        if (m.matched) expected.push_back(m);
    }
    for (const auto& p : paths) {
        bool hit = false;
        for (const auto& rule : rules->rules)
            for (const auto& g : rule.paths) hit = hit || reference::matches(g, p);
        if (!hit && unmatched++ < k_listed) unmatched_paths.push_back(p);
    }
    ASSERT_EQ(s.rules.size(), expected.size());
    for (std::size_t i = 0; i < expected.size(); ++i) {
        EXPECT_EQ(s.rules[i].name, expected[i].name);
        EXPECT_EQ(s.rules[i].matched, expected[i].matched) << expected[i].name;
        EXPECT_EQ(s.rules[i].paths, expected[i].paths) << expected[i].name;
    }
    EXPECT_EQ(s.unmatched, unmatched);
    EXPECT_EQ(s.unmatched_paths, unmatched_paths);
    EXPECT_GT(expected.size(), 10u);
    EXPECT_GT(unmatched, 0u);
}

// Rules put together in code rather than parsed (no compiled globs) still match.
TEST(Selection, RulesBuiltByHandMatchToo) {
    Rules hand;
    hand.tiers.push_back(Tier{"affected", TierKind::from_rules, {}, std::chrono::minutes(60), {}});
    hand.rules.push_back(Rule{"dispatch", {"c10/core/**"}, {"test_ops.py"}, false});
    const auto s = decide(hand, ChangedPaths{Source::git, {"c10/core/Scalar.h", "setup.py"}, ""},
                          RunEvent::pull_request);
    ASSERT_EQ(s.rules.size(), 1u);
    EXPECT_EQ(s.rules[0].paths, V{"c10/core/Scalar.h"});
    EXPECT_EQ(s.unmatched_paths, V{"setup.py"});
}

TEST(Rules, ValidationNamesFileLineAndKey) {
    struct Case {
        std::string yaml;
        std::string expect;
    };
    const std::vector<Case> cases = {
        {"tiers: [{name: a, always: true}]\n", "selection.yaml: tiers[0].tests: required"},
        {"tiers: [{name: a, always: true, from_rules: true, tests: [x]}]\n",
         "tiers[0].name: a tier is exactly one of"},
        {"tiers: [{name: a, always: true, tests: [x]}, {name: a, always: true, tests: [y]}]\n",
         "duplicate tier 'a'"},
        {"tiers: [{name: build, always: true, tests: [x]}]\n",
         "tiers[0].name: 'build' is the build stage's name"},
        {"tiers: [{name: a, always: true, tests: [x], timeout: soon}]\n", "tiers[0].timeout"},
        {"tiers: [{name: a, always: true, tests: [x]}]\nrules: [{name: r, paths: [a/**]}]\n",
         "rules[0].tests: required unless skip"},
        {"tiers: [{name: a, always: true, tests: [x]}]\nrules: [{name: r, paths: [/abs/**], tests: "
         "[t]}]\n",
         "rules[0].paths"},
        {"tiers: [{name: a, always: true, tests: [x]}]\nrules: [{name: r, tests: [t]}]\n",
         "rules[0].paths: required"},
        {"tiers: [{name: a, always: true, tests: [x]}]\nunmatched: everything\n",
         "unmatched: 'everything'"},
        {"tiers: [{name: a, always: true, tests: [x]}]\nfull_matrix: {schedule: \"0 3 * *\"}\n",
         "full_matrix.schedule"},
        {"tiers: [{name: a, always: true, tests: [x]}]\ncolour: blue\n", "colour: unknown key"},
        {"tiers: [{name: a, from_rules: true}, {name: b, from_rules: true}]\n",
         "at most one tier may be from_rules"},
    };
    for (const auto& c : cases) {
        std::vector<std::string> errors;
        auto r = parse_rules(c.yaml, "selection.yaml", &errors);
        EXPECT_FALSE(r) << c.yaml;
        std::string all;
        for (const auto& e : errors) all += e + "\n";
        EXPECT_NE(all.find(c.expect), std::string::npos) << "wanted '" << c.expect << "' in:\n"
                                                         << all;
    }
    std::vector<std::string> errors;
    EXPECT_FALSE(
        parse_rules("tiers:\n  - name: a\n    always: true\n    tests: [x]\n    timeout: soon\n",
                    "sel.yaml", &errors));
    ASSERT_FALSE(errors.empty());
    EXPECT_NE(errors[0].find("(line 5)"), std::string::npos) << errors[0];
}

}  // namespace
}  // namespace crcrd::select
