// The outbox's counts (schema 15, what the scrape's outbox gauges read) on a real, migrated
// SQLite file: after any sequence of what the daemon does to outbox rows (appends and the rows
// they coalesce, sent, dead and retried attempts, requeues, retention, rolled-back items) they
// equal a fresh count of the rows, and read_gauges() answers what the per-scrape counts of
// the rows answered; the migration counts the rows a database held before it; the triggers
// that keep them fill no temporary table.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <map>
#include <random>
#include <set>
#include <tuple>
#include <utility>

#include "crcrd/store/deliveries.hpp"
#include "crcrd/store/metrics.hpp"
#include "crcrd/store/outbox.hpp"
#include "crcrd/store/retention.hpp"
#include "crcrd/store/schema.hpp"
#include "crcrd/store/sqlite.hpp"
#include "support/migrated_db.hpp"

namespace crcrd::store {
namespace {

const std::string k_sha = "c4295bd74fb0f4fda03689c3df3f2803b658fd85";

/// (sink, delivery) → (rows, of them last answered 401 or 403).
using Counts = std::map<std::pair<std::string, std::string>, std::pair<std::int64_t, std::int64_t>>;

/// The outbox's rows counted now, one by one.
Counts counted(Db& db) {
    auto st = db.prepare(
        "SELECT sink, delivery, count(*), total(http_status IN (401, 403)) FROM outbox GROUP BY "
        "1, 2");
    Counts out;
    while (st.step())
        out[{st.text(0), st.text(1)}] = {st.int64(2), static_cast<std::int64_t>(st.real(3))};
    return out;
}

/// What outbox_counts holds, its pairs that count nothing left out.
Counts kept(Db& db) {
    auto st = db.prepare(
        "SELECT sink, delivery, n, rejected FROM outbox_counts WHERE n <> 0 OR rejected <> 0");
    Counts out;
    while (st.step()) out[{st.text(0), st.text(1)}] = {st.int64(2), st.int64(3)};
    return out;
}

using Family = std::vector<std::pair<std::string, std::int64_t>>;

Family family(const std::vector<LabelledCount>& counts) {
    Family out;
    for (const auto& c : counts) out.emplace_back(c.labels.at(0), c.value);
    return out;
}

Family grouped(Db& db, const std::string& sql) {
    auto st = db.prepare(sql);
    Family out;
    while (st.step()) out.emplace_back(st.text(0), st.int64(1));
    return out;
}

/// The outbox's gauges as read_gauges() read them before schema 15: counted at the scrape.
std::tuple<Family, Family, Family, std::optional<std::string>> scraped_by_counting(Db& db) {
    auto oldest = db.prepare("SELECT min(created_at) FROM outbox WHERE delivery = 'waiting'");
    oldest.step();
    return {
        grouped(db, "SELECT sink, count(*) FROM outbox WHERE delivery = 'waiting' GROUP BY sink"),
        grouped(db, "SELECT sink, count(*) FROM outbox WHERE delivery = 'dead' GROUP BY sink"),
        grouped(db,
                "SELECT sink, count(*) FROM outbox WHERE delivery = 'waiting' AND http_status "
                "IN (401, 403) GROUP BY sink"),
        oldest.opt_text(0)};
}

std::string minute(std::int64_t m) {
    return rfc3339(*parse_rfc3339("2026-11-29T00:00:00.000Z") + std::chrono::minutes(m));
}

class OutboxCountsTest : public MigratedDbTest {
  protected:
    void SetUp() override {
        MigratedDbTest::SetUp();
        if (HasFatalFailure()) return;
        db->exec("PRAGMA synchronous = OFF");  // thousands of commits; none needs to be durable
        NewRun r;
        r.event = RunEvent::push;
        r.sha = k_sha;
        run = insert_run(*db, r, *parse_rfc3339("2026-11-29T00:00:00.000Z"));
    }

    std::vector<std::int64_t> ids(const std::string& delivery) {
        auto st = db->prepare("SELECT id FROM outbox WHERE delivery = ?");
        st.bind(1, delivery);
        std::vector<std::int64_t> out;
        while (st.step()) out.push_back(st.int64(0));
        return out;
    }

