// JUnit from real pytest runs, and malformed files.
#include <gtest/gtest.h>

#include "crcrd/exec/junit.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"

namespace crcrd::exec {
namespace {

const char* k_suite = R"(import pytest

class TestOps:
    def test_add(self):
        assert 1 + 1 == 2

    def test_broken(self):
        assert 1 + 1 == 3, "arithmetic is off"

    @pytest.mark.skip(reason="needs two devices")
    def test_two_devices(self):
        pass

def test_plain():
    pass

@pytest.fixture
def broken_fixture():
    raise RuntimeError("device open failed")

def test_errors(broken_fixture):
    pass
)";

TEST(Junit, ReadsRealPytestOutputFromSeveralFiles) {
    TempDir dir;
    write_file(dir.path() / "tests" / "test_demo.py", k_suite);
    auto junit = dir.path() / "junit";
    std::filesystem::create_directories(junit);
    std::string out;
    // Debian's python3 (with python3-pytest), not whatever python3 comes first in PATH.
    int rc =
        run_command({"/usr/bin/python3", "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o",
                     "junit_family=xunit1", "--rootdir", dir.path().string(), "--junitxml",
                     (junit / "a.xml").string(), (dir.path() / "tests" / "test_demo.py").string()},
                    &out);
    ASSERT_EQ(rc, 1) << out;  // pytest's exit code for failed tests
    ASSERT_NE(out.find("1 failed, 2 passed, 1 skipped, 1 error"), std::string::npos) << out;
    write_file(
        junit / "b.xml",
        R"(<testsuite name="extra"><testcase classname="x.Y" name="test_more" time="0.5"/></testsuite>)");
    write_file(junit / "notes.txt", "not XML, not read");

    auto results = read_junit_dir(junit);
    ASSERT_TRUE(results) << results.error().message;
    auto c = count(*results);
    EXPECT_EQ(c.passed, 3u);
    EXPECT_EQ(c.failed, 2u);  // a failure and an error
    EXPECT_EQ(c.skipped, 1u);
    auto find = [&](const std::string& name) -> const TestResult* {
        for (const auto& t : *results)
            if (t.name == name) return &t;
        return nullptr;
    };
    const auto* broken = find("tests/test_demo.py::TestOps::test_broken");
    ASSERT_NE(broken, nullptr) << (*results)[0].name;
    EXPECT_EQ(broken->outcome, TestOutcome::failed);
    EXPECT_NE(broken->message.find("arithmetic is off"), std::string::npos);
    const auto* skipped = find("tests/test_demo.py::TestOps::test_two_devices");
    ASSERT_NE(skipped, nullptr);
    EXPECT_NE(skipped->message.find("needs two devices"), std::string::npos);
    const auto* errored = find("tests/test_demo.py::test_errors");
    ASSERT_NE(errored, nullptr);
    EXPECT_EQ(errored->outcome, TestOutcome::failed);
    EXPECT_NE(errored->message.find("device open failed"), std::string::npos);
    ASSERT_NE(find("tests/test_demo.py::test_plain"), nullptr);
    const auto* more = find("x.Y::test_more");
    ASSERT_NE(more, nullptr);
    EXPECT_DOUBLE_EQ(more->duration_s, 0.5);
}

TEST(Junit, MalformedXmlIsAnErrorWithTheParsersMessage) {
    auto r = parse_junit("<testsuite><testcase name=\"a\"></testsuite>", "broken.xml");
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code, Errc::junit);
    EXPECT_NE(r.error().message.find("broken.xml: malformed XML at offset"), std::string::npos)
        << r.error().message;
    auto wrong = parse_junit("<html/>", "page.xml");
    ASSERT_FALSE(wrong);
    EXPECT_NE(wrong.error().message.find("<html>"), std::string::npos);

    TempDir dir;
    write_file(dir.path() / "a.xml", "<testsuite><testcase name='ok'/></testsuite>");
    write_file(dir.path() / "b.xml", "<testsuite><testcase");
    auto d = read_junit_dir(dir.path());
    ASSERT_FALSE(d);
    EXPECT_NE(d.error().message.find("b.xml"), std::string::npos);
    TempDir empty;
    auto none = read_junit_dir(empty.path());
    ASSERT_TRUE(none);
    EXPECT_TRUE(none->empty());
}

}  // namespace
}  // namespace crcrd::exec
