// The writer's events (store/events.hpp) and the scrape's gauges (store/metrics.hpp) on a real,
// migrated SQLite file: an event is passed only once its commit is durable, never for a
// rolled-back item; the start-up totals match what the events count; and a scrape's reads
// cost the open rows, not the history, and the same at any outbox backlog.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <mutex>

#include "crcrd/store/events.hpp"
#include "crcrd/store/metrics.hpp"
#include "crcrd/store/runs.hpp"
#include "crcrd/store/sqlite.hpp"
#include "crcrd/store/writer.hpp"
#include "support/migrated_db.hpp"

namespace crcrd::store {
namespace {

const std::string k_sha = "c4295bd74fb0f4fda03689c3df3f2803b658fd85";

void insert_run(Db& db, std::int64_t id, const std::string& state, const std::string& conclusion) {
    auto st = db.prepare(
        "INSERT INTO runs (id, event, sha, state, conclusion, created_at) VALUES (?, 'push', ?, ?, "
        "nullif(?, ''), "
        "'2026-11-29T00:00:00.000Z')");
    st.bind(1, id).bind(2, k_sha).bind(3, state).bind(4, conclusion);
    st.run();
}

std::string describe(const Event& e) {
    static const char* k[] = {"delivery",     "run_created",    "run_finished",   "job_started",
                              "job_finished", "status_settled", "selection_miss", "followup"};
    std::string out = k[static_cast<int>(e.kind)];
    if (!e.a.empty()) out += " " + e.a;
    if (!e.b.empty()) out += " " + e.b;
    if (e.seconds) out += " " + std::to_string(*e.seconds).substr(0, 6);
    return out;
}

class EventsTest : public MigratedDbTest {
  protected:
    void SetUp() override {
        MigratedDbTest::SetUp();
        if (HasFatalFailure()) return;
        writer = std::make_unique<Writer>(std::move(db));
        writer->set_event_sink([this](const std::vector<Event>& events) {
            std::lock_guard lk(mu);
            for (const auto& e : events) seen.push_back(describe(e));
        });
        ASSERT_TRUE(writer->run_sync([](Db& d) { install_event_triggers(d); }));
    }
    std::vector<std::string> take() {
        std::lock_guard lk(mu);
        return std::exchange(seen, {});
    }

