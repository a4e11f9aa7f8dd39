// The class of one attempt from its evidence (CONTRACT.md §5), with the default patterns.
#include <gtest/gtest.h>

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
        {"a device signature, even with failed tests", ran(1, 5, 2, "x\nRAS::VFIO::DeviceOpenFail: /dev/vfio/3\n"), Conclusion::device_unavailable},
        {"another device fault", ran(1, 0, 0, "RuntimeError: Failed to open device 0\n"), Conclusion::device_unavailable},
        {"malformed JUnit", bad_junit, Conclusion::infra_error},
        {"failed tests", ran(1, 10, 2, "E   AssertionError\n"), Conclusion::regression},
        {"failed tests and an infra line", ran(1, 10, 2, "No space left on device\n"), Conclusion::regression},
        {"an infra line in a failed attempt", ran(2, 0, 0, "ERROR: Could not install packages due to an OSError\n"), Conclusion::infra_error},
        {"an infra line in a passing attempt", ran(0, 4, 0, "test_offline: Could not resolve host (expected)\n"), Conclusion::passed},
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
    auto device = decide(ran(1, 0, 0, "ok\nRAS::VFIO::DeviceOpenFail: cannot open /dev/vfio/0\nmore\n"), p);
    EXPECT_EQ(device.reason, "device failure in the log: RAS::VFIO::DeviceOpenFail: cannot open /dev/vfio/0");
    EXPECT_EQ(device.log_line, "RAS::VFIO::DeviceOpenFail: cannot open /dev/vfio/0");
    EXPECT_EQ(decide(ran(1, 10, 3), p).reason, "3 of 10 tests failed");
    EXPECT_EQ(decide(ran(3, 0, 0), p).reason, "exit status 3 without a failed test (no JUnit results)");
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
    EXPECT_EQ(decide(ran(1, 0, 0, "fatal HW_ERR_42\n"), p).conclusion, Conclusion::device_unavailable);
    EXPECT_EQ(decide(ran(1, 0, 0, "RAS::VFIO::DeviceOpenFail\n"), p).conclusion, Conclusion::infra_error);  // no longer a device fault
    EXPECT_EQ(decide(ran(1, 0, 0, "the runner lost its connection\n"), p).reason,
              "infrastructure failure in the log: the runner lost its connection");
}

}  // namespace
}  // namespace crcrd::classify
