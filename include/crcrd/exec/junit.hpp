#pragma once
// Per-test results from the JUnit XML files a test command writes into CRCR_JUNIT_DIR
// (pytest's format: testsuites/testsuite/testcase with failure, error or skipped).

#include <filesystem>
#include <string>
#include <vector>

#include "crcrd/core/result.hpp"
#include "crcrd/core/vocab.hpp"

namespace crcrd::exec {

struct TestResult {
    std::string name;  // "file::Class::test" when pytest gives the file, else "classname::name"
    TestOutcome outcome = TestOutcome::passed;  // never flaky here; an <error> is failed
    double duration_s = 0;
    std::string message;  // the failure/error/skip message, at most 4 KiB
};

struct TestCounts {
    std::size_t passed = 0, failed = 0, skipped = 0;
};

/// Every *.xml file directly in `dir`, in name order. A file that is not well-formed JUnit
/// is an error (code "junit") carrying the file name, the parser's message and offset; a
/// directory with no XML file gives no results (the caller decides what that means).
Result<std::vector<TestResult>> read_junit_dir(const std::filesystem::path& dir);

/// One document's test cases.
Result<std::vector<TestResult>> parse_junit(const std::string& xml, const std::string& source_name);

TestCounts count(const std::vector<TestResult>& results);

}  // namespace crcrd::exec
