// The writable connections' VFS (src/store/wal_vfs.hpp): a commit's WAL frames reach the file
// system in a few writes, and nothing a reader, a crash or a rolled-back statement sees changes.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>
#include <csignal>

#include "crcrd/store/sqlite.hpp"
#include "support/temp_dir.hpp"

namespace crcrd::store {
namespace {

std::unique_ptr<Db> open_rw(const std::filesystem::path& p) {
    auto db = Db::open(p);
    EXPECT_TRUE(db) << (db ? "" : db.error().message);
    return std::move(*db);
}

std::int64_t count(Db& db, const std::string& sql) {
    auto st = db.prepare(sql);
    EXPECT_TRUE(st.step()) << sql;
    return st.int64(0);
}

std::string integrity(Db& db) {
    auto st = db.prepare("PRAGMA integrity_check");
    EXPECT_TRUE(st.step());
    return st.text(0);
}

// A new connection (which recovers the log) finds `rows` rows and a sound file.
void expect_reopened(const std::filesystem::path& path, std::int64_t rows) {
    auto db = open_rw(path);
    EXPECT_EQ(count(*db, "SELECT count(*) FROM t"), rows);
    EXPECT_EQ(integrity(*db), "ok");
}

void fill(Db& db, int from, int n) {
    auto ins = db.prepare("INSERT INTO t (id, payload) VALUES (?, randomblob(2000))");
    for (int i = from; i < from + n; ++i) {
        ins.reset();
        ins.bind(1, std::int64_t{i});
        ins.run();
    }
}

TEST(WalVfs, ACommitOfManyPagesReachesTheFileInAFewWritesAndReadersSeeIt) {
    TempDir dir;
    auto path = dir.path() / "a.db";
    auto db = open_rw(path);
    db->exec("CREATE TABLE t (id INTEGER PRIMARY KEY, payload BLOB)");
    auto reader = Db::open(path, {.read_only = true});
    ASSERT_TRUE(reader);
    const auto before = wal_write_counts();
    db->exec("BEGIN IMMEDIATE");
    fill(*db, 0, 300);  // about 150 pages
    db->exec("COMMIT");
    const auto after = wal_write_counts();
    const auto by_sqlite = after.by_sqlite - before.by_sqlite;
    const auto to_file = after.to_file - before.to_file;
    EXPECT_GE(by_sqlite, 300u);  // a header and a page per frame
    EXPECT_LE(to_file, by_sqlite / 20) << "SQLite made " << by_sqlite << " writes";
    // Another connection sees the commit at once: its frames are in the file.
    EXPECT_EQ(count(**reader, "SELECT count(*) FROM t"), 300);
}

TEST(WalVfs, FramesSpilledRewrittenAndRolledBackLeaveTheRightRows) {
    TempDir dir;
    auto path = dir.path() / "a.db";
    auto db = open_rw(path);
    db->exec("CREATE TABLE t (id INTEGER PRIMARY KEY, payload BLOB, n INTEGER DEFAULT 0)");
    // A tiny page cache makes SQLite write frames before the commit (a spill), write the same
    // pages again in the same transaction (rewriting their frames in place) and, for the
    // rolled-back parts, leave frames past the commit that must never count.
    db->exec("PRAGMA cache_size = 8");
    db->exec("BEGIN IMMEDIATE");
    fill(*db, 0, 200);
    db->exec("UPDATE t SET n = n + 1");
    db->exec("SAVEPOINT part");
    fill(*db, 1000, 100);
    db->exec("UPDATE t SET n = n + 10");
    db->exec("ROLLBACK TO part");
    db->exec("RELEASE part");
    db->exec("UPDATE t SET n = n + 1");
    db->exec("COMMIT");
    db->exec("BEGIN IMMEDIATE");
    fill(*db, 2000, 200);
    db->exec("ROLLBACK");
    db->exec("BEGIN IMMEDIATE");
    fill(*db, 3000, 50);
    db->exec("COMMIT");

    auto reader = Db::open(path, {.read_only = true});
    ASSERT_TRUE(reader);
    EXPECT_EQ(count(**reader, "SELECT count(*) FROM t"), 250);
    EXPECT_EQ(count(**reader, "SELECT sum(n) FROM t"), 400);
    EXPECT_EQ(count(**reader, "SELECT count(*) FROM t WHERE id >= 1000 AND id < 3000"), 0);
    EXPECT_EQ(integrity(**reader), "ok");
    db.reset();
    expect_reopened(path, 250);
}

// Frames a rolled-back transaction spilled to the WAL are garbage past the last commit; if they
// reached the file only later, they would land on the frames another connection committed at
// the same offsets in between (a second writer: an operator's sqlite3 shell, another tool).
TEST(WalVfs, ARolledBackTransactionsFramesNeverOverwriteAnotherWritersCommit) {
    TempDir dir;
    auto path = dir.path() / "a.db";
    auto a = open_rw(path);
    a->exec("CREATE TABLE t (id INTEGER PRIMARY KEY, payload BLOB)");
    fill(*a, 0, 10);
    auto b = open_rw(path);
    // An empty log: the rollback then reads nothing from it (a read would write the frames
    // out at once, before b's commit).
    a->exec("PRAGMA wal_checkpoint(TRUNCATE)");
    a->exec("PRAGMA cache_size = 8");
    a->exec("BEGIN IMMEDIATE");
    fill(*a, 1000, 200);  // spills frames to the WAL
    a->exec("ROLLBACK");
    b->exec("BEGIN IMMEDIATE");
    fill(*b, 5000, 100);
    b->exec("COMMIT");
    EXPECT_EQ(count(*a, "SELECT count(*) FROM t"), 110);  // a's next read
    EXPECT_EQ(count(*b, "SELECT count(*) FROM t WHERE id >= 5000"), 100);
    a.reset();
    b.reset();
    expect_reopened(path, 110);
}

TEST(WalVfs, AProcessKilledRightAfterItsCommitsLosesNone) {
    TempDir dir;
    auto path = dir.path() / "a.db";
    open_rw(path)->exec("CREATE TABLE t (id INTEGER PRIMARY KEY, payload BLOB)");
    constexpr int k_commits = 20;
    pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
        // No close, no destructor: the process dies as it would on a crash.
        auto db = Db::open(path);
        if (!db) ::_exit(3);
        for (int i = 0; i < k_commits; ++i) {
            (*db)->exec("BEGIN IMMEDIATE");
            fill(**db, i * 10, 10);
            (*db)->exec("COMMIT");
        }
        (*db)->exec("BEGIN IMMEDIATE");
        fill(**db, 100000, 10);  // not committed
        ::raise(SIGKILL);
        ::_exit(4);
    }
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFSIGNALED(status)) << "child exited with " << WEXITSTATUS(status);
    expect_reopened(path, k_commits * 10);  // every commit, not the open transaction
}

}  // namespace
}  // namespace crcrd::store
