#include <gtest/gtest.h>

#include "crcrd/core/time.hpp"
#include "crcrd/sched/full_matrix.hpp"
#include "crcrd/store/schema.hpp"
#include "crcrd/store/sqlite.hpp"
#include "support/temp_dir.hpp"

namespace crcrd::sched {
namespace {

using std::chrono::system_clock;

system_clock::time_point at(int mo, int d, int h, int mi, int s = 0) {
    std::tm tm{};
    tm.tm_year = 2026 - 1900;
    tm.tm_mon = mo - 1;
    tm.tm_mday = d;
    tm.tm_hour = h;
    tm.tm_min = mi;
    tm.tm_sec = s;
    return system_clock::from_time_t(timegm(&tm));
}

select::Rules rules(const std::string& schedule) {
    std::vector<std::string> errors;
    auto r = select::parse_rules(
        "tiers: [{name: import, always: true, tests: [t]}]\nfull_matrix: {schedule: \"" + schedule +
            "\", ref: main}\n",
        "sel.yaml", &errors);
    EXPECT_TRUE(r);
    return *r;
}

class FullMatrixTest : public ::testing::Test {
  protected:
    void SetUp() override {
        auto db = store::Db::open(dir.path() / "a.db");
        ASSERT_TRUE(db);
        ASSERT_TRUE(store::migrate(**db));
        writer = std::make_unique<store::Writer>(std::move(*db));
        trigger = std::make_unique<FullMatrixTrigger>(
            *writer, dir.path() / "a.db",
            [this](const std::string& ref) -> Result<std::string> {
                ++resolved;
                if (ref != "main" || broken) return make_error(Errc::git, "no such ref");
                return std::string("c4295bd74fb0f4fda03689c3df3f2803b658fd85");
            },
            [this] { return now; });
    }
    std::int64_t runs() {
        auto db = store::Db::open(dir.path() / "a.db", store::OpenOptions{true, 5000});
        auto st = (*db)->prepare("SELECT count(*) FROM runs WHERE event='schedule'");
        st.step();
        return st.int64(0);
    }

    TempDir dir;
    std::unique_ptr<store::Writer> writer;
    std::unique_ptr<FullMatrixTrigger> trigger;
    system_clock::time_point now;
    int resolved = 0;
    bool broken = false;
};

TEST_F(FullMatrixTest, FiresAtItsSlotsAndOnceForEverySlotMissedWhileDown) {
    auto r = rules("0 3 * * *");
    now = at(11, 29, 17, 40);
    EXPECT_FALSE(trigger->tick(r));  // the first look only records the next slot
    now = at(11, 30, 2, 59);
    EXPECT_FALSE(trigger->tick(r));
    now = at(11, 30, 3, 0, 4);
    auto first = trigger->tick(r);
    ASSERT_TRUE(first);
    EXPECT_FALSE(trigger->tick(r));  // not twice for one slot
    EXPECT_EQ(runs(), 1);

    // Down from Nov 30 04:00 to Dec 4 10:00: four slots missed, one run.
    now = at(12, 4, 10, 0);
    EXPECT_TRUE(trigger->tick(r));
    EXPECT_FALSE(trigger->tick(r));
    now = at(12, 5, 2, 0);
    EXPECT_FALSE(trigger->tick(r));
    EXPECT_EQ(runs(), 2);

    auto db = store::Db::open(dir.path() / "a.db", store::OpenOptions{true, 5000});
    auto st = (*db)->prepare("SELECT event, sha, ref, state, delivery_id FROM runs WHERE id = ?");
    st.bind(1, *first);
    ASSERT_TRUE(st.step());
    EXPECT_EQ(st.text(0), "schedule");
    EXPECT_EQ(st.text(1), "c4295bd74fb0f4fda03689c3df3f2803b658fd85");
    EXPECT_EQ(st.text(2), "refs/heads/main");
    EXPECT_EQ(st.text(3), "queued");
    EXPECT_EQ(st.text(4), "schedule:" + rfc3339(at(11, 30, 3, 0)));
}

TEST_F(FullMatrixTest, AChangedScheduleStartsOverAndAnUnresolvableRefSkipsTheSlot) {
    now = at(11, 29, 17, 40);
    EXPECT_FALSE(trigger->tick(rules("0 3 * * *")));
    now = at(11, 30, 5, 0);
    EXPECT_FALSE(
        trigger->tick(rules("0 6 * * *")));  // new schedule: next is 06:00, no run for 03:00
    EXPECT_EQ(runs(), 0);
    broken = true;
    now = at(11, 30, 6, 1);
    EXPECT_FALSE(trigger->tick(rules("0 6 * * *")));
    EXPECT_EQ(resolved, 1);
    broken = false;
    EXPECT_FALSE(trigger->tick(rules("0 6 * * *")));  // the slot was used up
    now = at(12, 1, 6, 0);
    EXPECT_TRUE(trigger->tick(rules("0 6 * * *")));
    EXPECT_EQ(runs(), 1);
}

TEST_F(FullMatrixTest, NoScheduleNoRun) {
    std::vector<std::string> errors;
    auto r = select::parse_rules("tiers: [{name: import, always: true, tests: [t]}]\n", "sel.yaml",
                                 &errors);
    now = at(11, 30, 3, 0);
    EXPECT_FALSE(trigger->tick(*r));
    EXPECT_EQ(resolved, 0);
}

}  // namespace
}  // namespace crcrd::sched
