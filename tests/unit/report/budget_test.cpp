// The request budget and the GitHub lane's priorities (report/budget.hpp): what a lane may send,
// and in which order, as tables.
#include "crcrd/report/budget.hpp"

#include <gtest/gtest.h>

namespace crcrd::report {
namespace {

using std::chrono::hours;
using std::chrono::milliseconds;
using std::chrono::minutes;
using std::chrono::seconds;

const SystemTime t0 = SystemTime(std::chrono::hours(24 * 365 * 56));  // some day in 2026

std::vector<SystemTime> at_seconds(std::initializer_list<int> s) {
    std::vector<SystemTime> out;
    for (int x : s) out.push_back(t0 + seconds(x));
    return out;
}

TEST(RequestBudget, NextFreeIsWhenEveryWindowHasRoomAgain) {
    const std::vector<BudgetWindow> small = {{3, minutes(1)}, {5, hours(1)}};
    struct Case {
        const char* name;
        std::vector<BudgetWindow> windows;
        std::vector<SystemTime> past;
        SystemTime now;
        SystemTime want;
    };
    const Case cases[] = {
        {"no window: never waits", {}, at_seconds({0, 0, 0, 0}), t0, t0},
        {"room in both windows", small, at_seconds({0, 1}), t0 + seconds(2), t0 + seconds(2)},
        {"minute full: the oldest of the last three leaves at +60 s", small, at_seconds({0, 1, 2}),
         t0 + seconds(3), t0 + seconds(60)},
        {"a request exactly one window old no longer counts", small, at_seconds({0, 1, 2}),
         t0 + seconds(60), t0 + seconds(60)},
        {"hour full although the minute has room: the fifth newest leaves at +1 h", small,
         at_seconds({0, 100, 200, 300, 400}), t0 + seconds(500), t0 + seconds(3600)},
        {"both full: the later of the two", small, at_seconds({0, 100, 200, 1000, 1001, 1002}),
         t0 + seconds(1003), t0 + seconds(3600 + 100)},
        {"order of the past does not matter", small, at_seconds({2, 0, 1}), t0 + seconds(3),
         t0 + seconds(60)},
    };
    for (const auto& c : cases) {
        RequestBudget b(c.windows, c.past);
        EXPECT_EQ(b.next_free(c.now), c.want) << c.name;
    }
}

TEST(RequestBudget, SpendingFillsTheWindowsAndLeftSaysWhatRemains) {
    RequestBudget b({{2, minutes(1)}, {3, hours(1)}}, {});
    b.spend(t0);
    b.spend(t0 + seconds(1));
    EXPECT_EQ(b.next_free(t0 + seconds(2)), t0 + seconds(60));
    auto left = b.left(t0 + seconds(2));
    ASSERT_EQ(left.size(), 2u);
    EXPECT_EQ(left[0].left, 0);
    EXPECT_EQ(left[0].used, 2);
    EXPECT_EQ(left[1].left, 1);
    b.spend(t0 + seconds(60));
    // The hour is full now: its oldest request leaves at +1 h.
    EXPECT_EQ(b.next_free(t0 + seconds(61)), t0 + hours(1));
    EXPECT_EQ(b.left(t0 + hours(2))[1].left, 3);
}

TEST(RequestBudget, ARequestRecordedAfterTheClockSteppedBackStillCounts) {
    RequestBudget b({{2, minutes(1)}}, {});
    b.spend(t0 + seconds(10));
    b.spend(t0 + seconds(5));  // the wall clock went back five seconds
    EXPECT_EQ(b.left(t0 + seconds(11))[0].left, 0);
    EXPECT_EQ(b.next_free(t0 + seconds(11)), t0 + seconds(65));
}

TEST(RequestBudget, ReservesKeepTheLastRequestsForVerdicts) {
    struct Case {
        int used;
        bool progress, first_state, final_state;
    };
    // 20 requests a minute: progress updates stop with 5 or fewer left, a context's first state
    // with 2 or fewer; a final state takes the last one.
    const Case cases[] = {
        {0, true, true, true},   {14, true, true, true},   {15, false, true, true},
        {17, false, true, true}, {18, false, false, true}, {19, false, false, true},
    };
    for (const auto& c : cases) {
        RequestBudget b({{20, minutes(1)}, {1000, hours(1)}}, {});
        for (int i = 0; i < c.used; ++i) b.spend(t0 + milliseconds(i));
        const auto now = t0 + seconds(1);
        EXPECT_EQ(may_take(StatusPriority::progress, b, now), c.progress) << c.used << " used";
        EXPECT_EQ(may_take(StatusPriority::first_state, b, now), c.first_state) << c.used;
        EXPECT_EQ(may_take(StatusPriority::tier_final, b, now), c.final_state) << c.used;
        EXPECT_EQ(may_take(StatusPriority::aggregate_final, b, now), c.final_state) << c.used;
    }
    // A reserve rounds up: of 6 requests a tenth keeps 1.
    RequestBudget six({{6, hours(1)}}, at_seconds({0, 1, 2, 3, 4}));
    EXPECT_FALSE(may_take(StatusPriority::first_state, six, t0 + seconds(5)));
    EXPECT_TRUE(may_take(StatusPriority::aggregate_final, six, t0 + seconds(5)));
    // No budget: nothing is held.
    EXPECT_TRUE(may_take(StatusPriority::progress, RequestBudget({}, {}), t0));
}

TEST(StatusPriority, FinalStatesFirstThenAContextsFirstStateThenProgress) {
    struct Case {
        bool aggregate, final, shown;
        StatusPriority want;
    };
    const Case cases[] = {
        {true, true, false, StatusPriority::aggregate_final},
        {true, true, true, StatusPriority::aggregate_final},
        {false, true, false, StatusPriority::tier_final},
        {false, true, true, StatusPriority::tier_final},
        {true, false, false, StatusPriority::first_state},
        {false, false, false, StatusPriority::first_state},
        {true, false, true, StatusPriority::progress},
        {false, false, true, StatusPriority::progress},
    };
    for (const auto& c : cases) {
        EXPECT_EQ(status_priority(c.aggregate, c.final, c.shown), c.want)
            << c.aggregate << c.final << c.shown;
    }
}

}  // namespace
}  // namespace crcrd::report
