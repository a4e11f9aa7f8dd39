#include <gtest/gtest.h>

#include <atomic>
#include <future>

#include "crcrd/store/sqlite.hpp"
#include "crcrd/store/deliveries.hpp"
#include "crcrd/store/schema.hpp"
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
    r.event = "pull_request";
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
    EXPECT_EQ(r.error().code, "storage_version");
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
    EXPECT_EQ(count(*db, "SELECT count(*) FROM deliveries WHERE verdict='rejected' AND body IS NULL"), 1);
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
    EXPECT_EQ(count(*db, "SELECT count(*) FROM runs WHERE state='cancelled' AND conclusion='cancelled'"), 2);
    EXPECT_EQ(count(*db, "SELECT count(*) FROM runs WHERE pr=3 AND state='queued'"), 1);
}

TEST(Store, RunShaNeverChanges) {
    TempDir dir;
    auto db = open_db(dir.path() / "a.db");
    record_delivery(*db, queued("a"));
    EXPECT_THROW(db->exec("UPDATE runs SET sha='f95f852bd8fca8fcc58a9a2d6c842781e32a215e'"), SqlError);
    EXPECT_THROW(db->exec("INSERT INTO runs (event, sha, state, created_at) VALUES ('push', 'ABC', 'queued', 'x')"), SqlError);
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
    EXPECT_TRUE(eventually([&] { return std::filesystem::file_size(path) > initial + 300 * 2000; }));
    writer.stop();
    auto db = open_db(path);
    EXPECT_EQ(count(*db, "SELECT count(*) FROM runs"), 300);
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
    ASSERT_TRUE(writer.submit([&](Db&) { started.set_value(); gate.wait(); }, [](Status) {}));
    started.get_future().wait();  // the writer holds the first item
    EXPECT_TRUE(writer.submit([](Db&) {}, [](Status) {}));    // fills the queue
    EXPECT_FALSE(writer.submit([](Db&) {}, [](Status) {}));   // overloaded
    release.set_value();
    writer.stop();
    EXPECT_FALSE(writer.submit([](Db&) {}, [](Status) {}));
}

}  // namespace
}  // namespace crcrd::store
