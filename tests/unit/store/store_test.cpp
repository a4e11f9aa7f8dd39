#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <semaphore>

#include "crcrd/store/deliveries.hpp"
#include "crcrd/store/events.hpp"
#include "crcrd/store/schema.hpp"
#include "crcrd/store/sqlite.hpp"
#include "crcrd/store/writer.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"

namespace crcrd::store {
namespace {

std::unique_ptr<Db> open_db(const std::filesystem::path& p) {
    auto db = Db::open(p);
    EXPECT_TRUE(db) << (db ? "" : db.error().message);
    EXPECT_TRUE(migrate(**db));
    return std::move(*db);
}

std::int64_t count(Db& db, const std::string& sql) {
    auto st = db.prepare(sql);
    st.step();
    return st.int64(0);
}

Delivery queued(const std::string& id, std::optional<std::string> crcr = std::nullopt) {
    Delivery d;
    d.delivery_id = id;
    d.crcr_delivery_id = std::move(crcr);
    d.received_at = "2026-11-29T00:00:00.000Z";
    d.scheme = "github";
    d.event = "repository_dispatch";
    d.intended = Verdict::queued;
    d.http_status = 202;
    d.body = R"({"x":1})";
    NewRun r;
    r.event = RunEvent::pull_request;
    r.sha = "ec26c3e57ca3a959ca5aad62de7213c562f8c821";
    r.pr = 2;
    r.delivery_id = id;
    d.run = r;
    return d;
}

TEST(Store, MigrationSetsVersionAndRefusesNewerDatabase) {
    TempDir dir;
    auto db = open_db(dir.path() / "a.db");
    EXPECT_EQ(count(*db, "PRAGMA user_version"), schema_version());
    auto mode = db->prepare("PRAGMA journal_mode");
    ASSERT_TRUE(mode.step());
    EXPECT_EQ(mode.text(0), "wal");
    EXPECT_TRUE(migrate(*db));  // idempotent
    db->exec("PRAGMA user_version = 99");
    auto r = migrate(*db);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code, Errc::storage_version);
}

// Migration 13 (issue 16): the vocabulary CHECKs are comparisons, which SQLite evaluates inline,
// not IN lists of constants, for which it builds a temporary B-tree at every insert and update,
// and a run's end fills no temporary table for its follow-ups; the CHECKs allow and refuse what
// they did, in a new database and in one migrated from version 12.
TEST(Store, VocabularyChecksNeedNoTemporaryTableAndStillRefuseUnknownValues) {
    TempDir dir;
    auto fresh = open_db(dir.path() / "fresh.db");
    // A database as a crcrd of schema 12 left it.
    auto older = Db::open(dir.path() / "upgraded.db");
    ASSERT_TRUE(older) << older.error().message;
    auto upgraded = std::move(*older);
    ASSERT_TRUE(migrate(*upgraded, 12));
    // The writer's connection has the events' temporary triggers (one on followups).
    install_event_triggers(*fresh);
    install_event_triggers(*upgraded);
    ASSERT_EQ(count(*upgraded,
                    "SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND sql LIKE '%state "
                    "IN (''queued'',%'"),
              2);  // the runs' and the jobs
    auto ephemeral = [](Db& db, const std::string& sql) {
        auto st = db.prepare("EXPLAIN " + sql);
        int n = 0;
        while (st.step())
            if (st.text(1) == "OpenEphemeral") ++n;
        return n;
    };
    const std::string insert_delivery =
        "INSERT INTO deliveries (received_at, verdict, http_status) VALUES (?, ?, ?)";
    // Another connection that read the schema before the migration rereads it after. (Only a
    // connection that may write has CHECKs: SQLite leaves them out of a read-only one's schema.)
    auto other = Db::open(dir.path() / "upgraded.db");
    ASSERT_TRUE(other);
    ASSERT_EQ(ephemeral(**other, insert_delivery), 1);
    // Version 12's: the state's CHECK, and the three follow-ups' INSERT ... SELECT, each also
    // checking the follow-up's kind.
    ASSERT_EQ(ephemeral(*upgraded, "UPDATE runs SET state = ?, conclusion = ? WHERE id = ?"), 7);
    ASSERT_TRUE(migrate(*upgraded));
    EXPECT_EQ(count(**other, "SELECT count(*) FROM deliveries"), 0);  // its next statement
    EXPECT_EQ(ephemeral(**other, insert_delivery), 0);

    for (Db* db : {fresh.get(), upgraded.get()}) {
        SCOPED_TRACE(db == fresh.get() ? "new database" : "migrated from version 12");
        EXPECT_EQ(
            count(
                *db,
                "SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND sql LIKE '% IN (''%'"),
            0);
        EXPECT_EQ(
            ephemeral(
                *db, "INSERT INTO runs (event, sha, state, created_at) VALUES (?, ?, 'queued', ?)"),
            0);
        EXPECT_EQ(ephemeral(*db, insert_delivery), 0);
        EXPECT_EQ(
            ephemeral(*db,
                      "INSERT INTO jobs (run_id, tier, position, state, timeout_ms, created_at) "
                      "VALUES (?, ?, ?, 'queued', ?, ?)"),
            0);
        EXPECT_EQ(ephemeral(*db,
                            "INSERT INTO outbox (sink, run_id, sha, context, state, created_at) "
                            "VALUES (?, ?, ?, ?, ?, ?)"),
                  0);
        EXPECT_EQ(ephemeral(*db, "UPDATE slots SET state = ? WHERE name = ?"), 0);
        // A run's end: its follow-ups' triggers insert VALUES, not SELECT into a temporary table.
        EXPECT_EQ(ephemeral(*db, "UPDATE runs SET state = ?, conclusion = ? WHERE id = ?"), 0);

        db->exec(
            "INSERT INTO runs (event, sha, state, created_at) VALUES "
            "('bisect', 'ec26c3e57ca3a959ca5aad62de7213c562f8c821', 'queued', 'now')");
        db->exec(
            "INSERT INTO deliveries (received_at, verdict, http_status) VALUES ('now', 'pong', "
            "200)");
        // Values outside each vocabulary are refused, as before.
        for (const char* refused :
             {"INSERT INTO runs (event, sha, state, created_at) VALUES "
              "('bisect', 'ec26c3e57ca3a959ca5aad62de7213c562f8c821', 'queue', 'now')",
              "INSERT INTO runs (event, sha, state, created_at) VALUES "
              "('tag', 'ec26c3e57ca3a959ca5aad62de7213c562f8c821', 'queued', 'now')",
              "INSERT INTO deliveries (received_at, verdict, http_status) VALUES ('now', "
              "'accepted', 202)",
              "INSERT INTO outbox (sink, run_id, sha, context, state, delivery, created_at) "
              "VALUES ('github', 1, 'x', 'c', 'pending', 'lost', 'now')",
              "INSERT INTO outbox (sink, run_id, sha, context, state, created_at) "
              "VALUES ('gitlab', 1, 'x', 'c', 'pending', 'now')",
              "INSERT INTO jobs (run_id, tier, position, state, timeout_ms, created_at) "
              "VALUES (1, 't', 0, 'done', 1, 'now')"}) {
            EXPECT_THROW(db->exec(refused), SqlError) << refused;
        }
        auto check = db->prepare("PRAGMA integrity_check");
        ASSERT_TRUE(check.step());
        EXPECT_EQ(check.text(0), "ok");
    }
}

TEST(Store, DeliveryIdempotencyOnTransportAndCrcrIds) {
    TempDir dir;
    auto db = open_db(dir.path() / "a.db");
    auto first = record_delivery(*db, queued("gh-1", "crcr-1"));
    EXPECT_EQ(first.verdict, Verdict::queued);
    ASSERT_TRUE(first.run_id);

    auto same_transport = record_delivery(*db, queued("gh-1"));
    EXPECT_EQ(same_transport.verdict, Verdict::duplicate);
    EXPECT_EQ(same_transport.run_id, first.run_id);

    auto relay_retry = record_delivery(*db, queued("gh-2", "crcr-1"));
    EXPECT_EQ(relay_retry.verdict, Verdict::duplicate);
    EXPECT_EQ(relay_retry.run_id, first.run_id);

    auto other = record_delivery(*db, queued("gh-3", "crcr-3"));
    EXPECT_EQ(other.verdict, Verdict::queued);
    EXPECT_NE(other.run_id, first.run_id);

    EXPECT_EQ(count(*db, "SELECT count(*) FROM runs"), 2);
    EXPECT_EQ(count(*db, "SELECT count(*) FROM deliveries"), 4);
    EXPECT_EQ(count(*db, "SELECT count(*) FROM deliveries WHERE body IS NOT NULL"), 2);
}

TEST(Store, RejectedDeliveriesAreLoggedWithoutBodyAndDoNotClaimIds) {
    TempDir dir;
    auto db = open_db(dir.path() / "a.db");
    Delivery bad = queued("gh-1");
    bad.intended = Verdict::rejected;
    bad.http_status = 401;
    bad.reason = "signature does not match";
    auto r = record_delivery(*db, bad);
    EXPECT_EQ(r.verdict, Verdict::rejected);
    EXPECT_EQ(count(*db, "SELECT count(*) FROM runs"), 0);
    EXPECT_EQ(
        count(*db, "SELECT count(*) FROM deliveries WHERE verdict='rejected' AND body IS NULL"), 1);
    // A forged request cannot burn the id of a real delivery.
    EXPECT_EQ(record_delivery(*db, queued("gh-1")).verdict, Verdict::queued);
}

TEST(Store, ClosingAPrCancelsOnlyItsOpenRuns) {
    TempDir dir;
    auto db = open_db(dir.path() / "a.db");
    auto a = record_delivery(*db, queued("a"));
    auto b = record_delivery(*db, queued("b"));
    Delivery other = queued("c");
    other.run->pr = 3;
    record_delivery(*db, other);
    Delivery close = queued("close");
    close.intended = Verdict::cancelled;
    close.http_status = 200;
    close.run.reset();
    close.cancel_pr = 2;
    close.reason = "PR closed";
    auto r = record_delivery(*db, close);
    EXPECT_EQ(r.verdict, Verdict::cancelled);
    EXPECT_EQ(r.run_ids, (std::vector<std::int64_t>{*a.run_id, *b.run_id}));
    EXPECT_EQ(
        count(*db, "SELECT count(*) FROM runs WHERE state='cancelled' AND conclusion='cancelled'"),
        2);
    EXPECT_EQ(count(*db, "SELECT count(*) FROM runs WHERE pr=3 AND state='queued'"), 1);
}

TEST(Store, RunShaNeverChanges) {
    TempDir dir;
    auto db = open_db(dir.path() / "a.db");
    record_delivery(*db, queued("a"));
    EXPECT_THROW(db->exec("UPDATE runs SET sha='f95f852bd8fca8fcc58a9a2d6c842781e32a215e'"),
                 SqlError);
    EXPECT_THROW(db->exec("INSERT INTO runs (event, sha, state, created_at) VALUES ('push', 'ABC', "
                          "'queued', 'x')"),
                 SqlError);
}

TEST(Writer, GroupCommitCompletesEveryItemAndIsolatesFailures) {
    TempDir dir;
    auto path = dir.path() / "a.db";
    Writer writer(open_db(path));
    constexpr int k_items = 200;
    std::vector<std::promise<Status>> done(k_items);
    for (int i = 0; i < k_items; ++i) {
        bool fail = (i == 57);
        ASSERT_TRUE(writer.submit(
            [i, fail](Db& db) {
                auto d = queued("id-" + std::to_string(i));
                record_delivery(db, d);
                if (fail) db.exec("INSERT INTO no_such_table VALUES (1)");
            },
            [&done, i](Status s) { done[static_cast<std::size_t>(i)].set_value(s); }));
    }
    for (int i = 0; i < k_items; ++i) {
        auto s = done[static_cast<std::size_t>(i)].get_future().get();
        EXPECT_EQ(static_cast<bool>(s), i != 57) << i;
    }
    writer.stop();
    auto db = open_db(path);
    // The failing item's own delivery was rolled back with it; all others are durable.
    EXPECT_EQ(count(*db, "SELECT count(*) FROM runs"), k_items - 1);
    EXPECT_EQ(count(*db, "SELECT count(*) FROM deliveries WHERE delivery_id='id-57'"), 0);
}

TEST(Writer, CheckpointsRunOnTheSide) {
    TempDir dir;
    auto path = dir.path() / "a.db";
    WriterOptions opts;
    opts.checkpoint_path = path;
    opts.checkpoint_interval = std::chrono::milliseconds(5);
    Writer writer(open_db(path), opts);
    auto initial = std::filesystem::file_size(path);
    std::vector<std::promise<Status>> done(300);
    for (int i = 0; i < 300; ++i) {
        ASSERT_TRUE(writer.submit(
            [i](Db& db) {
                auto d = queued("cp-" + std::to_string(i));
                d.body = std::string(2000, 'b');
                record_delivery(db, d);
            },
            [&done, i](Status s) { done[static_cast<std::size_t>(i)].set_value(s); }));
    }
    for (auto& d : done) EXPECT_TRUE(d.get_future().get());
    // The writer itself never checkpoints (wal_autocheckpoint=0); the side thread moves the
    // committed pages into the database file while the writer keeps running.
    EXPECT_TRUE(
        eventually([&] { return std::filesystem::file_size(path) > initial + 300 * 2000; }));
    writer.stop();
    auto db = open_db(path);
    EXPECT_EQ(count(*db, "SELECT count(*) FROM runs"), 300);
}

// A database whose checkpoints run on the side every 5 ms, with a WAL limit of 256 KiB.
struct SmallWal {
    TempDir dir;
    std::filesystem::path path = dir.path() / "a.db";
    std::filesystem::path wal = path.string() + "-wal";
    WriterOptions opts = [this] {
        WriterOptions o;
        o.checkpoint_path = path;
        o.checkpoint_interval = std::chrono::milliseconds(5);
        o.wal_size_limit = 256 << 10;
        return o;
    }();
};

// While a reader's snapshot holds the checkpoints back the WAL only grows; once one catches up
// it is restarted and trimmed to wal_size_limit, by the writer's connection (the limit was set
// on the checkpointer's, where it does nothing, and the file kept its size until the daemon
// stopped).
TEST(Writer, AWalGrownUnderABurstIsTrimmedOnceACheckpointCatchesUp) {
    SmallWal db;
    const auto& [dir, path, wal, opts] = db;
    Writer writer(open_db(path), opts);
    auto write = [&](const std::string& id) {
        return writer.run_sync([id](Db& db) {
            auto d = queued(id);
            d.body = std::string(2000, 'b');
            record_delivery(db, d);
        });
    };
    // A reader's snapshot holds the checkpoints back, as a burst's constant writes do.
    auto reader = Db::open(path, {.read_only = true});
    ASSERT_TRUE(reader);
    (*reader)->exec("BEGIN");
    EXPECT_EQ(count(**reader, "SELECT count(*) FROM runs"), 0);
    for (int i = 0; i < 300; ++i) ASSERT_TRUE(write("burst-" + std::to_string(i)));
    ASSERT_GT(std::filesystem::file_size(wal), 1u << 20);
    (*reader)->exec("COMMIT");
    int n = 0;
    EXPECT_TRUE(eventually([&] {
        EXPECT_TRUE(write("after-" + std::to_string(n++)));
        return std::filesystem::file_size(wal) <= static_cast<std::uintmax_t>(opts.wal_size_limit);
    })) << std::filesystem::file_size(wal);
    writer.stop();
    EXPECT_EQ(count(*open_db(path), "SELECT count(*) FROM runs"), 300 + n);
}

// Under writes that never pause no pass of the checkpointer ends between two commits (each
// copies what the last commits wrote and syncs the database file), and the log is restarted
// only by a transaction that begins with every frame in the database: the WAL grew without
// bound (595 MB in 8 s at half the bench's peak rate). Once a commit finds the log at three
// quarters of the limit, a pass that holds the writer's next batch back now ends in time.
TEST(Writer, AWalUnderWritesThatNeverPauseStaysNearItsSizeLimit) {
    SmallWal db;
    const auto& [dir, path, wal, base] = db;
    auto opts = base;
    opts.max_batch = 4;
    // 16 items are always queued: the writer never waits for work. (Declared before the
    // writer, whose callbacks use them until it stops.)
    std::counting_semaphore<16> slots(16);
    std::atomic<std::uintmax_t> largest{0};
    std::atomic<int> failed{0};
    Writer writer(open_db(path), opts);
    const auto frames_before = wal_write_counts().by_sqlite / 2;  // two writes a frame
    constexpr int k_items = 3000;
    for (int i = 0; i < k_items; ++i) {
        slots.acquire();
        ASSERT_TRUE(writer.submit(
            [i](Db& db) {
                auto d = queued("steady-" + std::to_string(i));
                d.body = std::string(2000, 'b');
                record_delivery(db, d);
            },
            [&](Status s) {
                if (!s) ++failed;
                std::error_code ec;
                auto size = std::filesystem::file_size(wal, ec);
                if (!ec && size > largest) largest = size;
                slots.release();
            }));
    }
    for (int i = 0; i < 16; ++i) slots.acquire();
    const auto written = (wal_write_counts().by_sqlite / 2 - frames_before) * (4096 + 24);
    writer.stop();
    EXPECT_EQ(failed, 0);
    // The load wrote hundreds of limits into the log (78 MB); the file stayed at a few:
    // 0.66-0.72 MB here, against all 78 MB before.
    ASSERT_GT(written, 100u * static_cast<std::uintmax_t>(opts.wal_size_limit));
    EXPECT_LT(largest.load(), written / 8) << "written " << written;
    EXPECT_EQ(count(*open_db(path), "SELECT count(*) FROM runs"), k_items);
}

TEST(Writer, RefusesBeyondCapacityAndAfterStop) {
    TempDir dir;
    WriterOptions opts;
    opts.max_pending = 1;
    opts.max_batch = 1;
    Writer writer(open_db(dir.path() / "a.db"), opts);
    std::promise<void> release;
    auto gate = release.get_future().share();
    std::promise<void> started;
    ASSERT_TRUE(writer.submit(
        [&](Db&) {
            started.set_value();
            gate.wait();
        },
        [](Status) {}));
    started.get_future().wait();                             // the writer holds the first item
    EXPECT_TRUE(writer.submit([](Db&) {}, [](Status) {}));   // fills the queue
    EXPECT_FALSE(writer.submit([](Db&) {}, [](Status) {}));  // overloaded
    release.set_value();
    writer.stop();
    EXPECT_FALSE(writer.submit([](Db&) {}, [](Status) {}));
}

}  // namespace
}  // namespace crcrd::store
