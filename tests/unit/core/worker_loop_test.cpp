// The background threads' loop: passes on notify and on their own time, a pass that throws does
// not end the thread, and the stop ends waits and (when asked) runs a last pass.
#include "crcrd/core/worker_loop.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <stdexcept>

namespace crcrd::core {
namespace {

using namespace std::chrono_literals;

/// Counts passes; waits for the n-th without sleeping.
struct Passes {
    std::mutex mu;
    std::condition_variable cv;
    int n = 0;
    void one() {
        std::lock_guard lk(mu);
        ++n;
        cv.notify_all();
    }
    bool reach(int k) {
        std::unique_lock lk(mu);
        return cv.wait_for(lk, 30s, [&] { return n >= k; });
    }
    int count() {
        std::lock_guard lk(mu);
        return n;
    }
};

TEST(WorkerLoop, APassComesAtStartAndAtEachNotifyWhenItAsksToWaitForOne) {
    Passes p;
    WorkerLoop loop("test", [&]() -> std::optional<WorkerLoop::Duration> {
        p.one();
        return std::nullopt;  // until notified
    });
    loop.start();
    ASSERT_TRUE(p.reach(1));
    loop.notify();
    ASSERT_TRUE(p.reach(2));
    loop.notify();
    ASSERT_TRUE(p.reach(3));
    loop.stop();
    EXPECT_EQ(p.count(), 3);  // nothing after the stop
}

TEST(WorkerLoop, APassComesAgainWhenItsWaitRunsOut) {
    Passes p;
    WorkerLoop loop("test", [&]() -> std::optional<WorkerLoop::Duration> {
        p.one();
        return 1ms;
    });
    loop.start();
    EXPECT_TRUE(p.reach(5));  // never notified
}

TEST(WorkerLoop, APassThatThrowsIsLoggedAndTheThreadGoesOn) {
    Passes p;
    WorkerLoop loop(
        "test",
        [&]() -> std::optional<WorkerLoop::Duration> {
            p.one();
            if (p.count() == 1) throw std::runtime_error("the database is locked");
            if (p.count() == 2) throw 42;  // not even a std::exception
            return std::nullopt;
        },
        WorkerLoop::Options{1ms, false});
    loop.start();
    EXPECT_TRUE(p.reach(3));  // two passes threw; the third came after `after_error`
}

TEST(WorkerLoop, TheStopEndsASleepInsideAPassAtOnce) {
    std::promise<void> sleeping;
    std::promise<bool> woke;
    WorkerLoop loop("test", [&]() -> std::optional<WorkerLoop::Duration> {
        sleeping.set_value();
        woke.set_value(loop.sleep_for(std::chrono::hours(1)));
        return std::nullopt;
    });
    loop.start();
    sleeping.get_future().wait();
    EXPECT_FALSE(loop.stopping());
    loop.stop();  // would take an hour if the sleep did not end
    EXPECT_TRUE(loop.stopping());
    EXPECT_FALSE(woke.get_future().get());
    EXPECT_FALSE(loop.sleep_for(1h));  // after the stop: at once
}

TEST(WorkerLoop, ALastPassRunsAtTheStopWhenAsked) {
    for (bool last : {false, true}) {
        SCOPED_TRACE(last ? "last pass" : "no last pass");
        Passes p;
        WorkerLoop loop(
            "test",
            [&]() -> std::optional<WorkerLoop::Duration> {
                p.one();
                return std::nullopt;
            },
            WorkerLoop::Options{1s, last});
        loop.start();
        ASSERT_TRUE(p.reach(1));
        loop.stop();
        EXPECT_EQ(p.count(), last ? 2 : 1);
    }
}

TEST(WorkerLoop, AFirstPassCanWaitAndStopIsSafeTwiceAndBeforeStart) {
    Passes p;
    WorkerLoop never("test", [&]() -> std::optional<WorkerLoop::Duration> {
        p.one();
        return std::nullopt;
    });
    never.stop();
    never.stop();
    WorkerLoop later("test", [&]() -> std::optional<WorkerLoop::Duration> {
        p.one();
        return std::nullopt;
    });
    later.start(1h);
    later.notify();  // comes before the hour
    ASSERT_TRUE(p.reach(1));
    later.stop();
    later.stop();
    EXPECT_EQ(p.count(), 1);
}

}  // namespace
}  // namespace crcrd::core
