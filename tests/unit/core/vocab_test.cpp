// core/vocab.hpp: every name round-trips, unknown text is refused, the predicates and ranks
// match what sched and report decided with strings, and the schema's CHECK constraints accept
// every name of their column's enum and refuse a bogus one.
#include "crcrd/core/vocab.hpp"

#include <nlohmann/json.hpp>

#include "crcrd/config/config.hpp"
#include "crcrd/core/result.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "crcrd/store/schema.hpp"
#include "crcrd/store/sqlite.hpp"
#include "support/temp_dir.hpp"

namespace crcrd {
namespace {

template <class E>
void expect_round_trip(std::size_t size) {
    ASSERT_EQ(names<E>().size(), size);
    for (std::size_t i = 0; i < names<E>().size(); ++i) {
        const auto e = static_cast<E>(i);
        const auto name = to_string(e);
        EXPECT_FALSE(name.empty());
        EXPECT_EQ(name, names<E>()[i]);
        EXPECT_EQ(from_string<E>(name), e) << name;
    }
    for (std::string_view bogus : {"", "Queued", "passed ", "bogus", "drained", "again", "Pending"})
        EXPECT_FALSE(from_string<E>(bogus)) << bogus;
}

TEST(Vocab, EveryNameRoundTripsAndUnknownTextIsRefused) {
    expect_round_trip<RunState>(4);
    expect_round_trip<JobState>(5);
    expect_round_trip<Conclusion>(8);
    expect_round_trip<RunEvent>(5);
    expect_round_trip<Verdict>(6);
    expect_round_trip<Sink>(3);
    expect_round_trip<OutboxDelivery>(4);
    expect_round_trip<SlotState>(3);
    expect_round_trip<TestOutcome>(4);
    expect_round_trip<FollowupKind>(3);
    expect_round_trip<BisectionState>(8);
    expect_round_trip<GithubState>(4);
}

// nlohmann::json writes an enum by its name and reads only its names (by default it would write
// the enumerator's number: a job's metadata once said "isolation": 0).
TEST(Vocab, JsonWritesAndReadsNamesNotNumbers) {
    EXPECT_EQ(nlohmann::json(RunEvent::push), "push");
    EXPECT_EQ(nlohmann::json(Conclusion::pre_existing), "pre_existing");
    EXPECT_EQ(nlohmann::json(config::Isolation::user), "user");
    EXPECT_EQ(nlohmann::json(Errc::bad_request), "bad_request");
    const nlohmann::json status = {{"state", GithubState::failure}};
    EXPECT_EQ(status.dump(), R"({"state":"failure"})");
    EXPECT_EQ(nlohmann::json("tier").get<config::RerunScope>(), config::RerunScope::tier);
    EXPECT_THROW(nlohmann::json(1).get<RunEvent>(), std::exception);
    EXPECT_THROW(nlohmann::json("Push").get<RunEvent>(), std::invalid_argument);
}

TEST(Vocab, UsableAtCompileTime) {
    static_assert(to_string(RunState::cancelled) == "cancelled");
    static_assert(from_string<Sink>("callback") == Sink::callback);
}

template <class Names>
std::string joined(const Names& n) {
    std::string out;
    for (std::string_view x : n) out += (out.empty() ? "" : ", ") + std::string(x);
    return out;
}

// The admin API's "must be one of ..." messages list names<E>() in this order: as they always did.
TEST(Vocab, AdminListsAreTheOldOnes) {
    EXPECT_EQ(joined(names<RunState>()), "queued, running, completed, cancelled");
    EXPECT_EQ(joined(std::span(names<Conclusion>()).first(names<Conclusion>().size() - 1)),
              "passed, flaky, regression, infra_error, device_unavailable, timeout, cancelled");
    // bisect (docs/verdicts.md) is new: it comes last.
    EXPECT_EQ(joined(names<RunEvent>()), "pull_request, push, schedule, manual, bisect");
    EXPECT_EQ(joined(names<Verdict>()), "queued, duplicate, ignored, cancelled, pong, rejected");
    EXPECT_EQ(joined(names<OutboxDelivery>()), "waiting, sent, dead, coalesced");
    EXPECT_EQ(joined(names<Sink>()), "github, file, callback");
    EXPECT_EQ(joined(names<TestOutcome>()), "passed, failed, skipped, flaky");
}

TEST(Vocab, Predicates) {
    EXPECT_TRUE(is_open(RunState::queued));
    EXPECT_TRUE(is_open(RunState::running));
    EXPECT_FALSE(is_open(RunState::completed));
    EXPECT_FALSE(is_open(RunState::cancelled));
    for (auto s : {JobState::queued, JobState::leased, JobState::running}) EXPECT_TRUE(is_open(s));
    for (auto s : {JobState::completed, JobState::cancelled}) EXPECT_FALSE(is_open(s));
    for (std::size_t i = 0; i < names<Conclusion>().size(); ++i) {
        const auto c = static_cast<Conclusion>(i);
        const auto n = to_string(c);
        EXPECT_EQ(is_pass(c), n == "passed" || n == "flaky" || n == "pre_existing") << n;
        EXPECT_EQ(is_infra(c), n == "infra_error" || n == "device_unavailable") << n;
    }
    EXPECT_EQ(display_state(SlotState::idle, true), "drained");
    EXPECT_EQ(display_state(SlotState::idle, false), "idle");
    EXPECT_EQ(display_state(SlotState::busy, true), "busy");
    EXPECT_EQ(display_state(SlotState::offline, true), "offline");
}

TEST(Vocab, SeverityIsTheContractsOrderWithCancelledLast) {
    // docs/verdicts.md: regression > infra_error > device_unavailable > timeout > pre_existing >
    // flaky > passed; a class not in it (cancelled) ranks after.
    const std::vector<std::string_view> old = {"regression", "infra_error",  "device_unavailable",
                                               "timeout",    "pre_existing", "flaky",
                                               "passed"};
    for (std::size_t i = 0; i < names<Conclusion>().size(); ++i) {
        const auto c = static_cast<Conclusion>(i);
        const auto at = std::find(old.begin(), old.end(), to_string(c));
        EXPECT_EQ(severity(c), static_cast<int>(at - old.begin())) << to_string(c);
    }
}

// The schema's columns that hold a vocabulary: an INSERT with the value as parameter 1.
struct Column {
    std::string what;
    std::string insert_sql;
    std::vector<std::string_view> names;
    bool checked;  // the column has a CHECK list; conclusions and test outcomes have none
};

TEST(Vocab, SchemaAcceptsEveryNameOfItsColumnAndRefusesABogusOne) {
    TempDir dir;
    auto opened = store::Db::open(dir.path() / "v.db");
    ASSERT_TRUE(opened) << opened.error().message;
    auto& db = **opened;
    ASSERT_TRUE(store::migrate(db));
    db.exec(
        "INSERT INTO runs (id, event, sha, state, created_at) VALUES "
        "(1, 'push', 'c4295bd74fb0f4fda03689c3df3f2803b658fd85', 'queued', 'now')");
    db.exec(
        "INSERT INTO jobs (id, run_id, tier, position, state, timeout_ms, created_at) VALUES "
        "(1, 1, 't', 0, 'queued', 1, 'now')");
    const std::string sha = "'c4295bd74fb0f4fda03689c3df3f2803b658fd85'";
    // Runs for the bisections of bisections.state's names (one each: bad_run_id is unique).
    for (int i = 0; i < 10; ++i)
        db.exec("INSERT INTO runs (event, sha, state, created_at) VALUES ('push', " + sha +
                ", 'queued', 'now')");
    auto list = [](const auto& a) { return std::vector<std::string_view>(a.begin(), a.end()); };
    const std::vector<Column> columns = {
        {"runs.state",
         "INSERT INTO runs (event, sha, state, created_at) VALUES ('push', " + sha + ", ?, 'now')",
         list(names<RunState>()), true},
        {"runs.event",
         "INSERT INTO runs (event, sha, state, created_at) VALUES (?, " + sha +
             ", 'queued', 'now')",
         list(names<RunEvent>()), true},
        {"jobs.state",
         "INSERT INTO jobs (run_id, tier, position, state, timeout_ms, created_at) VALUES (1, 't', "
         "0, ?, 1, 'now')",
         list(names<JobState>()), true},
        {"deliveries.verdict",
         "INSERT INTO deliveries (received_at, verdict, http_status) VALUES ('now', ?, 202)",
         list(names<Verdict>()), true},
        {"slots.state", "INSERT INTO slots (name, state) VALUES (hex(randomblob(8)), ?)",
         list(names<SlotState>()), true},
        {"outbox.sink",
         "INSERT INTO outbox (sink, run_id, sha, context, state, created_at) VALUES (?, 1, 'x', "
         "'crcr', 'pending', 'now')",
         list(names<Sink>()), true},
        {"outbox.delivery",
         "INSERT INTO outbox (sink, run_id, sha, context, state, created_at, delivery) "
         "VALUES ('github', 1, 'x', 'crcr', 'pending', 'now', ?)",
         list(names<OutboxDelivery>()), true},
        {"jobs.conclusion",
         "INSERT INTO jobs (run_id, tier, position, state, conclusion, timeout_ms, created_at) "
         "VALUES (1, 't', 0, 'completed', ?, 1, 'now')",
         list(names<Conclusion>()), false},
        {"runs.conclusion",
         "INSERT INTO runs (event, sha, state, conclusion, created_at) VALUES ('push', " + sha +
             ", 'completed', ?, 'now')",
         list(names<Conclusion>()), false},
        {"followups.kind", "INSERT INTO followups (run_id, kind) VALUES (1, ?)",
         list(names<FollowupKind>()), true},
        {"bisections.state",
         "INSERT INTO bisections (bad_run_id, tier, tests, state, bad_sha, created_at) VALUES "
         "((SELECT count(*) FROM bisections) + 2, 't', '[]', ?, 'x', 'now')",
         list(names<BisectionState>()), true},
        {"test_results.outcome",
         "INSERT INTO test_results (job_id, name, outcome) VALUES (1, 'a', ?)",
         list(names<TestOutcome>()), false},
    };
    auto insert = [&](const Column& c, std::string_view value) {
        auto st = db.prepare(c.insert_sql);
        st.bind(1, value);
        st.run();
    };
    for (const auto& c : columns) {
        for (auto name : c.names) EXPECT_NO_THROW(insert(c, name)) << c.what << " refused " << name;
        if (c.checked) {
            EXPECT_THROW(insert(c, "bogus"), store::SqlError) << c.what << " accepted a bogus name";
        }
    }
}

}  // namespace
}  // namespace crcrd