    std::int64_t run = 0;
};

// One step of what the daemon does to the outbox, chosen at random.
enum class Step { append, attempt, requeue, prune, rolled_back };

TEST_F(OutboxCountsTest, TheCountsEqualACountOfTheRowsAfterAnySequenceOfChanges) {
    const std::array<Sink, 3> sinks = {Sink::github, Sink::file, Sink::callback};
    const std::array<std::string, 3> shas = {"1111111111111111111111111111111111111111",
                                             "2222222222222222222222222222222222222222", k_sha};
    const std::array<const char*, 3> contexts = {"crcr", "crcr/smoke", "crcr/import"};
    // What the sender stores: a kind and the HTTP status it was answered (none: no answer).
    const std::vector<std::pair<AttemptRecord::Kind, std::optional<std::int64_t>>> attempts = {
        {AttemptRecord::Kind::sent, 201},          {AttemptRecord::Kind::sent, std::nullopt},
        {AttemptRecord::Kind::dead, 422},          {AttemptRecord::Kind::dead, 401},
        {AttemptRecord::Kind::again, 401},         {AttemptRecord::Kind::again, 403},
        {AttemptRecord::Kind::again, 500},         {AttemptRecord::Kind::again, 429},
        {AttemptRecord::Kind::again, std::nullopt}};
    OutboxRepo repo(*db);
    std::int64_t now = 0;
    std::set<std::string> reached;  // delivery states with rows, and with rows answered 401/403
    for (unsigned seed : {1u, 2u, 3u, 4u, 5u}) {
        std::mt19937 rng(seed);
        auto pick = [&rng](std::size_t n) { return static_cast<std::size_t>(rng() % n); };
        std::map<Step, int> taken;
        for (int i = 0; i < 400; ++i) {
            ++now;
            const unsigned roll = rng() % 100;
            const Step step = roll < 40   ? Step::append
                              : roll < 75 ? Step::attempt
                              : roll < 85 ? Step::requeue
                              : roll < 90 ? Step::prune
                                          : Step::rolled_back;
            auto append = [&] {
                NewStatusRow row;
                row.sink = sinks[pick(sinks.size())];
                row.run_id = run;
                row.sha = shas[pick(shas.size())];
                row.context = contexts[pick(contexts.size())];
                row.state = "pending";
                row.created_at = minute(now);
                repo.append(row);
            };
            // A waiting row, or now and then one coalesced while it was in flight.
            auto attempt = [&] {
                auto rows = ids(rng() % 5 == 0 ? "coalesced" : "waiting");
                if (rows.empty()) return false;
                const auto& [kind, status] = attempts[pick(attempts.size())];
                AttemptRecord a;
                a.id = rows[pick(rows.size())];
                a.kind = kind;
                a.http_status = status;
                if (kind == AttemptRecord::Kind::again) a.next_attempt_at = minute(now + 1);
                repo.record_attempts({a}, *parse_rfc3339(minute(now)));
                return true;
            };
            switch (step) {
                case Step::append:
                    append();
                    break;
                case Step::attempt:
                    if (!attempt()) continue;
                    break;
                case Step::requeue: {
                    auto dead = ids("dead");
                    if (dead.empty()) continue;
                    repo.requeue_dead(dead[pick(dead.size())]);  // or refused: a newer status
                    break;
                }
                case Step::prune:
                    prune(*db, *parse_rfc3339(minute(now - static_cast<std::int64_t>(pick(60)))));
                    break;
                case Step::rolled_back:  // a writer item that threw
                    db->exec("SAVEPOINT item");
                    append();
                    attempt();
                    db->exec("ROLLBACK TO item");
                    db->exec("RELEASE item");
                    break;
            }
            ++taken[step];
            const auto c = counted(*db);
            ASSERT_EQ(kept(*db), c) << "seed " << seed << ", step " << i;
            for (const auto& [key, n] : c) {
                if (n.first > 0) reached.insert(key.second);
                if (n.second > 0) reached.insert(key.second + " 401/403");
            }
            // What a scrape reads equals what it counted before.
            auto g = read_gauges(*db);
            ASSERT_TRUE(g) << g.error().message;
            const auto [waiting, dead, rejected, oldest] = scraped_by_counting(*db);
            ASSERT_EQ(family(g->outbox_waiting), waiting) << "seed " << seed << ", step " << i;
            ASSERT_EQ(family(g->outbox_dead), dead) << "seed " << seed << ", step " << i;
            ASSERT_EQ(family(g->outbox_credentials_rejected), rejected)
                << "seed " << seed << ", step " << i;
            ASSERT_EQ(g->oldest_waiting_created_at, oldest) << "seed " << seed << ", step " << i;
        }
        for (auto s : {Step::append, Step::attempt, Step::requeue, Step::prune, Step::rolled_back})
            EXPECT_GT(taken[s], 0)
                << "seed " << seed << ": step " << static_cast<int>(s) << " never taken";
    }
    // The sequences reached every state, and waiting rows answered 401 or 403.
    EXPECT_EQ(reached,
              (std::set<std::string>{"coalesced", "coalesced 401/403", "dead", "dead 401/403",
                                     "sent", "waiting", "waiting 401/403"}));
    // And the counts never went below zero.
    auto negative = db->prepare("SELECT count(*) FROM outbox_counts WHERE n < 0 OR rejected < 0");
    negative.step();
    EXPECT_EQ(negative.int64(0), 0);
}

TEST_F(OutboxCountsTest, NoRowsReadAsNoGauges) {
    auto g = read_gauges(*db);
    ASSERT_TRUE(g) << g.error().message;
    EXPECT_TRUE(g->outbox_waiting.empty());
    EXPECT_TRUE(g->outbox_dead.empty());
    EXPECT_TRUE(g->outbox_credentials_rejected.empty());
    EXPECT_FALSE(g->oldest_waiting_created_at);
}

// The counting triggers run in the writer's everyday statements: like the CHECKs of schema 13,
// they must not make any of them fill a temporary table.
TEST_F(OutboxCountsTest, TheCountingTriggersFillNoTemporaryTable) {
    for (const char* sql : {
             "INSERT INTO outbox (sink, run_id, sha, context, state, created_at) VALUES (?, ?, ?, "
             "?, ?, ?)",
             "UPDATE outbox SET delivery = 'coalesced' WHERE id = ?",
             "UPDATE outbox SET delivery = ?, attempts = attempts + 1, http_status = ? WHERE id = "
             "?",
             "UPDATE outbox SET delivery = 'waiting', attempts = 0 WHERE id = ?",
             "DELETE FROM outbox WHERE delivery <> 'waiting' AND created_at < ?",
         }) {
        auto st = db->prepare(std::string("EXPLAIN ") + sql);
        int ephemeral = 0, programs = 0;
        while (st.step()) {
            if (st.text(1) == "OpenEphemeral") ++ephemeral;
            if (st.text(1) == "Program") ++programs;
        }
        EXPECT_EQ(ephemeral, 0) << sql;
        EXPECT_GT(programs, 0) << sql << ": no trigger fires";
    }
}

// A database written by a crcrd before schema 15 has outbox rows in every state: the migration
// counts them, and from then on the triggers keep the counts.
TEST(OutboxCountsMigration, CountsTheRowsADatabaseHeldBeforeIt) {
    TempDir dir;
    auto opened = Db::open(dir.path() / "a.db");
    ASSERT_TRUE(opened) << opened.error().message;
    Db& db = **opened;
    ASSERT_TRUE(migrate(db, 14));
    auto version = db.prepare("PRAGMA user_version");
    ASSERT_TRUE(version.step());
    ASSERT_EQ(version.int64(0), 14);
    version.reset();
    db.exec("INSERT INTO runs (id, event, sha, state, created_at) VALUES (1, 'push', '" + k_sha +
            "', 'completed', '2026-11-29T00:00:00.000Z')");
    auto row = db.prepare(
        "INSERT INTO outbox (sink, run_id, sha, context, state, delivery, http_status, "
        "created_at) VALUES (?, 1, ?, 'crcr', 'success', ?, ?, '2026-11-29T00:00:00.000Z')");
    const std::vector<std::tuple<const char*, const char*, std::optional<std::int64_t>, int>> rows =
        {{"github", "waiting", std::nullopt, 3},
         {"github", "waiting", 401, 2},
         {"github", "waiting", 403, 1},
         {"github", "sent", 201, 5},
         {"github", "dead", 422, 2},
         {"github", "coalesced", std::nullopt, 4},
         {"callback", "waiting", 500, 1},
         {"callback", "dead", 403, 1},
         {"file", "sent", std::nullopt, 7}};
    for (const auto& [sink, delivery, status, n] : rows) {
        for (int i = 0; i < n; ++i) {
            row.reset();
            row.bind(1, sink).bind(2, k_sha).bind(3, delivery).bind(4, status);
            row.run();
        }
    }
    ASSERT_TRUE(migrate(db));
    const Counts expected = {{{"callback", "dead"}, {1, 1}}, {{"callback", "waiting"}, {1, 0}},
                             {{"file", "sent"}, {7, 0}},     {{"github", "coalesced"}, {4, 0}},
                             {{"github", "dead"}, {2, 0}},   {{"github", "sent"}, {5, 0}},
                             {{"github", "waiting"}, {6, 3}}};
    EXPECT_EQ(counted(db), expected);
    EXPECT_EQ(kept(db), expected);

    OutboxRepo repo(db);
    NewStatusRow next;
    next.sink = Sink::github;
    next.run_id = 1;
    next.sha = k_sha;
    next.context = "crcr";  // coalesces the six waiting github rows
    next.state = "failure";
    next.created_at = "2026-11-29T00:01:00.000Z";
    repo.append(next);
    EXPECT_EQ(kept(db), counted(db));
    EXPECT_EQ(kept(db).at({"github", "waiting"}), (std::pair<std::int64_t, std::int64_t>{1, 0}));
}

}  // namespace
}  // namespace crcrd::store
