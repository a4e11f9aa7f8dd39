// The demo's test command, examples/demo/run-tests.sh, run as crcrd runs it (the environment of
// docs/execution.md, "The test command's environment", real pytest): the tier's tests, and the
// rerun of only the failed tests from CRCR_RERUN_FILE, whose JUnit ids name the test file when
// pytest wrote it.
#include <gtest/gtest.h>

#include "crcrd/core/files.hpp"
#include "support/daemon.hpp"

namespace crcrd {
namespace {

class DemoScriptTest : public ::testing::Test {
  protected:
    /// Runs the script with `tests` in CRCR_TESTS_FILE and, when given, `rerun` in
    /// CRCR_RERUN_FILE; `regressed`: the checkout has demo/regressed. The JUnit it wrote.
    std::string run(const std::vector<std::string>& tests, const std::vector<std::string>& rerun,
                    bool regressed, int* exit_code) {
        std::filesystem::create_directories(dir.path() / "junit");
        std::filesystem::create_directories(dir.path() / "checkout" / "demo");
        if (regressed) write_file(dir.path() / "checkout" / "demo" / "regressed", "broken\n");
        std::string list;
        for (const auto& t : tests) list += t + "\n";
        write_file(dir.path() / "tests.txt", list);
        std::vector<std::string> env = {"PATH=/usr/bin:/bin",
                                        "CRCR_TIER=smoke",
                                        "CRCR_RUN_ID=1",
                                        "CRCR_JOB_ID=1",
                                        "CRCR_ATTEMPT=2",
                                        "CRCR_SLOT=sim-0",
                                        "CRCR_PYTORCH_SHA=" + std::string(40, 'a'),
                                        "CRCR_PYTORCH_DIR=" + (dir.path() / "checkout").string(),
                                        "CRCR_TESTS_FILE=" + (dir.path() / "tests.txt").string(),
                                        "CRCR_JUNIT_DIR=" + (dir.path() / "junit").string(),
                                        "PYTHONDONTWRITEBYTECODE=1"};
        if (!rerun.empty()) {
            std::string ids;
            for (const auto& t : rerun) ids += t + "\n";
            write_file(dir.path() / "rerun.txt", ids);
            env.push_back("CRCR_RERUN_FILE=" + (dir.path() / "rerun.txt").string());
        }
        std::string out;
        std::vector<std::string> argv = {"/usr/bin/env", "-i"};
        argv.insert(argv.end(), env.begin(), env.end());
        argv.push_back(std::string(CRCRD_SOURCE_DIR) + "/examples/demo/run-tests.sh");
        *exit_code = run_command(argv, &out);
        auto junit = read_file(dir.path() / "junit" / "results.xml");
        EXPECT_TRUE(junit) << out;
        return junit ? *junit : out;
    }
    static std::size_t count(const std::string& text, const std::string& what) {
        std::size_t n = 0;
        for (auto p = text.find(what); p != std::string::npos; p = text.find(what, p + 1)) ++n;
        return n;
    }
    TempDir dir;
};

TEST_F(DemoScriptTest, TheRerunRunsOnlyTheFailedTestNamedByItsFile) {
    int rc = 0;
    auto junit = run({"tests/test_smoke.py", "tests/test_trunk.py"},
                     {"tests/test_trunk.py::test_trunk_contract"}, true, &rc);
    EXPECT_EQ(rc, 1) << junit;
    EXPECT_EQ(count(junit, "<testcase "), 1u) << junit;
    EXPECT_NE(junit.find("name=\"test_trunk_contract\""), std::string::npos) << junit;
    EXPECT_EQ(count(junit, "<failure"), 1u) << junit;
    // On a commit without the regression the same rerun passes.
    std::filesystem::remove(dir.path() / "checkout" / "demo" / "regressed");
    junit = run({"tests/test_smoke.py", "tests/test_trunk.py"},
                {"tests/test_trunk.py::test_trunk_contract"}, false, &rc);
    EXPECT_EQ(rc, 0) << junit;
    EXPECT_EQ(count(junit, "<testcase "), 1u) << junit;
    EXPECT_EQ(count(junit, "<failure"), 0u) << junit;
}

TEST_F(DemoScriptTest, ATierRunsItsTestsAndTheTrunkTestFailsOnlyOnARegressedCheckout) {
    int rc = 0;
    auto junit = run({"tests/test_smoke.py", "tests/test_trunk.py"}, {}, false, &rc);
    EXPECT_EQ(rc, 0) << junit;
    EXPECT_EQ(count(junit, "<failure"), 0u) << junit;
    EXPECT_GE(count(junit, "<testcase "), 2u) << junit;
    junit = run({"tests/test_smoke.py", "tests/test_trunk.py"}, {}, true, &rc);
    EXPECT_EQ(rc, 1) << junit;
    EXPECT_EQ(count(junit, "<failure"), 1u) << junit;
}

}  // namespace
}  // namespace crcrd
