// The dispatcher's rules without a daemon: a real SQLite file and writer, and an executor that
// plays scripted outcomes instead of running processes.
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <mutex>
#include <thread>

#include "crcrd/core/time.hpp"
#include "crcrd/sched/dispatcher.hpp"
#include "crcrd/store/deliveries.hpp"
#include "crcrd/store/runs.hpp"
#include "crcrd/store/schema.hpp"
#include "crcrd/store/sqlite.hpp"
#include "support/fake_clock.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"

namespace crcrd::sched {
namespace {

using nlohmann::json;

class FakeExecutor : public exec::Executor {
  public:
    /// Decides each attempt's outcome from the job (tier, attempt, slot).
    std::function<exec::RawOutcome(const exec::JobToRun&, const std::atomic<bool>& cancel)> script;
    std::vector<exec::SlotOffer> offers;
    std::atomic<bool> healthy{true};

    void set_settings(std::shared_ptr<const exec::ExecutorSettings>) override {}
    std::vector<exec::SlotOffer> slots() const override {
        std::lock_guard lk(m_mu);
        return offers;
    }
    /// Called on the worker right before the executor asks may_start (a test's interleaving).
    std::function<void(const exec::JobToRun&)> before_start;

    exec::RawOutcome run(const exec::JobToRun& job, const std::atomic<bool>& cancel,
                         const exec::AttemptHooks& hooks) override {
        if (before_start) before_start(job);
        if (!hooks.may_start()) {
            exec::RawOutcome o;
            o.not_started = true;
            return o;
        }
        hooks.on_running(exec::Started{4242, {}});
        {
            std::lock_guard lk(m_mu);
            m_ran.push_back(job);
        }
        return script(job, cancel);
    }
    exec::Health check_health(const std::string&) override {
        return exec::Health{healthy.load(), std::chrono::system_clock::now(), std::nullopt, ""};
    }
    int abandon(std::int64_t job_id) override {
        std::lock_guard lk(m_mu);
        m_abandoned.push_back(job_id);
        return 1;
    }
    /// Attempts that still exist outside (job id -> external id): adoptable() finds them.
    std::map<std::int64_t, std::string> outside;
    /// True: detach_on_stop() says attempts go on; `detached` is set then.
    bool detaches = false;
    std::atomic<bool> detached{false};

    std::optional<std::string> adoptable(std::int64_t job_id,
                                         const std::optional<std::string>& external_id) override {
        auto it = outside.find(job_id);
        if (it == outside.end() || (external_id && *external_id != it->second)) return std::nullopt;
        return it->second;
    }
    exec::RawOutcome adopt(const exec::JobToRun& job, const std::string& external_id,
                           const std::atomic<bool>& cancel, const exec::AttemptHooks&) override {
        {
            std::lock_guard lk(m_mu);
            m_adopted.push_back(external_id);
        }
        return script(job, cancel);
    }
    bool detach_on_stop() override {
        detached = detaches;
        return detaches;
    }
    std::vector<std::string> adopted() const {
        std::lock_guard lk(m_mu);
        return m_adopted;
    }
    std::vector<exec::JobToRun> ran() const {
        std::lock_guard lk(m_mu);
        return m_ran;
    }
    std::vector<std::int64_t> abandoned() const {
        std::lock_guard lk(m_mu);
        return m_abandoned;
    }

  private:
    mutable std::mutex m_mu;
    std::vector<exec::JobToRun> m_ran;
    std::vector<std::int64_t> m_abandoned;
    std::vector<std::string> m_adopted;
};

exec::RawOutcome exited(int code, std::vector<exec::TestResult> tests) {
    exec::RawOutcome o;
    o.exit_code = code;
    o.results = std::move(tests);
    o.health = exec::Health{true, std::chrono::system_clock::now(), std::nullopt, ""};
    return o;
}

class DispatcherTest : public ::testing::Test {
  protected:
    void SetUp() override {
        auto d = store::Db::open(db_path());
        ASSERT_TRUE(d);
        ASSERT_TRUE(store::migrate(**d));
        writer = std::make_unique<store::Writer>(std::move(*d));
        auto r = store::open_reader(db_path());
        ASSERT_TRUE(r);
        reader = std::move(*r);
        settings.device_wait = std::chrono::hours(1);
        settings.health_interval = std::chrono::milliseconds(20);
        settings.retry = RetryPolicy{1, 1};
        fake.offers = {{"a", {"cpu"}}, {"b", {"spyre"}}};
    }
    void TearDown() override {
        if (dispatcher) dispatcher->stop();
    }
    std::filesystem::path db_path() const { return dir.path() / "crcrd.db"; }