    std::unique_ptr<Writer> writer;
    std::mutex mu;
    std::vector<std::string> seen;
};

TEST_F(EventsTest, EachCommittedChangeIsOneEventAndARolledBackOneIsNone) {
    ASSERT_TRUE(writer->run_sync([](Db& d) {
        d.exec(
            "INSERT INTO deliveries (received_at, verdict, http_status) VALUES "
            "('2026-11-29T00:00:00.000Z', 'queued', 202)");
        insert_run(d, 1, "queued", "");
    }));
    EXPECT_EQ(take(), (std::vector<std::string>{"delivery queued", "run_created push"}));

    // A failing item is rolled back to its savepoint: its delivery is not counted.
    auto failed = writer->run_sync([](Db& d) {
        d.exec(
            "INSERT INTO deliveries (received_at, verdict, http_status) VALUES "
            "('2026-11-29T00:00:00.000Z', 'rejected', 401)");
        throw std::runtime_error("boom");
    });
    EXPECT_FALSE(failed);
    EXPECT_TRUE(take().empty());

    ASSERT_TRUE(writer->run_sync([](Db& d) {
        d.exec(
            "INSERT INTO jobs (id, run_id, tier, position, state, timeout_ms, created_at) "
            "VALUES (1, 1, 'import', 0, 'queued', 1000, '2026-11-29T00:00:00.000Z')");
        d.exec("UPDATE jobs SET state = 'leased' WHERE id = 1");
        d.exec(
            "UPDATE jobs SET state = 'running', started_at = '2026-11-29T00:00:02.500Z' WHERE id = "
            "1");
        d.exec(
            "UPDATE jobs SET state = 'completed', conclusion = 'passed', finished_at = "
            "'2026-11-29T00:01:32.750Z' "
            "WHERE id = 1");
        d.exec("UPDATE runs SET state = 'running' WHERE id = 1");
        d.exec(
            "UPDATE runs SET state = 'completed', conclusion = 'passed', finished_at = "
            "'2026-11-29T00:01:33.000Z' "
            "WHERE id = 1");
        d.exec("UPDATE runs SET reason = 'again' WHERE id = 1");  // no state change: no event
        d.exec(
            "INSERT INTO outbox (sink, run_id, sha, context, state, created_at) "
            "VALUES ('github', 1, '" +
            k_sha + "', 'crcr/import', 'success', '2026-11-29T00:01:33.000Z')");
        d.exec("UPDATE outbox SET delivery = 'sent'");
    }));
    EXPECT_EQ(take(), (std::vector<std::string>{
                          "job_started import 2.5000", "job_finished import passed 90.250",
                          "run_finished push passed", "status_settled github sent"}));
}

// A push that ends as a regression leaves a bisection for the planner: the commit's events say
// so (the daemon wakes the planner's follow-ups from them), once; the same row again says nothing.
TEST_F(EventsTest, WorkLeftForThePlannerIsAnEventOnce) {
    ASSERT_TRUE(writer->run_sync([](Db& d) { insert_run(d, 1, "running", ""); }));
    take();
    // As the dispatcher ends a run: RunsRepo::complete leaves its follow-ups.
    auto finish = [](Db& d) {
        RunsRepo(d).complete(1, Conclusion::regression, "import: 1 of 1 tests failed",
                             std::chrono::system_clock::now());
    };
    ASSERT_TRUE(writer->run_sync(finish));
    EXPECT_EQ(take(),
              (std::vector<std::string>{"run_finished push regression", "followup bisect"}));
    ASSERT_TRUE(
        writer->run_sync([](Db& d) { d.exec("UPDATE runs SET state = 'running' WHERE id = 1"); }));
    ASSERT_TRUE(writer->run_sync(finish));  // the followups row is still there: INSERT OR IGNORE
    EXPECT_EQ(take(), (std::vector<std::string>{"run_finished push regression"}));
}

TEST_F(EventsTest, StartUpTotalsCountWhatTheEventsCount) {
    ASSERT_TRUE(writer->run_sync([](Db& d) {
        for (int i = 0; i < 3; ++i) {
            d.exec(
                "INSERT INTO deliveries (received_at, verdict, http_status) VALUES "
                "('2026-11-29T00:00:00.000Z', 'queued', 202)");
        }
        insert_run(d, 1, "completed", "regression");
        insert_run(d, 2, "cancelled", "cancelled");
        insert_run(d, 3, "queued", "");
    }));
    EventTotals t;
    ASSERT_TRUE(writer->run_sync([&t](Db& d) { t = read_event_totals(d); }));
    ASSERT_EQ(t.deliveries.size(), 1u);
    EXPECT_EQ(t.deliveries[0].labels, (std::vector<std::string>{"queued"}));
    EXPECT_EQ(t.deliveries[0].value, 3);
    ASSERT_EQ(t.runs_created.size(), 1u);
    EXPECT_EQ(t.runs_created[0].value, 3);
    ASSERT_EQ(t.runs_finished.size(), 2u);
    EXPECT_EQ(t.runs_finished[0].labels, (std::vector<std::string>{"push", "cancelled"}));
    EXPECT_EQ(t.runs_finished[1].labels, (std::vector<std::string>{"push", "regression"}));
}

/// The virtual-machine instructions SQLite runs for `fn` on `db`.
template <class Fn>
long long instructions(Db& db, Fn&& fn) {
    long long n = 0;
    sqlite3_progress_handler(
        db.handle(), 1, [](void* p) { return ++*static_cast<long long*>(p), 0; }, &n);
    fn();
    sqlite3_progress_handler(db.handle(), 0, nullptr, nullptr);
    return n;
}

class ScrapeTest : public MigratedDbTest {};

TEST_F(ScrapeTest, AScrapeCostsTheOpenRowsNotTheHistory) {
    constexpr int k_history = 20000;
    db->exec("BEGIN");
    for (int i = 1; i <= k_history; ++i) {
        const auto id = std::to_string(i);
        db->exec(
            "INSERT INTO deliveries (received_at, verdict, http_status) VALUES "
            "('2026-11-29T00:00:00.000Z', 'queued', 202)");
        insert_run(*db, i, "completed", "passed");
        db->exec(
            "INSERT INTO jobs (run_id, tier, position, state, conclusion, timeout_ms, created_at) "
            "VALUES (" +
            id + ", 'import', 0, 'completed', 'passed', 1000, '2026-11-29T00:00:00.000Z')");
        db->exec(
            "INSERT INTO outbox (sink, run_id, sha, context, state, delivery, created_at) VALUES "
            "('github', " +
            id + ", '" + k_sha +
            "', 'crcr/import', 'success', 'sent', '2026-11-29T00:00:00.000Z')");
    }
    // What is open now: a few rows.
    insert_run(*db, k_history + 1, "queued", "");
    db->exec(
        "INSERT INTO jobs (run_id, tier, position, state, timeout_ms, created_at) VALUES (1, "
        "'smoke', 1, 'queued', "
        "1000, '2026-11-29T00:00:00.000Z')");
    db->exec(
        "INSERT INTO outbox (sink, run_id, sha, context, state, created_at) VALUES ('github', 1, "
        "'" +
        k_sha + "', 'crcr/smoke', 'pending', '2026-11-29T00:00:00.000Z')");
    db->exec("COMMIT");
    db->exec("ANALYZE");

    Result<ScrapeGauges> g = make_error(Errc::internal, "");
    const long long scrape = instructions(*db, [&] { g = read_gauges(*db); });
    ASSERT_TRUE(g) << g.error().message;
    ASSERT_EQ(g->runs_open.size(), 1u);
    EXPECT_EQ(g->runs_open[0].value, 1);
    ASSERT_EQ(g->jobs_open.size(), 1u);
    EXPECT_EQ(g->jobs_open[0].value, 1);
    ASSERT_EQ(g->outbox_waiting.size(), 1u);
    EXPECT_EQ(g->outbox_waiting[0].value, 1);
    // The measure sees a scan: a count over the history costs at least a step per row.
    const long long scan = instructions(*db, [&] {
        auto st = db->prepare("SELECT verdict, count(*) FROM deliveries GROUP BY verdict");
        while (st.step()) {
        }
    });
    EXPECT_GT(scan, k_history);
    EXPECT_LT(scrape, 2000) << "a scrape ran " << scrape << " instructions over a history of "
                            << k_history << " rows";
}

// Issue 32: the outbox's gauges are counts kept with the rows (schema 15) and the oldest
// waiting row is one search, so a scrape runs as many instructions over 20,000 waiting and
// 20,000 dead rows as over a few; counting them at the scrape, as before, ran a step per row.
TEST_F(ScrapeTest, AScrapeCostsTheSameAtAnyOutboxBacklog) {
    insert_run(*db, 1, "running", "");
    auto row = db->prepare(
        "INSERT INTO outbox (sink, run_id, sha, context, state, delivery, http_status, "
        "created_at) VALUES (?, 1, ?, 'crcr', 'pending', ?, ?, ?)");
    auto add = [&](const char* sink, const char* delivery, std::optional<std::int64_t> status,
                   const std::string& created_at) {
        row.reset();
        row.bind(1, sink).bind(2, k_sha).bind(3, delivery).bind(4, status).bind(5, created_at);
        row.run();
    };
    // The (sink, state) pairs of the backlog below, a row each.
    add("github", "waiting", 401, "2026-11-29T00:00:00.000Z");
    add("callback", "waiting", 403, "2026-11-29T00:00:00.000Z");
    add("github", "dead", 422, "2026-11-28T00:00:00.000Z");
    auto scrape = [&] {
        Result<ScrapeGauges> g = make_error(Errc::internal, "");
        const long long n = instructions(*db, [&] { g = read_gauges(*db); });
        EXPECT_TRUE(g) << g.error().message;
        return std::pair{n, g ? *g : ScrapeGauges{}};
    };
    const auto [one, at_one] = scrape();
    ASSERT_EQ(at_one.outbox_waiting.size(), 2u);
    ASSERT_EQ(at_one.outbox_credentials_rejected.size(), 2u);

    constexpr int k_backlog = 20000;
    db->exec("BEGIN");
    for (int i = 0; i < k_backlog; ++i) {
        add(i % 2 ? "github" : "callback", "waiting", i % 3 ? 500 : 403,
            "2026-11-29T00:00:01.000Z");
        add("github", "dead", 422, "2026-11-28T00:00:00.000Z");
    }
    db->exec("COMMIT");
    db->exec("ANALYZE");
    const auto [many, at_many] = scrape();
    ASSERT_EQ(at_many.outbox_waiting.size(), 2u);
    EXPECT_EQ(at_many.outbox_waiting[0].value + at_many.outbox_waiting[1].value, k_backlog + 2);
    ASSERT_EQ(at_many.outbox_dead.size(), 1u);
    EXPECT_EQ(at_many.outbox_dead[0].value, k_backlog + 1);
    EXPECT_EQ(at_many.oldest_waiting_created_at, "2026-11-29T00:00:00.000Z");
    EXPECT_LE(many, one + 10) << "a scrape ran " << one << " instructions over two waiting rows, "
                              << many << " over " << k_backlog;
    const long long counting = instructions(*db, [&] {
        auto st = db->prepare(
            "SELECT sink, count(*) FROM outbox INDEXED BY outbox_by_delivery WHERE delivery = "
            "'waiting' GROUP BY sink");
        while (st.step()) {
        }
    });
    EXPECT_GT(counting, k_backlog);
}

}  // namespace
}  // namespace crcrd::store
