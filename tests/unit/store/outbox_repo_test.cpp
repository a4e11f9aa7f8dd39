// OutboxRepo on a real, migrated SQLite file: requeue_dead's four outcomes (and that a refusal
// changes nothing), and append() coalescing the older waiting rows of the same context.
#include <gtest/gtest.h>

#include "crcrd/store/deliveries.hpp"
#include "crcrd/store/outbox.hpp"
#include "crcrd/store/schema.hpp"
#include "crcrd/store/sqlite.hpp"
#include "support/migrated_db.hpp"

namespace crcrd::store {
namespace {

const std::string k_sha = "c4295bd74fb0f4fda03689c3df3f2803b658fd85";
const std::string k_other_sha = "ec26c3e57ca3a959ca5aad62de7213c562f8c821";

class OutboxRepoTest : public MigratedDbTest {
  protected:
    void SetUp() override {
        MigratedDbTest::SetUp();
        if (HasFatalFailure()) return;
        NewRun r;
        r.event = RunEvent::push;
        r.sha = k_sha;
        run = insert_run(*db, r, *parse_rfc3339("2026-11-29T00:00:00.000Z"));
    }

    NewStatusRow status(const std::string& context, const std::string& state,
                        Sink sink = Sink::github, const std::string& sha = k_sha) {
        NewStatusRow row;
        row.sink = sink;
        row.run_id = run;
        row.sha = sha;
        row.context = context;
        row.state = state;
        row.description = state + " of " + context;
        row.created_at = "2026-11-29T00:00:01.000Z";
        return row;
    }

    std::string delivery(std::int64_t id) {
        auto st = db->prepare("SELECT delivery FROM outbox WHERE id = ?");
        st.bind(1, id);
        return st.step() ? st.text(0) : "(none)";
    }

    /// delivery, attempts and next_attempt_at of row `id`, as one string.
    std::string row_state(std::int64_t id) {
        auto st = db->prepare(
            "SELECT delivery, attempts, coalesce(next_attempt_at, 'NULL') FROM outbox WHERE id = "
            "?");
        st.bind(1, id);
        if (!st.step()) return "(none)";
        return st.text(0) + " " + std::to_string(st.int64(1)) + " " + st.text(2);
    }

    void set_delivery(std::int64_t id, const std::string& delivery) {
        auto st = db->prepare(
            "UPDATE outbox SET delivery = ?, attempts = 3, next_attempt_at = "
            "'2026-11-29T01:00:00.000Z' WHERE id = ?");
        st.bind(1, delivery).bind(2, id);
        st.run();
    }