    /// A queued run with one job per tier (labels per tier); its id.
    std::int64_t queue_run(
        const std::vector<std::pair<std::string, std::vector<std::string>>>& tiers) {
        std::int64_t id = 0;
        auto s = writer->run_sync([&](store::Db& db) {
            store::NewRun r;
            r.event = RunEvent::push;
            r.sha = "c4295bd74fb0f4fda03689c3df3f2803b658fd85";
            id = store::insert_run(db, r, *parse_rfc3339("2026-12-01T00:00:00.000Z"));
            std::vector<store::PlannedJob> jobs;
            for (std::size_t i = 0; i < tiers.size(); ++i) {
                jobs.push_back({tiers[i].first, static_cast<std::int64_t>(i), R"(["t"])", 60'000,
                                json(tiers[i].second).dump()});
            }
            store::RunsRepo(db).store_plan(id, store::JsonText(nlohmann::json::object()), jobs,
                                           "nothing",
                                           clock->now());  // waits from now
        });
        EXPECT_TRUE(s);
        return id;
    }
    void start() {
        dispatcher = std::make_unique<Dispatcher>(*writer, db_path(), fake, settings, *clock);
        ASSERT_TRUE(dispatcher->sync_slots());
        ASSERT_TRUE(dispatcher->recover());
        dispatcher->start();
    }
    std::string text(const std::string& sql) {
        auto st = reader->prepare(sql);
        return st.step() ? st.text(0) : std::string("<none>");
    }
    std::string run_state(std::int64_t run) {
        return text(
            "SELECT state || '/' || coalesce(conclusion, '') || ': ' || coalesce(reason, '') FROM "
            "runs WHERE id = " +
            std::to_string(run));
    }
    bool run_finished(std::int64_t run) {
        return text("SELECT state FROM runs WHERE id = " + std::to_string(run)) != "queued" &&
               text("SELECT state FROM runs WHERE id = " + std::to_string(run)) != "running";
    }
    /// The attempts of the run: "tier#attempt conclusion", in order.
    std::vector<std::string> attempts(std::int64_t run) {
        auto st = reader->prepare(
            "SELECT tier || '#' || attempt || ' ' || coalesce(conclusion, state) FROM jobs WHERE "
            "run_id = " +
            std::to_string(run) + " ORDER BY id");
        std::vector<std::string> out;
        while (st.step()) out.push_back(st.text(0));
        return out;
    }

