#include <gtest/gtest.h>

#include "crcrd/http/reject_log.hpp"

namespace crcrd::http {
namespace {

using namespace std::chrono_literals;

TEST(RejectLog, TheFirstRejectionOfAMinuteIsLoggedTheRestSummarised) {
    RejectLog log(60s);
    const auto t0 = RejectLog::Clock::time_point{} + 1000s;
    EXPECT_TRUE(log.admit("10.0.0.7", 401, t0));
    for (int i = 0; i < 1530; ++i) EXPECT_FALSE(log.admit("10.0.0.7", 401, t0 + 1s));
    EXPECT_FALSE(log.admit("10.0.0.7", 413, t0 + 2s));
    EXPECT_FALSE(log.admit("10.0.0.7", 413, t0 + 3s));
    // Another address has its own window.
    EXPECT_TRUE(log.admit("10.0.0.8", 403, t0 + 5s));
    EXPECT_TRUE(log.flush(t0 + 59s).empty());  // the minute is not over
    auto lines = log.flush(t0 + 61s);
    ASSERT_EQ(lines.size(), 1u);  // 10.0.0.8 had nothing beyond its first line
    EXPECT_EQ(lines[0],
              "rejected requests from 10.0.0.7: 1532 more in the last 60 s not logged one by one "
              "(401 x1530, 413 x2)");
    // After the summary, the next rejection is logged in full again.
    EXPECT_TRUE(log.admit("10.0.0.7", 401, t0 + 62s));
}

TEST(RejectLog, AQuietMinuteEndsItsWindowWithoutASummary) {
    RejectLog log(60s);
    const auto t0 = RejectLog::Clock::time_point{} + 1000s;
    EXPECT_TRUE(log.admit("a", 401, t0));
    EXPECT_TRUE(log.admit("a", 401, t0 + 61s));  // no flush in between: a new window all the same
    EXPECT_FALSE(log.admit("a", 401, t0 + 62s));
}

TEST(RejectLog, ManyAddressesShareOneWindowBeyondTheCap) {
    RejectLog log(60s, 2);
    const auto t0 = RejectLog::Clock::time_point{} + 1000s;
    EXPECT_TRUE(log.admit("a", 401, t0));
    EXPECT_TRUE(log.admit("b", 401, t0));
    EXPECT_TRUE(log.admit("c", 401, t0));   // the first of "(other addresses)"
    EXPECT_FALSE(log.admit("d", 401, t0));  // counted there
    auto lines = log.flush(t0 + 60s);
    ASSERT_EQ(lines.size(), 1u);
    EXPECT_NE(lines[0].find("(other addresses): 1 more"), std::string::npos) << lines[0];
}

TEST(RejectLog, AddressOfAPeer) {
    EXPECT_EQ(address_of("127.0.0.1:5555"), "127.0.0.1");
    EXPECT_EQ(address_of("[::1]:5555"), "::1");
    EXPECT_EQ(address_of("::1:5555"), "::1");
    EXPECT_EQ(address_of(""), "");
}

}  // namespace
}  // namespace crcrd::http