    std::int64_t run = 0;
};

TEST_F(OutboxRepoTest, AppendCoalescesOnlyOlderWaitingRowsOfTheSameSinkShaAndContext) {
    OutboxRepo repo(*db);
    const auto sent = repo.append(status("crcr", "pending"));
    set_delivery(sent, "sent");
    const auto first = repo.append(status("crcr", "pending"));
    const auto tier = repo.append(status("crcr/smoke", "pending"));
    const auto file = repo.append(status("crcr", "pending", Sink::file));
    const auto other_sha = repo.append(status("crcr", "pending", Sink::github, k_other_sha));
    EXPECT_LT(sent, first);
    EXPECT_EQ(delivery(first), "waiting");

    const auto second = repo.append(status("crcr", "success"));
    EXPECT_GT(second, other_sha);
    EXPECT_EQ(delivery(second), "waiting");
    EXPECT_EQ(delivery(first), "coalesced");    // an older waiting row of the same key
    EXPECT_EQ(delivery(sent), "sent");          // already sent: kept
    EXPECT_EQ(delivery(tier), "waiting");       // another context
    EXPECT_EQ(delivery(file), "waiting");       // another sink
    EXPECT_EQ(delivery(other_sha), "waiting");  // another SHA

    auto last = repo.last_status(run, Sink::github, "crcr");
    ASSERT_TRUE(last);
    EXPECT_EQ(last->state, "success");
    EXPECT_EQ(last->description, "success of crcr");
    EXPECT_FALSE(repo.last_status(run, Sink::callback, "crcr"));
}

TEST_F(OutboxRepoTest, RequeueDeadRefusesAMissingRow) {
    const auto out = OutboxRepo(*db).requeue_dead(42);
    EXPECT_EQ(out.kind, RequeueOutcome::Kind::not_found);
}

TEST_F(OutboxRepoTest, RequeueDeadRefusesARowThatIsNotDeadAndChangesNothing) {
    OutboxRepo repo(*db);
    const auto id = repo.append(status("crcr", "pending"));
    set_delivery(id, "sent");
    const auto out = repo.requeue_dead(id);
    EXPECT_EQ(out.kind, RequeueOutcome::Kind::not_dead);
    EXPECT_EQ(out.delivery, OutboxDelivery::sent);
    EXPECT_EQ(row_state(id), "sent 3 2026-11-29T01:00:00.000Z");
}

TEST_F(OutboxRepoTest, RequeueDeadRefusesWhenANewerStatusOfTheContextWasReported) {
    OutboxRepo repo(*db);
    const auto dead = repo.append(status("crcr/smoke", "pending"));
    set_delivery(dead, "dead");
    const auto newer = repo.append(status("crcr/smoke", "success"));
    set_delivery(newer, "sent");
    const auto out = repo.requeue_dead(dead);
    EXPECT_EQ(out.kind, RequeueOutcome::Kind::newer_reported);
    EXPECT_EQ(out.context, "crcr/smoke");
    EXPECT_EQ(row_state(dead), "dead 3 2026-11-29T01:00:00.000Z");
}

TEST_F(OutboxRepoTest, RequeueDeadPutsADeadRowBackToWaitingWithNoAttempts) {
    OutboxRepo repo(*db);
    const auto dead = repo.append(status("crcr", "failure"));
    set_delivery(dead, "dead");
    // A newer dead row of the context, or a waiting row of another context, does not stand in the
    // way.
    const auto newer_dead = repo.append(status("crcr", "failure"));
    set_delivery(newer_dead, "dead");
    repo.append(status("crcr/smoke", "pending"));
    const auto out = repo.requeue_dead(dead);
    EXPECT_EQ(out.kind, RequeueOutcome::Kind::requeued);
    EXPECT_EQ(row_state(dead), "waiting 0 NULL");
    EXPECT_EQ(row_state(newer_dead), "dead 3 2026-11-29T01:00:00.000Z");
}

}  // namespace
}  // namespace crcrd::store

