#include <gtest/gtest.h>

#include "crcrd/core/time.hpp"
#include "crcrd/select/cron.hpp"

namespace crcrd::select {
namespace {

std::chrono::system_clock::time_point at(int y, int mo, int d, int h, int mi) {
    std::tm tm{};
    tm.tm_year = y - 1900;
    tm.tm_mon = mo - 1;
    tm.tm_mday = d;
    tm.tm_hour = h;
    tm.tm_min = mi;
    return std::chrono::system_clock::from_time_t(timegm(&tm));
}

TEST(Cron, NextFiring) {
    struct Case {
        const char* expr;
        std::chrono::system_clock::time_point after, expect;
    };
    const Case cases[] = {
        {"0 3 * * *", at(2026, 11, 29, 17, 40), at(2026, 11, 30, 3, 0)},
        {"0 3 * * *", at(2026, 11, 30, 3, 0), at(2026, 12, 1, 3, 0)},  // strictly after
        {"*/15 * * * *", at(2026, 11, 29, 17, 40), at(2026, 11, 29, 17, 45)},
        {"30 2 1 * *", at(2026, 12, 15, 0, 0), at(2027, 1, 1, 2, 30)},
        {"0 0 * * 1", at(2026, 11, 29, 12, 0), at(2026, 11, 30, 0, 0)},  // 2026-11-30 is a Monday
        {"0 0 * * 7", at(2026, 11, 27, 12, 0), at(2026, 11, 29, 0, 0)},  // 7 is Sunday
        {"0 0 13 * 5", at(2026, 11, 1, 0, 0), at(2026, 11, 6, 0, 0)},    // Friday or the 13th
        {"0 12 29 2 *", at(2026, 3, 1, 0, 0), at(2028, 2, 29, 12, 0)},
        {"5-10/5 1,2 * * *", at(2026, 1, 1, 1, 7), at(2026, 1, 1, 1, 10)},
    };
    for (const auto& c : cases) {
        auto cron = Cron::parse(c.expr);
        ASSERT_TRUE(cron) << c.expr << ": " << cron.error().message;
        EXPECT_EQ(rfc3339(cron->next_after(c.after)), rfc3339(c.expect)) << c.expr;
    }
}

TEST(Cron, Errors) {
    for (const char* bad :
         {"", "0 3 * *", "60 * * * *", "* 24 * * *", "* * 0 * *", "* * * 13 *", "* * * * 8",
          "*/0 * * * *", "5-1 * * * *", "a * * * *", "0 3 * * * *"}) {
        EXPECT_FALSE(Cron::parse(bad)) << bad;
    }
    auto e = Cron::parse("0 25 * * *");
    ASSERT_FALSE(e);
    EXPECT_NE(e.error().message.find("hour"), std::string::npos);
}

}  // namespace
}  // namespace crcrd::select
