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
