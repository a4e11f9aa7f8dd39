// The pure part of bisection (docs/verdicts.md): the range the marks narrow to, and the next
// commit to run, as tables of cases.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "crcrd/sched/bisect.hpp"

namespace crcrd::sched {
namespace {

/// "..?G.B": one character per commit, oldest first: . unknown, G good, B bad, S skip.
std::vector<Mark> marks(const std::string& s) {
    std::vector<Mark> m;
    for (char c : s)
        m.push_back(c == 'G'   ? Mark::good
                    : c == 'B' ? Mark::bad
                    : c == 'S' ? Mark::skip
                               : Mark::unknown);
    return m;
}

std::string step(const std::string& s) {
    auto st = next_step(marks(s));
    switch (st.kind) {
        case BisectStep::Kind::test:
            return "test " + std::to_string(st.index);
        case BisectStep::Kind::found:
            return "found " + std::to_string(st.index);
        case BisectStep::Kind::exhausted:
            return "exhausted";
    }
    return "?";
}

TEST(BisectTest, TheNextStepSplitsTheUnknownRangeOrNamesTheCulprit) {
    struct Case {
        const char* marks;
        const char* want;
    } cases[] = {
        {"B", "found 0"},  // one commit after the good SHA: it is the culprit
        {".B", "test 0"},  // two suspects: run the older
        {"GB", "found 1"},
        {"BB", "found 0"},
        {"...B", "test 1"},      // four suspects (-1 good): the middle is index 1
        {".......B", "test 3"},  // eight suspects: 3 halves them
        {"...G...B", "test 5"},  // good at 3: suspects 4..7
        {"...B...B", "test 1"},  // a bad in the middle: suspects 0..3
        {"..GB...B", "found 3"},
        {"G.B....B", "test 1"},
        {"GGB", "found 2"},
        {"...S...B", "test 2"},  // the middle skipped: its nearest unknown neighbour, the older
        {"GSSB", "exhausted"},   // nothing left that could split the range
        {"GSB", "exhausted"},
        {"G.SB", "test 1"},
        {"..B.G..B", "test 0"},  // a good after the oldest bad does not move the range
        {"S", "found 0"},        // the bad commit's own mark does not matter
    };
    for (const auto& c : cases) EXPECT_EQ(step(c.marks), c.want) << c.marks;
}

TEST(BisectTest, NarrowKeepsTheNewestGoodBelowTheOldestBad) {
    struct Case {
        const char* marks;
        std::ptrdiff_t good;
        std::size_t bad;
    } cases[] = {
        {"B", -1, 0},     {"....B", -1, 4}, {"G...B", 0, 4},
        {".G.B.B", 1, 3}, {"B.G.B", -1, 0}, {"SSSB", -1, 3},
    };
    for (const auto& c : cases) {
        auto r = narrow(marks(c.marks));
        EXPECT_EQ(r.good, c.good) << c.marks;
        EXPECT_EQ(r.bad, c.bad) << c.marks;
    }
}

TEST(BisectTest, ARunsClassMarksItsCommit) {
    EXPECT_EQ(mark_of(Conclusion::regression), Mark::bad);
    EXPECT_EQ(mark_of(Conclusion::passed), Mark::good);
    EXPECT_EQ(mark_of(Conclusion::flaky), Mark::good);
    EXPECT_EQ(mark_of(Conclusion::infra_error), Mark::skip);
    EXPECT_EQ(mark_of(Conclusion::device_unavailable), Mark::skip);
    EXPECT_EQ(mark_of(Conclusion::timeout), Mark::skip);
    EXPECT_EQ(mark_of(Conclusion::cancelled), Mark::skip);
}

/// Every culprit position of ranges up to 64 commits is found in at most ceil(log2 N) runs.
TEST(BisectTest, EveryCulpritIsFoundWithinLog2Runs) {
    for (std::size_t n = 1; n <= 64; ++n) {
        const auto bound = static_cast<int>(std::ceil(std::log2(static_cast<double>(n))));
        for (std::size_t culprit = 0; culprit < n; ++culprit) {
            std::vector<Mark> m(n, Mark::unknown);
            m.back() = Mark::bad;
            int runs = 0;
            for (;;) {
                auto s = next_step(m);
                if (s.kind == BisectStep::Kind::found) {
                    EXPECT_EQ(s.index, culprit) << "n=" << n;
                    break;
                }
                ASSERT_EQ(s.kind, BisectStep::Kind::test);
                ASSERT_EQ(m[s.index], Mark::unknown);
                m[s.index] = s.index < culprit ? Mark::good : Mark::bad;
                ++runs;
            }
            EXPECT_LE(runs, bound) << "n=" << n << " culprit=" << culprit;
        }
    }
}

}  // namespace
}  // namespace crcrd::sched
