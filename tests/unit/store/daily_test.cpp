// The daily roll-ups (crcrd/store/daily.hpp, migration 22): what the triggers keep when runs and
// attempts end, that store::rebuild_daily() makes the same rows from the history, and that the
// migration fills them in its own transaction.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <tuple>
#include <vector>

#include "crcrd/store/daily.hpp"
#include "crcrd/store/schema.hpp"
#include "crcrd/store/sqlite.hpp"
#include "support/temp_dir.hpp"

namespace crcrd::store {
namespace {

std::unique_ptr<Db> open_db(const std::filesystem::path& p, int version = 0) {
    auto db = Db::open(p);
    EXPECT_TRUE(db) << (db ? "" : db.error().message);
    EXPECT_TRUE(version ? migrate(**db, version) : migrate(**db));
    return std::move(*db);
}

int columns(const std::string& table) {
    if (table == "daily_runs") return 4;
    if (table == "daily_tiers") return 8;
    if (table == "daily_busy") return 5;
    return 6;  // daily_waits
}

/// Every row of roll-up `table`, each as its columns joined by '|', in key order.
std::vector<std::string> rows(Db& db, const std::string& table) {
    std::string order = " ORDER BY 1";
    for (int i = 2; i <= std::min(5, columns(table)); ++i) order += ", " + std::to_string(i);
    auto st = db.prepare("SELECT * FROM " + table + order);
    std::vector<std::string> out;
    while (st.step()) {
        std::string line;
        for (int i = 0; i < columns(table); ++i) line += (i ? "|" : "") + st.text(i);
        out.push_back(line);
    }
    return out;
}

std::vector<std::string> all_rollups(Db& db) {
    std::vector<std::string> out;
    for (const char* t : {"daily_runs", "daily_tiers", "daily_busy", "daily_waits"})
        for (auto& r : rows(db, t)) out.push_back(std::string(t) + ": " + r);
    return out;
}

constexpr const char* k_sha = "ec26c3e57ca3a959ca5aad62de7213c562f8c821";

/// A push run planned at 22:00 on the 1st: the build stage (build-0), import and smoke, all
/// created at plan time as the planner does. The build waits 1 s and builds for 10 min; import
/// gets card-0 2 s after the build and runs 3 h, past midnight; smoke waits for a card an hour
/// after import and gives up (device_unavailable, never started).
void a_long_push(Db& db) {
    db.exec(std::string("INSERT INTO runs (id, event, sha, ref, state, created_at) VALUES (1, "
                        "'push', '") +
            k_sha + "', 'refs/heads/main', 'running', '2026-03-01T22:00:00.000Z')");
    db.exec(
        "INSERT INTO jobs (id, run_id, tier, position, state, timeout_ms, created_at) VALUES "
        "(1, 1, 'build', -1, 'queued', 1, '2026-03-01T22:00:00.000Z'), "
        "(2, 1, 'import', 0, 'queued', 1, '2026-03-01T22:00:00.000Z'), "
        "(3, 1, 'smoke', 1, 'queued', 1, '2026-03-01T22:00:00.000Z')");
    db.exec(
        "UPDATE jobs SET state = 'running', slot = 'build-0', started_at = "
        "'2026-03-01T22:00:01.000Z' WHERE id = 1");
    db.exec(
        "UPDATE jobs SET state = 'completed', conclusion = 'passed', finished_at = "
        "'2026-03-01T22:10:00.000Z' WHERE id = 1");
    db.exec(
        "UPDATE jobs SET state = 'running', slot = 'card-0', started_at = "
        "'2026-03-01T22:10:02.000Z' WHERE id = 2");
    db.exec(
        "UPDATE jobs SET state = 'completed', conclusion = 'passed', finished_at = "
        "'2026-03-02T01:10:02.000Z' WHERE id = 2");
    db.exec(
        "UPDATE jobs SET state = 'completed', conclusion = 'device_unavailable', finished_at = "
        "'2026-03-02T02:10:02.000Z' WHERE id = 3");
    db.exec(
        "UPDATE runs SET state = 'completed', conclusion = 'device_unavailable', finished_at = "
        "'2026-03-02T02:10:02.000Z' WHERE id = 1");
}

/// A pull request's run on the 2nd: import fails, its rerun fails too, its base check says the
/// failure was there before (the tier's last attempt: pre_existing); then a bisect run and a
/// superseded (cancelled) push whose import passed before it was cancelled.
void other_runs(Db& db) {
    db.exec(std::string("INSERT INTO runs (id, event, sha, pr, state, created_at) VALUES (2, "
                        "'pull_request', '") +
            k_sha + "', 7, 'running', '2026-03-02T10:00:00.000Z')");
    db.exec(
        "INSERT INTO jobs (id, run_id, tier, position, attempt, state, timeout_ms, created_at, "
        "base_check) VALUES "
        "(10, 2, 'import', 0, 1, 'queued', 1, '2026-03-02T10:00:00.000Z', NULL), "
        "(11, 2, 'import', 0, 2, 'queued', 1, '2026-03-02T10:20:00.000Z', NULL), "
        "(12, 2, 'import', 0, 3, 'queued', 1, '2026-03-02T10:40:00.000Z', '[\"t::a\"]')");
    for (const auto& [id, start, end, c] :
         std::vector<std::tuple<int, std::string, std::string, std::string>>{
             {10, "10:00:00.500", "10:20:00.000", "regression"},
             {11, "10:21:00.000", "10:40:00.000", "regression"},
             {12, "10:40:10.000", "11:00:00.000", "pre_existing"}}) {
        db.exec("UPDATE jobs SET state = 'running', slot = 'card-1', started_at = '2026-03-02T" +
                start + "Z' WHERE id = " + std::to_string(id));
        db.exec("UPDATE jobs SET state = 'completed', conclusion = '" + c +
                "', finished_at = '2026-03-02T" + end + "Z' WHERE id = " + std::to_string(id));
    }
    db.exec(
        "UPDATE runs SET state = 'completed', conclusion = 'pre_existing', finished_at = "
        "'2026-03-02T11:00:00.000Z' WHERE id = 2");
    db.exec(std::string("INSERT INTO runs (id, event, sha, state, created_at) VALUES (3, "
                        "'bisect', '") +
            k_sha + "', 'running', '2026-03-02T12:00:00.000Z')");
    db.exec(
        "INSERT INTO jobs (id, run_id, tier, position, state, slot, timeout_ms, created_at, "
        "started_at) VALUES (20, 3, 'import', 0, 'running', 'card-1', 1, "
        "'2026-03-02T12:00:00.000Z', '2026-03-02T12:00:00.000Z')");
    db.exec(
        "UPDATE jobs SET state = 'completed', conclusion = 'regression', finished_at = "
        "'2026-03-02T12:30:00.000Z' WHERE id = 20");
    db.exec(
        "UPDATE runs SET state = 'completed', conclusion = 'regression', finished_at = "
        "'2026-03-02T12:30:00.000Z' WHERE id = 3");
    db.exec(std::string("INSERT INTO runs (id, event, sha, ref, state, created_at) VALUES (4, "
                        "'push', '") +
            k_sha + "', 'refs/heads/main', 'running', '2026-03-02T13:00:00.000Z')");
    db.exec(
        "INSERT INTO jobs (id, run_id, tier, position, state, slot, timeout_ms, created_at, "
        "started_at) VALUES (30, 4, 'import', 0, 'running', 'card-0', 1, "
        "'2026-03-02T13:00:00.000Z', '2026-03-02T13:00:00.000Z'), (31, 4, 'smoke', 1, 'queued', "
        "NULL, 1, '2026-03-02T13:00:00.000Z', NULL)");
    db.exec(
        "UPDATE jobs SET state = 'completed', conclusion = 'passed', finished_at = "
        "'2026-03-02T13:10:00.000Z' WHERE id = 30");
    // Superseded: the run first, then its open jobs (RunsRepo::cancel's order).
    db.exec(
        "UPDATE runs SET state = 'cancelled', conclusion = 'cancelled', finished_at = "
        "'2026-03-02T13:11:00.000Z' WHERE id = 4");
    db.exec(
        "UPDATE jobs SET state = 'cancelled', conclusion = 'cancelled', finished_at = "
        "'2026-03-02T13:11:00.000Z' WHERE id = 31");
}

TEST(Daily, TriggersCountWaitsFromWhenAnAttemptCouldStartAndSplitRunningTimeAtMidnight) {
    TempDir dir;
    auto db = open_db(dir.path() / "d.db");
    a_long_push(*db);
    // Smoke waited from import's end (01:10:02) until it gave up an hour later, not from its
    // creation at plan time (4 h 10 min); import from the build's end, 2 s. The build stage's
    // wait (1 s, build-0) is its own tier's.
    EXPECT_EQ(
        rows(*db, "daily_waits"),
        (std::vector<std::string>{"2026-03-01|build|2|-1|1|1000", "2026-03-01|import|3|0|1|2000",
                                  "2026-03-02|smoke|14|1|1|3600000"}));
    // Import's 3 h on card-0: 1 h 49 min 58 s before midnight, 1 h 10 min 2 s after.
    EXPECT_EQ(rows(*db, "daily_busy"),
              (std::vector<std::string>{"2026-03-01|build-0|build|-1|599000",
                                        "2026-03-01|card-0|import|0|6598000",
                                        "2026-03-02|card-0|import|0|4202000"}));
    EXPECT_EQ(rows(*db, "daily_tiers"),
              (std::vector<std::string>{
                  "2026-03-02|push|device_unavailable|build|passed|-1|1|599000",
                  "2026-03-02|push|device_unavailable|import|passed|0|1|10800000",
                  "2026-03-02|push|device_unavailable|smoke|device_unavailable|1|1|0"}));
    EXPECT_EQ(rows(*db, "daily_runs"),
              (std::vector<std::string>{"2026-03-02|push|device_unavailable|1"}));
}

TEST(Daily, ARunCountsEachTiersLastAttemptAndEveryAttemptsTimeAndCancelledRunsNoTier) {
    TempDir dir;
    auto db = open_db(dir.path() / "d.db");
    other_runs(*db);
    // The PR's import: one run whose last attempt (the base check) says pre_existing, with the
    // three attempts' time; the bisect run's under its event; the superseded push none.
    EXPECT_EQ(rows(*db, "daily_tiers"),
              (std::vector<std::string>{
                  "2026-03-02|bisect|regression|import|regression|0|1|1800000",
                  "2026-03-02|pull_request|pre_existing|import|pre_existing|0|1|3529500"}));
    EXPECT_EQ(rows(*db, "daily_runs"),
              (std::vector<std::string>{"2026-03-02|bisect|regression|1",
                                        "2026-03-02|pull_request|pre_existing|1",
                                        "2026-03-02|push|cancelled|1"}));
    // The rerun waited from its creation (1 min), the base check 10 s; the cancelled smoke that
    // never started is no wait.
    EXPECT_EQ(rows(*db, "daily_waits"),
              (std::vector<std::string>{"2026-03-02|import|0|0|2|0", "2026-03-02|import|1|0|1|500",
                                        "2026-03-02|import|5|0|1|10000",
                                        "2026-03-02|import|8|0|1|60000"}));
}

TEST(Daily, ARebuildFromTheHistoryMakesWhatTheTriggersMade) {
    TempDir dir;
    auto db = open_db(dir.path() / "d.db");
    a_long_push(*db);
    other_runs(*db);
    const auto kept = all_rollups(*db);
    ASSERT_FALSE(kept.empty());
    db->exec("DELETE FROM daily_busy; UPDATE daily_runs SET runs = 99;");
    EXPECT_GT(rebuild_daily(*db), 0);
    EXPECT_EQ(all_rollups(*db), kept);
}

TEST(Daily, TheWaitBucketsOfTheSchemaAreThoseOfTheCode) {
    TempDir dir;
    auto db = open_db(dir.path() / "d.db");
    auto st = db->prepare("SELECT bucket, bound_ms FROM wait_bounds ORDER BY bucket");
    std::size_t i = 0;
    while (st.step()) {
        ASSERT_LT(i, k_wait_bounds_ms.size());
        EXPECT_EQ(st.int64(0), static_cast<std::int64_t>(i));
        EXPECT_EQ(st.int64(1), k_wait_bounds_ms[i]);
        ++i;
    }
    EXPECT_EQ(i, k_wait_bounds_ms.size());
}

TEST(Daily, TheMigrationFillsTheRollupsInItsOwnTransaction) {
    TempDir dir;
    // A history made under schema 21 (its roll-ups lost, as a crash after 20 left them).
    auto db = open_db(dir.path() / "d.db", 21);
    a_long_push(*db);
    db->exec("DELETE FROM daily_runs; DELETE FROM daily_jobs; DELETE FROM daily_waits;");
    // A fill that fails leaves the database at 21, nothing half done.
    db->exec(
        "CREATE TEMP TRIGGER refuse BEFORE INSERT ON daily_runs BEGIN SELECT RAISE(ABORT, "
        "'refused'); END;");
    EXPECT_FALSE(migrate(*db));
    auto version = [&] {
        auto st = db->prepare("PRAGMA user_version");
        st.step();
        return st.int64(0);
    };
    EXPECT_EQ(version(), 21);
    auto tables = db->prepare("SELECT count(*) FROM sqlite_schema WHERE name = 'daily_tiers'");
    tables.step();
    EXPECT_EQ(tables.int64(0), 0);
    tables.reset();
    db->exec("DROP TRIGGER temp.refuse");
    ASSERT_TRUE(migrate(*db));
    EXPECT_EQ(version(), schema_version());
    EXPECT_EQ(rows(*db, "daily_runs"),
              (std::vector<std::string>{"2026-03-02|push|device_unavailable|1"}));
    EXPECT_EQ(rows(*db, "daily_waits").size(), 3u);
}

}  // namespace
}  // namespace crcrd::store