namespace crcrd::store {
namespace {

// What the lanes read and count (docs/reporting.md, "Lanes and budget").
class OutboxLaneReadsTest : public OutboxRepoTest {
  protected:
    OutboxQueue queue() {
        auto q = OutboxQueue::open(db_path());
        EXPECT_TRUE(q) << q.error().message;
        return std::move(*q);
    }
    std::vector<std::int64_t> ids(const std::vector<OutboxItem>& rows) {
        std::vector<std::int64_t> out;
        for (const auto& r : rows) out.push_back(r.id);
        return out;
    }
    const SystemTime now = *parse_rfc3339("2026-11-29T00:00:02.000Z");
};

TEST_F(OutboxLaneReadsTest, EachLaneReadsItsOwnRowsInItsOwnOrder) {
    OutboxRepo repo(*db);
    auto at = [&](const std::string& ctx, const std::string& state, std::int64_t prio,
                  const std::string& sha) {
        auto row = status(ctx, state, Sink::github, sha);
        row.priority = prio;
        return repo.append(row);
    };
    const auto progress = at("crcr/a", "pending", 3, k_sha);
    const auto tier_final = at("crcr/b", "success", 1, k_sha);
    const auto first = at("crcr/c", "pending", 2, k_sha);
    const auto verdict = at("crcr", "success", 0, k_sha);
    const auto file1 = repo.append(status("crcr", "success", Sink::file));
    const auto file2 = repo.append(status("crcr/b", "success", Sink::file));
    auto q = queue();
    EXPECT_EQ(ids(q.due(Sink::github, now, LaneOrder::priority).value()),
              (std::vector<std::int64_t>{verdict, tier_final, first, progress}));
    EXPECT_EQ(ids(q.due(Sink::file, now, LaneOrder::fifo).value()),
              (std::vector<std::int64_t>{file1, file2}));
    EXPECT_TRUE(q.due(Sink::callback, now, LaneOrder::fifo).value().empty());
    // A row whose retry time has not come is not due; the lane's next look is that time.
    auto later = db->prepare("UPDATE outbox SET next_attempt_at = ? WHERE id = ?");
    later.bind(1, std::string("2026-11-29T00:05:00.000Z")).bind(2, verdict);
    later.run();
    EXPECT_EQ(ids(q.due(Sink::github, now, LaneOrder::priority).value()),
              (std::vector<std::int64_t>{tier_final, first, progress}));
    EXPECT_EQ(q.earliest_retry(Sink::github).value(), parse_rfc3339("2026-11-29T00:05:00.000Z"));
    EXPECT_EQ(q.earliest_retry(Sink::file).value(), std::nullopt);
}

TEST_F(OutboxLaneReadsTest, RequestsAreCountedBeforeTheyAreMadeAndARequeueForgetsThem) {
    OutboxRepo repo(*db);
    const auto id = repo.append(status("job/1/in_progress", "in_progress", Sink::callback));
    repo.note_request(Sink::callback, id, now);
    repo.note_request(Sink::callback, id, now + std::chrono::seconds(1));
    // The first was refused (a 429: nothing stored), the second got no answer.
    repo.record_attempts({{id, AttemptRecord::Kind::again, 429, "HTTP 429", std::nullopt}}, now);
    auto q = queue();
    auto rows = q.due(Sink::callback, now + std::chrono::seconds(2), LaneOrder::fifo).value();
    ASSERT_EQ(rows.size(), 1u);
    EXPECT_EQ(rows[0].tried, 2);
    EXPECT_EQ(rows[0].refused, 1);
    // The lane's budget reads the requests back, newest window only.
    EXPECT_EQ(q.requests_made(Sink::callback, now).value().size(), 2u);
    EXPECT_EQ(q.requests_made(Sink::callback, now + std::chrono::milliseconds(500)).value().size(),
              1u);
    EXPECT_TRUE(q.requests_made(Sink::github, now).value().empty());
    // Dead, then put back by an operator: it starts afresh.
    repo.record_attempts({{id, AttemptRecord::Kind::dead, 400, "HTTP 400", std::nullopt}}, now);
    ASSERT_EQ(repo.requeue_dead(id).kind, RequeueOutcome::Kind::requeued);
    rows = q.due(Sink::callback, now, LaneOrder::fifo).value();
    ASSERT_EQ(rows.size(), 1u);
    EXPECT_EQ(rows[0].tried, 0);
    EXPECT_EQ(rows[0].refused, 0);
}

TEST_F(OutboxLaneReadsTest, TheRequestLogKeepsADayAndThePriorityOfEachRequest) {
    OutboxRepo repo(*db);
    auto row = status("crcr/smoke", "pending");
    row.priority = 3;  // a progress update: it counts against the lower priorities' shares
    const auto progress = repo.append(row);
    const auto verdict = repo.append(status("crcr", "success"));
    repo.note_request(Sink::github, progress, now);
    repo.note_request(Sink::github, progress, now + std::chrono::hours(25));
    repo.note_request(Sink::github, verdict, now + std::chrono::hours(26));
    auto q = queue();
    EXPECT_EQ(q.requests_made(Sink::github, now - std::chrono::hours(1)).value(),
              (std::vector<MadeRequest>{{now + std::chrono::hours(25), 3},
                                        {now + std::chrono::hours(26), 0}}));
}

}  // namespace
}  // namespace crcrd::store