    TempDir dir;
    std::unique_ptr<store::Writer> writer;
    std::unique_ptr<store::Db> reader;
    FakeExecutor fake;
    DispatcherSettings settings;
    const core::Clock* clock = &core::system_clock();
    std::unique_ptr<Dispatcher> dispatcher;
};

TEST_F(DispatcherTest, TiersRunInOrderOnASlotWhoseLabelsCoverTheirs) {
    fake.script = [](const exec::JobToRun&, const std::atomic<bool>&) {
        return exited(0, {{"t", TestOutcome::passed, 0.1, ""}});
    };
    auto run = queue_run({{"import", {}}, {"smoke", {"spyre"}}});
    start();
    ASSERT_TRUE(eventually([&] { return run_finished(run); }));
    EXPECT_EQ(run_state(run), "completed/passed: every selected tier passed");
    auto ran = fake.ran();
    ASSERT_EQ(ran.size(), 2u);
    EXPECT_EQ(ran[0].tier, "import");
    EXPECT_EQ(ran[0].slot, "a");  // the first free slot
    EXPECT_EQ(ran[1].tier, "smoke");
    EXPECT_EQ(ran[1].slot, "b");  // the only one with the label
    EXPECT_EQ(text("SELECT group_concat(state) FROM slots"), "idle,idle");
}

TEST_F(DispatcherTest, AJobCancelledBetweenItsLeaseAndItsStartIsNeverStarted) {
    // The interleaving of the chaos soak: the run is superseded after the job was leased,
    // before its command starts; the dispatcher has not looked since.
    fake.script = [](const exec::JobToRun&, const std::atomic<bool>&) {
        return exited(0, {{"t", TestOutcome::passed, 0.1, ""}});
    };
    auto run = queue_run({{"import", {}}});
    fake.before_start = [&](const exec::JobToRun& job) {
        auto s = writer->run_sync([&](store::Db& db) {
            EXPECT_EQ(store::RunsRepo(db).cancel(job.run_id, "superseded by run 99",
                                                 std::chrono::system_clock::now()),
                      store::CancelOutcome::cancelled);
        });
        EXPECT_TRUE(s);
    };
    start();
    ASSERT_TRUE(eventually([&] {
        return text("SELECT group_concat(state) FROM slots") == "idle,idle" && run_finished(run);
    }));
    EXPECT_TRUE(fake.ran().empty());  // the command never started
    EXPECT_EQ(run_state(run).rfind("cancelled/", 0), 0u) << run_state(run);
    EXPECT_EQ(attempts(run), (std::vector<std::string>{"import#1 cancelled"}));
    EXPECT_EQ(text("SELECT coalesce(started_at, 'never') || ' ' || coalesce(reason, '') FROM jobs"),
              "never superseded by run 99");
}

TEST_F(DispatcherTest, AnInfraFailureIsRetriedAndTheRetryDecides) {
    fake.script = [](const exec::JobToRun& j, const std::atomic<bool>&) {
        if (j.attempt == 1) {
            exec::RawOutcome o;
            o.not_run = "no space for the checkout";
            return o;
        }
        return exited(0, {{"t", TestOutcome::passed, 0.1, ""}});
    };
    auto run = queue_run({{"import", {}}});
    start();
    ASSERT_TRUE(eventually([&] { return run_finished(run); }));
    EXPECT_EQ(attempts(run), (std::vector<std::string>{"import#1 infra_error", "import#2 passed"}));
    EXPECT_EQ(text("SELECT reason FROM jobs WHERE attempt = 1"),
              "no space for the checkout (retried)");
    EXPECT_EQ(run_state(run), "completed/passed: every selected tier passed");
}

TEST_F(DispatcherTest, AFailedTestThatPassesOnRerunIsFlakyAndOneThatFailsAgainIsARegression) {
    fake.script = [](const exec::JobToRun& j, const std::atomic<bool>&) {
        if (j.tier == "flaky" && j.attempt == 2)
            return exited(0, {{"t1", TestOutcome::passed, 0.1, ""}});
        return exited(1, {{"t1", TestOutcome::failed, 0.1, "assert"}});
    };
    auto flaky = queue_run({{"flaky", {}}});
    auto broken = queue_run({{"broken", {}}});
    start();
    ASSERT_TRUE(eventually([&] { return run_finished(flaky) && run_finished(broken); }));
    EXPECT_EQ(run_state(flaky), "completed/flaky: 1 test failed, then passed on rerun");
    EXPECT_EQ(attempts(flaky), (std::vector<std::string>{"flaky#1 regression", "flaky#2 flaky"}));
    EXPECT_EQ(text("SELECT outcome FROM test_results WHERE job_id = (SELECT max(id) FROM jobs "
                   "WHERE tier = 'flaky')"),
              "flaky");
    EXPECT_EQ(attempts(broken),
              (std::vector<std::string>{"broken#1 regression", "broken#2 regression"}));
    EXPECT_EQ(run_state(broken),
              "completed/regression: broken: 1 of 1 tests failed, again on rerun");
}

TEST_F(DispatcherTest, NoSlotWithTheTiersLabelsEndsDeviceUnavailableAfterTheWait) {
    settings.device_wait = std::chrono::milliseconds(0);
    fake.script = [](const exec::JobToRun&, const std::atomic<bool>&) { return exited(0, {}); };
    auto run = queue_run({{"gpu", {"gpu"}}});
    start();
    ASSERT_TRUE(eventually([&] { return run_finished(run); }));
    EXPECT_TRUE(fake.ran().empty());
    EXPECT_EQ(
        run_state(run),
        R"(completed/device_unavailable: gpu: no healthy runner slot with labels ["gpu"] within 0s)");
}

// device_wait is counted on the dispatcher's clock: a job whose labels no slot has waits within
// it, however many passes go by, and ends device_unavailable once the clock passed it.
TEST_F(DispatcherTest, ATierWithoutASlotWaitsOnTheClockUntilDeviceWaitHasPassed) {
    FakeClock fake_clock(*parse_rfc3339("2026-12-01T08:00:00.000Z"));
    clock = &fake_clock;
    settings.device_wait = std::chrono::hours(1);
    auto run = queue_run({{"gpu", {"gpu"}}});
    start();
    fake_clock.advance(std::chrono::minutes(59));
    // Passes go by at this time (each reads the clock): the job still waits.
    const auto reads = fake_clock.reads();
    dispatcher->notify();
    ASSERT_TRUE(eventually([&] { return fake_clock.reads() >= reads + 3; }));
    EXPECT_FALSE(run_finished(run));
    EXPECT_EQ(attempts(run), (std::vector<std::string>{"gpu#1 queued"}));
    fake_clock.advance(std::chrono::minutes(2));
    dispatcher->notify();
    ASSERT_TRUE(eventually([&] { return run_finished(run); }));
    EXPECT_EQ(
        run_state(run),
        R"(completed/device_unavailable: gpu: no healthy runner slot with labels ["gpu"] within 3600s)");
    EXPECT_TRUE(fake.ran().empty());
    // The attempt ended at the clock's time, not the machine's.
    EXPECT_EQ(text("SELECT finished_at FROM runs WHERE id = " + std::to_string(run)).substr(0, 16),
              "2026-12-01T09:01");
}

// A running job's lease is renewed while it runs: a job longer than lease_ttl keeps its slot
// and ends as its script says, not "lease expired".
TEST_F(DispatcherTest, ARunningJobsLeaseIsRenewedBeforeItLapses) {
    settings.lease_ttl = std::chrono::milliseconds(400);
    // Shared with the script: on a failed ASSERT the attempt runs on until TearDown stops it.
    auto released = std::make_shared<std::atomic<bool>>(false);
    fake.script = [released](const exec::JobToRun&, const std::atomic<bool>& cancel) {
        while (!released->load() && !cancel.load())
            std::this_thread::yield();  // runs until released
        return exited(0, {{"t", TestOutcome::passed, 0.1, ""}});
    };
    auto run = queue_run({{"long", {"cpu"}}});
    start();
    ASSERT_TRUE(eventually([&] {
        return text("SELECT state FROM jobs WHERE run_id = " + std::to_string(run)) == "running";
    }));
    const std::string lease = text("SELECT lease_expires_at FROM slots WHERE name = 'a'");
    ASSERT_TRUE(eventually(
        [&] { return text("SELECT lease_expires_at FROM slots WHERE name = 'a'") > lease; }));
    *released = true;
    ASSERT_TRUE(eventually([&] { return run_finished(run); }));
    EXPECT_EQ(run_state(run), "completed/passed: every selected tier passed");
    EXPECT_EQ(attempts(run), (std::vector<std::string>{"long#1 passed"}));
}

TEST_F(DispatcherTest, ASlotFailingItsHealthCheckGoesOfflineAndTheJobWaitsForIt) {
    fake.offers = {{"a", {}}};
    fake.healthy = false;
    std::atomic<int> calls{0};
    fake.script = [&](const exec::JobToRun&, const std::atomic<bool>&) {
        if (calls++ == 0) {
            exec::RawOutcome o;
            o.slot_unhealthy = true;
            o.health =
                exec::Health{false, std::chrono::system_clock::now(), std::nullopt, "no device"};
            return o;
        }
        return exited(0, {{"t", TestOutcome::passed, 0.1, ""}});
    };
    auto run = queue_run({{"smoke", {}}});
    start();
    ASSERT_TRUE(
        eventually([&] { return text("SELECT state FROM slots WHERE name = 'a'") == "offline"; }));
    EXPECT_EQ(attempts(run), (std::vector<std::string>{"smoke#1 queued"}));  // not an attempt
    fake.healthy = true;  // the next recheck brings the slot back and the job runs
    ASSERT_TRUE(eventually([&] { return run_finished(run); }));
    EXPECT_EQ(attempts(run), (std::vector<std::string>{"smoke#1 passed"}));
    EXPECT_EQ(calls.load(), 2);
}

TEST_F(DispatcherTest, ACancelledRunStopsItsRunningJob) {
    std::atomic<bool> started{false};
    fake.script = [&](const exec::JobToRun&, const std::atomic<bool>& cancel) {
        started = true;
        while (!cancel.load()) std::this_thread::yield();  // a test that runs until stopped
        exec::RawOutcome o;
        o.signal = 15;
        o.cancelled = true;
        return o;
    };
    auto run = queue_run({{"long", {}}});
    start();
    ASSERT_TRUE(eventually([&] { return started.load(); }));
    ASSERT_TRUE(eventually([&] { return text("SELECT state FROM jobs") == "running"; }));
    ASSERT_TRUE(writer->run_sync([&](store::Db& db) {
        store::RunsRepo(db).cancel(run, "cancelled by ops", std::chrono::system_clock::now());
    }));
    dispatcher->notify();
    ASSERT_TRUE(
        eventually([&] { return text("SELECT state FROM slots WHERE name = 'a'") == "idle"; }));
    EXPECT_EQ(run_state(run), "cancelled/cancelled: cancelled by ops");
    EXPECT_EQ(attempts(run), (std::vector<std::string>{"long#1 cancelled"}));
}

TEST_F(DispatcherTest, RecoverEndsWhatAPreviousDaemonLeftRunning) {
    auto run = queue_run({{"import", {}}});
    ASSERT_TRUE(writer->run_sync([](store::Db& db) {
        db.exec("INSERT INTO slots (name) VALUES ('a')");
        db.exec("UPDATE slots SET state = 'busy', job_id = 1 WHERE name = 'a'");
        db.exec("UPDATE jobs SET state = 'running', slot = 'a', pgid = 999999");
    }));
    fake.script = [](const exec::JobToRun&, const std::atomic<bool>&) {
        return exited(0, {{"t", TestOutcome::passed, 0.1, ""}});
    };
    start();
    EXPECT_EQ(fake.abandoned(), std::vector<std::int64_t>{1});
    ASSERT_TRUE(eventually([&] { return run_finished(run); }));
    EXPECT_EQ(attempts(run), (std::vector<std::string>{"import#1 infra_error", "import#2 passed"}));
    EXPECT_EQ(text("SELECT reason FROM jobs WHERE attempt = 1"), "daemon restarted (retried)");
}

TEST_F(DispatcherTest, RecoverAdoptsAnAttemptThatGoesOnOutsideTheDaemonInsteadOfRunningItAgain) {
    auto run = queue_run({{"import", {}}});
    ASSERT_TRUE(writer->run_sync([](store::Db& db) {
        db.exec("INSERT INTO slots (name) VALUES ('a')");
        db.exec("UPDATE slots SET state = 'busy', job_id = 1 WHERE name = 'a'");
        db.exec("UPDATE jobs SET state = 'running', slot = 'a', external_id = '4711'");
    }));
    fake.outside = {{1, "4711"}};
    std::atomic<bool> finish{false};
    fake.script = [&](const exec::JobToRun&, const std::atomic<bool>&) {
        while (!finish.load()) std::this_thread::yield();
        return exited(0, {{"t", TestOutcome::passed, 0.1, ""}});
    };
    start();
    // While it is watched, the slot stays the job's.
    ASSERT_TRUE(eventually([&] { return fake.adopted() == std::vector<std::string>{"4711"}; }));
    EXPECT_EQ(text("SELECT state || ' ' || job_id FROM slots WHERE name = 'a'"), "busy 1");
    finish = true;
    ASSERT_TRUE(eventually([&] { return run_finished(run); }));
    EXPECT_EQ(attempts(run), (std::vector<std::string>{"import#1 passed"}));
    EXPECT_TRUE(fake.abandoned().empty());
    EXPECT_TRUE(fake.ran().empty());
    EXPECT_EQ(text("SELECT external_id FROM jobs WHERE id = 1"), "4711");
}

TEST_F(DispatcherTest, AnAttemptTheExecutorNoLongerHasIsEndedAndRetried) {
    auto run = queue_run({{"import", {}}});
    ASSERT_TRUE(writer->run_sync(
        [](store::Db& db) { db.exec("UPDATE jobs SET state = 'running', external_id = '4711'"); }));
    fake.outside = {{1, "other"}};  // not the attempt the row names
    fake.script = [](const exec::JobToRun&, const std::atomic<bool>&) {
        return exited(0, {{"t", TestOutcome::passed, 0.1, ""}});
    };
    start();
    ASSERT_TRUE(eventually([&] { return run_finished(run); }));
    EXPECT_EQ(attempts(run), (std::vector<std::string>{"import#1 infra_error", "import#2 passed"}));
    EXPECT_TRUE(fake.adopted().empty());
}

TEST_F(DispatcherTest, AStopLeavesAnAttemptThatGoesOnOutsideRunningAndRecordsNothing) {
    fake.detaches = true;
    std::atomic<bool> started{false};
    fake.script = [&](const exec::JobToRun&, const std::atomic<bool>& cancel) {
        started = true;
        while (!fake.detached.load() && !cancel.load()) std::this_thread::yield();
        exec::RawOutcome o;
        o.detached = !cancel.load();
        o.cancelled = cancel.load();
        return o;
    };
    auto run = queue_run({{"import", {}}});
    start();
    ASSERT_TRUE(
        eventually([&] { return started.load() && text("SELECT state FROM jobs") == "running"; }));
    dispatcher->stop();
    EXPECT_EQ(text("SELECT state FROM jobs"), "running");
    EXPECT_EQ(text("SELECT state FROM slots WHERE name = 'a'"), "busy");
    EXPECT_EQ(text("SELECT state FROM runs WHERE id = " + std::to_string(run)), "running");
}

}  // namespace
}  // namespace crcrd::sched
