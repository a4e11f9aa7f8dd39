// The request budget and the GitHub lane's priorities (report/budget.hpp): what a lane may send,
// and in which order, as tables.
#include "crcrd/report/budget.hpp"

#include <gtest/gtest.h>

#include <deque>

namespace crcrd::report {
namespace {

using std::chrono::hours;
using std::chrono::milliseconds;
using std::chrono::minutes;
using std::chrono::seconds;

const SystemTime t0 = SystemTime(std::chrono::hours(24 * 365 * 56));  // some day in 2026

std::vector<SpentRequest> at_seconds(std::initializer_list<int> s) {
    std::vector<SpentRequest> out;
    for (int x : s) out.push_back({t0 + seconds(x)});
    return out;
}

TEST(RequestBudget, NextFreeIsWhenEveryWindowHasRoomAgain) {
    const std::vector<BudgetWindow> small = {{3, minutes(1)}, {5, hours(1)}};
    struct Case {
        const char* name;
        std::vector<BudgetWindow> windows;
        std::vector<SpentRequest> past;
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

TEST(RequestBudget, EachPriorityAndThoseBelowItKeepToTheirShareOfEveryWindow) {
    struct Case {
        const char* name;
        int verdicts, tier_finals, first_states, progress;  // requests made, by priority
        bool want_progress, want_first_state, want_tier_final;
    };
    // 20 requests a minute: tier finals and below may use 12, first states and progress 7,
    // progress alone 3. A verdict is never held back by a share.
    const Case cases[] = {
        {"nothing used", 0, 0, 0, 0, true, true, true},
        {"progress used its 3", 0, 0, 0, 3, false, true, true},
        {"progress 2 and first states 5: the first states' 7 are used, so progress waits too", 0, 0,
         5, 2, false, false, true},
        {"tier finals do not count against the first states' share", 0, 10, 1, 0, true, true, true},
        {"tier finals used the 12: the lower ones, inside that share, wait too", 0, 12, 0, 0, false,
         false, false},
        {"first states count against the tier finals' share", 0, 6, 6, 0, false, false, false},
        {"the tier finals' share is used: first states and progress wait too", 0, 11, 0, 1, false,
         false, false},
        {"verdicts count against no one's share", 8, 11, 0, 0, true, true, true},
    };
    for (const auto& c : cases) {
        std::vector<SpentRequest> past;
        int ms = 0;
        auto add = [&](int n, StatusPriority p) {
            for (int i = 0; i < n; ++i)
                past.push_back({t0 + milliseconds(ms++), static_cast<std::int64_t>(p)});
        };
        add(c.verdicts, StatusPriority::aggregate_final);
        add(c.tier_finals, StatusPriority::tier_final);
        add(c.first_states, StatusPriority::first_state);
        add(c.progress, StatusPriority::progress);
        RequestBudget b({{20, minutes(1)}, {1000, hours(1)}}, past);
        const auto now = t0 + seconds(1);
        EXPECT_EQ(may_take(StatusPriority::progress, b, now), c.want_progress) << c.name;
        EXPECT_EQ(may_take(StatusPriority::first_state, b, now), c.want_first_state) << c.name;
        EXPECT_EQ(may_take(StatusPriority::tier_final, b, now), c.want_tier_final) << c.name;
        EXPECT_TRUE(may_take(StatusPriority::aggregate_final, b, now)) << c.name;
        // A minute later the minute window is empty again; the hour has room.
        EXPECT_TRUE(may_take(StatusPriority::tier_final, b, now + minutes(1))) << c.name;
    }
    // Shares round down: of 6 an hour, tier finals and below may use 3, progress none.
    RequestBudget six({{6, hours(1)}}, {{t0, 1}, {t0, 1}});
    EXPECT_TRUE(may_take(StatusPriority::tier_final, six, t0 + seconds(1)));
    EXPECT_FALSE(may_take(StatusPriority::progress, six, t0 + seconds(1)));
    six.spend(t0 + seconds(1), static_cast<std::int64_t>(StatusPriority::tier_final));
    EXPECT_FALSE(may_take(StatusPriority::tier_final, six, t0 + seconds(2)));
    // No budget: nothing is held.
    EXPECT_TRUE(may_take(StatusPriority::progress, RequestBudget({}, {}), t0));
}

// The property the shares exist for, over three busy hours at GitHub's limits: a run's verdict
// every 20 s (180 an hour) while tier finals, first states and progress updates always wait.
// The lane sends at most one request a second, highest priority first, each only when the
// budget has room and may_take allows it. Every verdict goes out within a second of its run's
// end; the rest use what the verdicts leave.
TEST(RequestBudget, AVerdictNeverWaitsForTheBudgetWhenLowerPrioritiesAlwaysWait) {
    RequestBudget b({{80, minutes(1)}, {500, hours(1)}}, {});
    std::deque<SystemTime> verdicts;  // waiting since
    std::int64_t lower_sent = 0;
    std::chrono::seconds worst{0};
    for (int s = 0; s < 3 * 3600; ++s) {
        const SystemTime now = t0 + seconds(s);
        if (s % 20 == 0) verdicts.push_back(now);
        if (b.next_free(now) > now) continue;
        if (!verdicts.empty()) {
            worst = std::max(worst, std::chrono::duration_cast<seconds>(now - verdicts.front()));
            verdicts.pop_front();
            b.spend(now, static_cast<std::int64_t>(StatusPriority::aggregate_final));
            continue;
        }
        for (auto p :
             {StatusPriority::tier_final, StatusPriority::first_state, StatusPriority::progress}) {
            if (!may_take(p, b, now)) continue;
            b.spend(now, static_cast<std::int64_t>(p));
            ++lower_sent;
            break;
        }
    }
    EXPECT_EQ(worst, seconds(0));
    EXPECT_TRUE(verdicts.empty());
    // The lower priorities got their 60 %: 300 an hour.
    EXPECT_EQ(lower_sent, 3 * 300);
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
