// What crcrd does next with a Slurm job it follows: slurm::next() on tables of observations,
// with made-up times (no cluster, no sleeps).
#include "crcrd/exec/slurm/watch.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace crcrd::exec::slurm {
namespace {

using namespace std::chrono_literals;

const SteadyTime t0{};

JobInfo job(std::string state, std::string reason = "None") {
    return JobInfo{"12", std::move(state), std::move(reason), "node1", "0:0", "crcrd-7"};
}

Observation before(SteadyTime now, bool cancel = false, bool stopping = false) {
    return Observation{now, cancel, stopping, false, std::nullopt, false};
}

Observation looked(SteadyTime now, std::optional<JobInfo> info, bool unreachable = false,
                   bool cancel = false, bool stopping = false) {
    return Observation{now, cancel, stopping, true, std::move(info), unreachable};
}

WatchPolicy policy(bool cancel_pending_on_stop = false) {
    return WatchPolicy{cancel_pending_on_stop, 60s, 3, 2};
}

WatchState following(std::optional<JobInfo> last = std::nullopt) {
    WatchState s;
    s.id = "12";
    s.last = std::move(last);
    s.pending_since = t0;
    return s;
}

struct Row {
    const char* what;
    WatchState state;
    Observation seen;
    bool cancel_pending_on_stop;
    WatchStep step;
    bool cancel_sent_after;
};

TEST(SlurmWatch, EachObservationLeadsToOneAction) {
    WatchState cancelled = following(job("RUNNING"));
    cancelled.cancel_sent = true;
    const std::vector<Row> rows = {
        {"nothing asked: look", following(), before(t0), false, WatchStep::look, false},
        {"cancel asked: scancel first", following(), before(t0, true), false, WatchStep::cancel,
         true},
        {"cancel already sent: look", cancelled, before(t0, true), false, WatchStep::look, true},
        {"stop, running: detach", following(job("RUNNING")), before(t0, false, true), true,
         WatchStep::detach, false},
        {"stop, pending, kept: detach", following(job("PENDING", "Priority")),
         before(t0, false, true), false, WatchStep::detach, false},
        {"stop, pending, cancel_pending_on_stop: scancel", following(job("PENDING", "Priority")),
         before(t0, false, true), true, WatchStep::cancel, true},
        {"stop, not looked yet, cancel_pending_on_stop: detach", following(),
         before(t0, false, true), true, WatchStep::detach, false},
        {"stop after a cancel: look (for its end)", cancelled, before(t0, false, true), true,
         WatchStep::look, true},
        {"running: wait", following(), looked(t0, job("RUNNING")), false, WatchStep::wait, false},
        {"completing: wait", following(), looked(t0, job("COMPLETING")), false, WatchStep::wait,
         false},
        {"pending on priority, long: wait", following(),
         looked(t0 + 1h, job("PENDING", "Priority")), false, WatchStep::wait, false},
        {"pending on resources within device_wait: wait", following(),
         looked(t0 + 60s, job("PENDING", "Resources")), false, WatchStep::wait, false},
        {"pending on resources past device_wait", following(),
         looked(t0 + 61s, job("PENDING", "Resources")), false, WatchStep::device_unavailable,
         false},
        {"pending on a down node past device_wait", following(),
         looked(t0 + 61s, job("PENDING", "NodeDown")), false, WatchStep::device_unavailable, false},
        {"pending on resources past device_wait, cancel sent: wait", cancelled,
         looked(t0 + 61s, job("PENDING", "Resources")), false, WatchStep::wait, true},
        {"completed", following(), looked(t0, job("COMPLETED")), false, WatchStep::ended, false},
        {"failed", following(), looked(t0, job("FAILED")), false, WatchStep::ended, false},
        {"timeout", following(), looked(t0, job("TIMEOUT")), false, WatchStep::ended, false},
        {"node failure", following(), looked(t0, job("NODE_FAIL")), false, WatchStep::ended, false},
        {"cancelled", cancelled, looked(t0, job("CANCELLED")), false, WatchStep::ended, true},
        {"preempted: submitted again", following(), looked(t0, job("PREEMPTED")), false,
         WatchStep::resubmit, false},
        {"preempted after a cancel: ended", cancelled, looked(t0, job("PREEMPTED")), false,
         WatchStep::ended, true},
        {"not found once: wait", following(), looked(t0, std::nullopt), false, WatchStep::wait,
         false},
        {"controller silent: wait", following(), looked(t0, std::nullopt, true), false,
         WatchStep::wait, false},
    };
    for (const auto& r : rows) {
        SCOPED_TRACE(r.what);
        WatchState s = r.state;
        const auto a = next(s, r.seen, policy(r.cancel_pending_on_stop));
        EXPECT_EQ(a.step, r.step);
        EXPECT_EQ(s.cancel_sent, r.cancel_sent_after);
    }
}

TEST(SlurmWatch, AJobFoundNowhereForGoneAfterLooksInARowIsLost) {
    WatchState s = following();
    const auto p = policy();
    EXPECT_EQ(next(s, looked(t0, std::nullopt), p).step, WatchStep::wait);
    EXPECT_EQ(next(s, looked(t0, std::nullopt), p).step, WatchStep::wait);
    // A look that finds it starts the count again.
    EXPECT_EQ(next(s, looked(t0, job("RUNNING")), p).step, WatchStep::wait);
    EXPECT_EQ(next(s, looked(t0, std::nullopt), p).step, WatchStep::wait);
    // A silent controller does not count: it says nothing of the job.
    for (int i = 0; i < 5; ++i)
        EXPECT_EQ(next(s, looked(t0, std::nullopt, true), p).step, WatchStep::wait);
    EXPECT_EQ(next(s, looked(t0, std::nullopt), p).step, WatchStep::wait);
    const auto a = next(s, looked(t0, std::nullopt), p);
    EXPECT_EQ(a.step, WatchStep::give_up);
    EXPECT_FALSE(a.cancelled);
    EXPECT_EQ(a.reason,
              "Slurm no longer knows job 12 (neither the controller nor the completion record)");
}

TEST(SlurmWatch, AStopDoesNotWaitForeverForASilentControllerToConfirmACancel) {
    WatchState s = following(job("PENDING", "Priority"));
    const auto p = policy(true);
    ASSERT_EQ(next(s, before(t0, false, true), p).step, WatchStep::cancel);
    ASSERT_EQ(next(s, before(t0, false, true), p).step, WatchStep::look);
    EXPECT_EQ(next(s, looked(t0, std::nullopt, true, false, true), p).step, WatchStep::wait);
    EXPECT_EQ(next(s, looked(t0, std::nullopt, true, false, true), p).step, WatchStep::wait);
    const auto a = next(s, looked(t0, std::nullopt, true, false, true), p);
    EXPECT_EQ(a.step, WatchStep::give_up);
    EXPECT_TRUE(a.cancelled);
    EXPECT_EQ(a.reason, "Slurm did not confirm the cancel of job 12 before the daemon stopped");
}

TEST(SlurmWatch, RunningRestartsTheDeviceWait) {
    WatchState s = following();
    const auto p = policy();
    EXPECT_EQ(next(s, looked(t0 + 50s, job("PENDING", "Resources")), p).step, WatchStep::wait);
    // It ran, then waits again (requeued): device_wait counts from its last look running.
    EXPECT_EQ(next(s, looked(t0 + 55s, job("RUNNING")), p).step, WatchStep::wait);
    EXPECT_EQ(next(s, looked(t0 + 100s, job("PENDING", "Resources")), p).step, WatchStep::wait);
    EXPECT_EQ(next(s, looked(t0 + 116s, job("PENDING", "Resources")), p).step,
              WatchStep::device_unavailable);
}

TEST(SlurmWatch, PreemptionsBeyondTheLimitEndTheAttempt) {
    WatchState s = following();
    const auto p = policy();  // at most 2 resubmissions
    for (int i = 0; i < 2; ++i) {
        ASSERT_EQ(next(s, looked(t0, job("PREEMPTED")), p).step, WatchStep::resubmit);
        follow(s, "1" + std::to_string(i + 3), t0 + 10s);
        EXPECT_FALSE(s.last);
        EXPECT_EQ(s.pending_since, t0 + 10s);
    }
    EXPECT_EQ(s.id, "14");
    const auto a = next(s, looked(t0, job("PREEMPTED")), p);
    EXPECT_EQ(a.step, WatchStep::give_up);
    EXPECT_EQ(a.reason, "Slurm preempted job 14 2 times");
}

}  // namespace
}  // namespace crcrd::exec::slurm
