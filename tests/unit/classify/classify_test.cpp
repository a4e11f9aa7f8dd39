// The class of one attempt from its evidence (docs/reporting.md, "One attempt's class"), with the
// default patterns.
#include <gtest/gtest.h>

#include <random>
#include <regex>

#include "crcrd/classify/classify.hpp"
#include "crcrd/config/config.hpp"

namespace crcrd::classify {
namespace {

Patterns defaults() {
    const config::ClassifyConfig c;
    return compile_patterns(c.device_patterns, c.infra_patterns);
}

Evidence ran(int exit_code, std::size_t total, std::size_t failed, std::string log = "") {
    Evidence e;
    e.exit_code = exit_code;
    e.tests_total = total;
    e.tests_failed = failed;
    e.log_text = std::move(log);
    return e;
}

TEST(Classify, EachRuleInItsOrder) {
    const auto p = defaults();
    struct Case {
        const char* what;
        Evidence e;
        Conclusion conclusion;
    };
    Evidence cancelled = ran(143, 0, 0);
    cancelled.cancelled = true;
    Evidence timed_out = ran(143, 3, 1, "RAS::VFIO::DeviceOpenFail\n");
    timed_out.timed_out = true;
    Evidence stalled = ran(143, 0, 0);
    stalled.stalled = true;
    Evidence bad_junit = ran(0, 0, 0);
    bad_junit.junit_error = "results.xml: unexpected end of file";
    Evidence killed = ran(0, 2, 0);
    killed.exit_code.reset();
    killed.signal = 9;
    const std::vector<Case> cases = {
        {"cancelled wins", cancelled, Conclusion::cancelled},
        {"a timeout before any log signature", timed_out, Conclusion::timeout},
        {"a stall", stalled, Conclusion::timeout},
        {"a device signature, even with failed tests",
         ran(1, 5, 2, "x\nRAS::VFIO::DeviceOpenFail: /dev/vfio/3\n"),
         Conclusion::device_unavailable},
        {"another device fault", ran(1, 0, 0, "RuntimeError: Failed to open device 0\n"),
         Conclusion::device_unavailable},
        {"malformed JUnit", bad_junit, Conclusion::infra_error},
        {"failed tests", ran(1, 10, 2, "E   AssertionError\n"), Conclusion::regression},
        {"failed tests and an infra line", ran(1, 10, 2, "No space left on device\n"),
         Conclusion::regression},
        {"an infra line in a failed attempt",
         ran(2, 0, 0, "ERROR: Could not install packages due to an OSError\n"),
         Conclusion::infra_error},
        {"an infra line in a passing attempt",
         ran(0, 4, 0, "test_offline: Could not resolve host (expected)\n"), Conclusion::passed},
        {"killed by a signal", killed, Conclusion::infra_error},
        {"non-zero exit without a failed test", ran(3, 4, 0), Conclusion::infra_error},
        {"everything passed", ran(0, 4, 0), Conclusion::passed},
    };
    for (const auto& c : cases) {
        EXPECT_EQ(decide(c.e, p).conclusion, c.conclusion) << c.what;
    }
}

TEST(Classify, ReasonsNameTheEvidence) {
    const auto p = defaults();
    auto device =
        decide(ran(1, 0, 0, "ok\nRAS::VFIO::DeviceOpenFail: cannot open /dev/vfio/0\nmore\n"), p);
    EXPECT_EQ(device.reason,
              "device failure in the log: RAS::VFIO::DeviceOpenFail: cannot open /dev/vfio/0");
    EXPECT_EQ(device.log_line, "RAS::VFIO::DeviceOpenFail: cannot open /dev/vfio/0");
    EXPECT_EQ(decide(ran(1, 10, 3), p).reason, "3 of 10 tests failed");
    EXPECT_EQ(decide(ran(3, 0, 0), p).reason,
              "exit status 3 without a failed test (no JUnit results)");
    // A very long matching line is cut for the reason.
    auto long_line = decide(ran(1, 0, 0, "No space left on device " + std::string(500, 'x')), p);
    EXPECT_EQ(long_line.log_line->size(), 200u);
}

TEST(Classify, TheHardwareSignaturesAreDeviceFailuresKeptAsTheirSignature) {
    const auto p = defaults();
    struct Case {
        const char* log;
        const char* signature;
    };
    for (const auto& c : std::vector<Case>{
             {"E1201 RAS::CBRB::ResponseTimeout on card 0\n", "RAS::CBRB::ResponseTimeout"},
             {"x\n[spyre] RAS::PCI::BusFence raised\n", "RAS::PCI::BusFence"},
             {"RAS::VFIO::DeviceOpenFail: /dev/vfio/3\n", "RAS::VFIO::DeviceOpenFail"},
             {"kernel: RAS::DMA::ChannelHang (ch 3)\n", "RAS::DMA::ChannelHang"},
         }) {
        auto v = decide(ran(1, 5, 2, c.log), p);
        EXPECT_EQ(v.conclusion, Conclusion::device_unavailable) << c.log;
        EXPECT_EQ(v.signature, c.signature) << c.log;
    }
    // Not a signature: "RAS" alone, or one level only.
    EXPECT_EQ(decide(ran(1, 5, 2, "RAS::Config loaded\n"), p).conclusion, Conclusion::regression);
    EXPECT_FALSE(decide(ran(1, 5, 2, "No space left on device\n"), p).signature);
}

TEST(Classify, ConfiguredPatternsReplaceTheDefaults) {
    auto p = compile_patterns({"HW_ERR_[0-9]+"}, {"runner lost"});
    EXPECT_EQ(decide(ran(1, 0, 0, "fatal HW_ERR_42\n"), p).conclusion,
              Conclusion::device_unavailable);
    EXPECT_EQ(decide(ran(1, 0, 0, "RAS::VFIO::DeviceOpenFail\n"), p).conclusion,
              Conclusion::infra_error);  // no longer a device fault
    EXPECT_EQ(decide(ran(1, 0, 0, "the runner lost its connection\n"), p).reason,
              "infrastructure failure in the log: the runner lost its connection");
}

TEST(Classify, TheFirstMatchingLineInLogOrderDecidesAndItsFirstPatternNamesIt) {
    const auto p = compile_patterns({"card [0-9]+ lost", "RAS::[A-Z]+::[A-Za-z]+", "^Fatal$"}, {});
    // The second pattern matches an earlier line than the first: that line decides.
    auto v = decide(ran(1, 0, 0, "ok\nRAS::PCI::BusFence\ncard 3 lost\n"), p);
    EXPECT_EQ(v.log_line, "RAS::PCI::BusFence");
    EXPECT_EQ(v.signature, "RAS::PCI::BusFence");
    // Two patterns match one line: the first of the list gives the match.
    v = decide(ran(1, 0, 0, "x\nRAS::DMA::Hang and card 7 lost\n"), p);
    EXPECT_EQ(v.signature, "card 7 lost");
    // ^ and $ are the line's ends, not the log's; a CRLF line keeps its \r, so $ misses it.
    EXPECT_EQ(decide(ran(1, 0, 0, "a\nFatal\nb"), p).log_line, "Fatal");
    EXPECT_EQ(decide(ran(1, 0, 0, "a\nFatal\r\nb\n"), p).conclusion, Conclusion::infra_error);
    EXPECT_EQ(decide(ran(1, 0, 0, "a\nnot Fatal\n"), p).conclusion, Conclusion::infra_error);
    // The last line needs no newline.
    EXPECT_EQ(decide(ran(1, 0, 0, "a\ncard 12 lost"), p).log_line, "card 12 lost");
}

TEST(Classify, NoMatchAcrossLinesAndNoLineAfterTheLastNewline) {
    const auto p = compile_patterns({"card\\s+lost", "[^x]{3}lost", "^$"}, {});
    EXPECT_EQ(decide(ran(1, 0, 0, "card\nlost\n"), p).conclusion, Conclusion::infra_error);
    EXPECT_EQ(decide(ran(1, 0, 0, "ab\nlost\n"), p).conclusion, Conclusion::infra_error);
    // What would match across the first lines does not hide the line that really matches.
    EXPECT_EQ(decide(ran(1, 0, 0, "card\nlost\ncard  lost\n"), p).log_line, "card  lost");
    EXPECT_EQ(decide(ran(1, 0, 0, "ab\nlost\nabclost\n"), p).log_line, "abclost");
    // An empty line is a line; the nothing after a final newline is not.
    EXPECT_EQ(decide(ran(1, 0, 0, "a\n\nb\n"), p).log_line, "");
    EXPECT_EQ(decide(ran(1, 0, 0, "a\nb\n"), p).conclusion, Conclusion::infra_error);
    EXPECT_EQ(decide(ran(1, 0, 0, ""), p).conclusion, Conclusion::infra_error);
}

TEST(Classify, NoPatternsFindNothing) {
    EXPECT_EQ(decide(ran(1, 0, 0, "RAS::PCI::BusFence\n"), Patterns()).conclusion,
              Conclusion::infra_error);
    EXPECT_EQ(decide(ran(1, 0, 0, "RAS::PCI::BusFence\n"), compile_patterns({}, {})).conclusion,
              Conclusion::infra_error);
}

TEST(Classify, APatternRe2CannotCompileIsABrokenInvariantNamingIt) {
    try {
        (void)compile_patterns({"ok", "(?=lookahead)"}, {});
        FAIL() << "compiled";
    } catch (const std::invalid_argument& e) {
        EXPECT_NE(std::string(e.what()).find("'(?=lookahead)'"), std::string::npos) << e.what();
    }
}

/// The classifier before RE2: each line in log order against each std::regex in list order.
std::optional<std::pair<std::string, std::string>> reference_find(
    const std::string& log, const std::vector<std::string>& patterns) {
    std::vector<std::regex> res(patterns.begin(), patterns.end());
    std::size_t start = 0;
    while (start < log.size()) {
        auto end = log.find('\n', start);
        if (end == std::string::npos) end = log.size();
        for (const auto& re : res) {
            std::cmatch m;
            if (std::regex_search(log.data() + start, log.data() + end, m, re)) {
                return std::pair{log.substr(start, std::min<std::size_t>(end - start, 200)),
                                 m.str(0).substr(0, 200)};
            }
        }
        start = end + 1;
    }
    return std::nullopt;
}

// Property: on random logs made of lines that each pattern does and does not match, the
// verdict, reason, line and signature are those std::regex line by line gave, for the
// default patterns and for patterns that anchor, use word boundaries and alternatives.
TEST(Classify, SameVerdictsAsStdRegexLineByLineOnRandomLogs) {
    const config::ClassifyConfig c;
    std::vector<std::string> device = c.device_patterns, infra = c.infra_patterns;
    device.push_back("^FATAL: card [0-9]+$");
    infra.push_back("\\bOOM\\b");
    infra.push_back("(lost|gone) (runner|node)");
    const auto p = compile_patterns(device, infra);
    const std::vector<std::string> lines = {
        "test/test_ops.py::TestCommonCPU::test_out_addmm_cpu_float32 PASSED [ 12%]",
        "E       AssertionError: Tensor-likes are not close!",
        "",
        "\r",
        "kernel: RAS::DMA::ChannelHang (ch 3)",
        "RAS::Config loaded",
        "RuntimeError: failed to open VFIO device 2",
        "RuntimeError: Failed to open the device",
        "No AIU devices found",
        "FATAL: card 12",
        "FATAL: card 12 again",
        " FATAL: card 1",
        "OSError: [Errno 28] No space left on device: '/tmp/x'",
        "curl: (6) Could not resolve host: github.com",
        "OOMKilled",
        "process OOM killed",
        "the runner lost node 4, lost runner 2",
        std::string(300, 'x') + "Device or resource busy",
        "Device or resource busy" + std::string(300, 'y'),
        "caf\xc3\xa9 \xff\xfe binary noise",
    };
    std::mt19937 rng(16);
    int device_verdicts = 0, infra_verdicts = 0;
    for (int n = 0; n < 600; ++n) {
        std::string log;
        for (auto count = rng() % 12; count > 0; --count) {
            // Mostly lines no pattern matches, as in real logs.
            log += rng() % 3 ? lines[rng() % 4] : lines[rng() % lines.size()];
            log += '\n';
        }
        if (rng() % 2 && !log.empty()) log.pop_back();
        const auto v = decide(ran(1, 0, 0, log), p);
        if (auto d = reference_find(log, device)) {
            ++device_verdicts;
            EXPECT_EQ(v.conclusion, Conclusion::device_unavailable) << log;
            EXPECT_EQ(v.reason, "device failure in the log: " + d->first) << log;
            EXPECT_EQ(v.log_line, d->first) << log;
            EXPECT_EQ(v.signature, d->second) << log;
        } else if (auto i = reference_find(log, infra)) {
            ++infra_verdicts;
            EXPECT_EQ(v.conclusion, Conclusion::infra_error) << log;
            EXPECT_EQ(v.reason, "infrastructure failure in the log: " + i->first) << log;
            EXPECT_EQ(v.log_line, i->first) << log;
        } else {
            EXPECT_EQ(v.reason, "exit status 1 without a failed test (no JUnit results)") << log;
        }
    }
    EXPECT_GT(device_verdicts, 100);
    EXPECT_GT(infra_verdicts, 50);
}

}  // namespace
}  // namespace crcrd::classify
