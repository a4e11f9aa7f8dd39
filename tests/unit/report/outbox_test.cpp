// The outbox on a real SQLite file: which rows state changes produce, coalescing, the
// 140-character descriptions, and GitHub's limit of 1,000 statuses per SHA and context.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "crcrd/core/compress.hpp"
#include "crcrd/report/outbox.hpp"
#include "crcrd/report/sender.hpp"
#include "crcrd/sched/jobs.hpp"
#include "crcrd/store/deliveries.hpp"
#include "crcrd/store/schema.hpp"
#include "crcrd/store/sqlite.hpp"
#include "crcrd/store/writer.hpp"
#include "support/certs.hpp"
#include "support/fake_clock.hpp"
#include "support/fake_github.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"

namespace crcrd::report {
namespace {

using nlohmann::json;

const std::string k_sha = "c4295bd74fb0f4fda03689c3df3f2803b658fd85";

TEST(Shorten, KeepsShortTextAndCutsLongTextOnACharacterBoundary) {
    EXPECT_EQ(shorten("3 tests passed"), "3 tests passed");
    std::string exact(140, 'a');
    EXPECT_EQ(shorten(exact), exact);
    std::string long_ascii(300, 'b');
    auto cut = shorten(long_ascii);
    EXPECT_EQ(cut.size(), 140u);
    EXPECT_EQ(cut.substr(cut.size() - 3), "\xE2\x80\xA6");
    // 'é' is two bytes: a cut never leaves half of one.
    std::string accents;
    for (int i = 0; i < 100; ++i) accents += "\xC3\xA9";
    auto c2 = shorten(accents);
    EXPECT_LE(c2.size(), 140u);
    std::string body = c2.substr(0, c2.size() - 3);
    EXPECT_EQ(body.size() % 2, 0u);
    EXPECT_EQ(final_status(Conclusion::regression, std::string(200, 'x')).description.size(), 140u);
    EXPECT_EQ(final_status(Conclusion::flaky, "1 test failed, then passed on rerun").state,
              GithubState::success);
    EXPECT_EQ(final_status(Conclusion::device_unavailable, "no slot").state, GithubState::error);
    // pre_existing (docs/verdicts.md): not this change's fault: success, saying so.
    EXPECT_EQ(final_status(Conclusion::pre_existing, "2 tests fail on abcdef0 too").state,
              GithubState::success);
    EXPECT_EQ(final_status(Conclusion::pre_existing, "2 tests fail on abcdef0 too").description,
              "2 tests fail on abcdef0 too");
}

class OutboxTest : public ::testing::Test {
  protected:
    void SetUp() override {
        auto d = store::Db::open(dir.path() / "a.db");
        ASSERT_TRUE(d);
        db = std::move(*d);
        ASSERT_TRUE(store::migrate(*db));
        settings.context_prefix = "crcr/spyre";
        settings.github = true;
    }
    std::int64_t run_with(const std::vector<std::string>& tiers) {
        store::NewRun r;
        r.event = RunEvent::push;
        r.sha = k_sha;
        auto id = store::insert_run(*db, r, *parse_rfc3339("2026-11-29T00:00:00.000Z"));
        for (std::size_t i = 0; i < tiers.size(); ++i) {
            auto st = db->prepare(
                "INSERT INTO jobs (run_id, tier, position, state, timeout_ms, created_at) VALUES "
                "(?,?,?,'queued',1000,'x')");
            st.bind(1, id).bind(2, tiers[i]).bind(3, static_cast<std::int64_t>(i));
            st.run();
        }
        return id;
    }
    /// context=state:delivery for every row, in order.
    std::string rows() {
        auto st = db->prepare(
            "SELECT group_concat(context || '=' || state || ':' || delivery, ' ') FROM (SELECT * "
            "FROM outbox ORDER BY id)");
        st.step();
        return st.text(0);
    }
    TempDir dir;
    std::unique_ptr<store::Db> db;
    OutboxSettings settings;
};

TEST_F(OutboxTest, PlanningAnnouncesPendingAndTheEndGivesEveryContextItsFinalStateOnce) {
    auto run = run_with({"import", "smoke"});
    sync_dirty(*db, settings);
    EXPECT_EQ(rows(),
              "crcr/spyre=pending:waiting crcr/spyre/import=pending:waiting "
              "crcr/spyre/smoke=pending:waiting");
    // Nothing changed: nothing new.
    db->exec("UPDATE runs SET state = state WHERE id = " + std::to_string(run));
    sync_dirty(*db, settings);
    auto count = [&] {
        auto st = db->prepare("SELECT count(*) FROM outbox");
        st.step();
        return st.int64(0);
    };
    EXPECT_EQ(count(), 3);
    // import fails: smoke is cancelled, the run ends regression. Waiting rows are coalesced.
    sched::finish_job(*db, 1, Conclusion::regression, "1 of 3 tests failed", 1,
                      std::chrono::system_clock::now());
    sync_dirty(*db, settings);
    EXPECT_EQ(rows(),
              "crcr/spyre=pending:coalesced crcr/spyre/import=pending:coalesced "
              "crcr/spyre/smoke=pending:coalesced "
              "crcr/spyre=failure:waiting crcr/spyre/import=failure:waiting "
              "crcr/spyre/smoke=error:waiting");
    auto st = db->prepare(
        "SELECT description FROM outbox WHERE context = 'crcr/spyre/smoke' ORDER BY id DESC LIMIT "
        "1");
    st.step();
    EXPECT_EQ(st.text(0), "cancelled: import ended regression");
}

TEST_F(OutboxTest, ARunCancelledBeforeAnythingWasAnnouncedSaysNothing) {
    auto run = run_with({});
    db->exec("UPDATE runs SET state = 'cancelled', reason = 'superseded' WHERE id = " +
             std::to_string(run));
    sync_dirty(*db, settings);
    EXPECT_EQ(rows(), "");
}

TEST_F(OutboxTest, WithoutASinkTheMarksAreDrainedAndNothingIsWritten) {
    run_with({"import"});
    OutboxSettings none;
    sync_dirty(*db, none);
    EXPECT_EQ(rows(), "");
    auto st = db->prepare("SELECT count(*) FROM status_dirty");
    st.step();
    EXPECT_EQ(st.int64(0), 0);
}

/// A migrated database at `dir`/a.db holding one push run (id 1) of k_sha, created at `at`;
/// null when it cannot be made.
std::unique_ptr<store::Db> db_with_push_run(const TempDir& dir, SystemTime at) {
    auto opened = store::Db::open(dir.path() / "a.db");
    if (!opened || !store::migrate(**opened)) return nullptr;
    store::NewRun r;
    r.event = RunEvent::push;
    r.sha = k_sha;
    store::insert_run(**opened, r, at);
    return std::move(*opened);
}

/// A sender of GitHub statuses to `gh` (token in `dir`/gh.token), with no pause between POSTs.
SenderSettings github_sender(const FakeGithub& gh, const TempDir& dir) {
    config::GithubReportConfig g;
    g.api_url = gh.url();
    g.repo = "pytorch/pytorch";
    g.token_file = dir.path() / "gh.token";
    g.ca_file = test_certs().ca;
    SenderSettings s;
    s.github = g;
    s.min_interval = std::chrono::milliseconds(0);
    return s;
}

TEST(Sender, NeverPostsMoreThanGithubsThousandStatusesPerShaAndContext) {
    TempDir dir;
    write_file(dir.path() / "gh.token", "t\n", 0600);
    std::atomic<int> posted{0};
    FakeGithub gh([&](const http::Request&) {
        ++posted;
        return http::Response::json(201, {{"id", 1}});
    });
    auto opened = db_with_push_run(dir, *parse_rfc3339("2026-11-29T00:00:00.000Z"));
    ASSERT_TRUE(opened);
    {
        auto& db = *opened;
        store::Transaction tx(db);
        auto ins = db.prepare(
            "INSERT INTO outbox (sink, run_id, sha, context, state, description, delivery, "
            "created_at) "
            "VALUES ('github', 1, ?, 'crcr', 'pending', 'x', 'sent', 'x')");
        for (int i = 0; i < 999; ++i) {
            ins.reset();
            ins.bind(1, k_sha);
            ins.run();
        }
        tx.commit();
        // A pending state would be the 1,000th: no room would be left for a final one.
        db.exec(
            "INSERT INTO outbox (sink, run_id, sha, context, state, description, created_at) "
            "VALUES "
            "('github', 1, '" +
            k_sha +
            "', 'crcr', 'pending', 'running', 'x'),"
            "('github', 1, '" +
            k_sha + "', 'crcr/other', 'pending', 'running', 'x')");
    }
    store::Writer writer(std::move(opened));
    SenderSettings s = github_sender(gh, dir);
    s.retry_initial = std::chrono::milliseconds(50);
    Sender sender(writer, dir.path() / "a.db", s);
    sender.start();
    auto state_of = [&](int id) {
        std::string out;
        EXPECT_TRUE(writer.run_sync([&](store::Db& db) {
            auto st = db.prepare("SELECT delivery FROM outbox WHERE id = ?");
            st.bind(1, std::int64_t{id});
            st.step();
            out = st.text(0);
        }));
        return out;
    };
    ASSERT_TRUE(
        eventually([&] { return state_of(1000) != "waiting" && state_of(1001) != "waiting"; }));
    EXPECT_EQ(state_of(1000), "dead");
    EXPECT_EQ(state_of(1001), "sent");  // another context has its own 1,000
    ASSERT_TRUE(writer.run_sync([&](store::Db& db) {
        db.exec(
            "INSERT INTO outbox (sink, run_id, sha, context, state, description, created_at) "
            "VALUES "
            "('github', 1, '" +
            k_sha + "', 'crcr', 'success', 'done', 'x')");
    }));
    sender.notify();
    ASSERT_TRUE(eventually([&] { return state_of(1002) != "waiting"; }));
    EXPECT_EQ(state_of(1002), "sent");  // the 1,000th: a final state
    ASSERT_TRUE(writer.run_sync([&](store::Db& db) {
        db.exec(
            "INSERT INTO outbox (sink, run_id, sha, context, state, description, created_at) "
            "VALUES "
            "('github', 1, '" +
            k_sha + "', 'crcr', 'failure', 'again', 'x')");
    }));
    sender.notify();
    ASSERT_TRUE(eventually([&] { return state_of(1003) != "waiting"; }));
    EXPECT_EQ(state_of(1003), "dead");  // beyond GitHub's limit
    EXPECT_EQ(posted.load(), 2);
    sender.stop();
    writer.stop();
}

// The back-off is counted on the sender's clock: a status GitHub refused with a 502 is not sent
// again, however many passes go by, until the clock passed its retry time.
TEST(Sender, AFailedPostIsTriedAgainOnlyOnceTheClockPassedItsBackOff) {
    TempDir dir;
    write_file(dir.path() / "gh.token", "t\n", 0600);
    std::atomic<int> posted{0};
    FakeGithub gh([&](const http::Request&) {
        if (posted++ == 0) return http::Response::json(502, {{"message", "Bad Gateway"}});
        return http::Response::json(201, {{"id", 1}});
    });
    auto opened = db_with_push_run(dir, *parse_rfc3339("2026-12-01T08:00:00.000Z"));
    ASSERT_TRUE(opened);
    {
        auto& db = *opened;
        db.exec(
            "INSERT INTO outbox (sink, run_id, sha, context, state, description, created_at) "
            "VALUES ('github', 1, '" +
            k_sha + "', 'crcr', 'success', 'done', '2026-12-01T08:00:00.000Z')");
    }
    store::Writer writer(std::move(opened));
    SenderSettings s = github_sender(gh, dir);
    s.retry_initial = std::chrono::minutes(4);  // the first retry between 2 and 4 minutes later
    FakeClock clock(*parse_rfc3339("2026-12-01T08:00:00.000Z"));
    Sender sender(writer, dir.path() / "a.db", s, clock);
    sender.start();
    ASSERT_TRUE(eventually([&] { return posted.load() == 1; }));
    auto delivery = [&] {
        std::string out;
        EXPECT_TRUE(writer.run_sync([&](store::Db& db) {
            auto st = db.prepare("SELECT delivery || ' ' || attempts FROM outbox WHERE id = 1");
            st.step();
            out = st.text(0);
        }));
        return out;
    };
    ASSERT_TRUE(eventually([&] { return delivery() == "waiting 1"; }));
    clock.advance(std::chrono::seconds(119));  // before the earliest retry time
    const auto reads = clock.reads();
    sender.notify();
    ASSERT_TRUE(eventually([&] {
        sender.notify();
        return clock.reads() >= reads + 3;  // passes that read this time
    }));
    EXPECT_EQ(posted.load(), 1);
    EXPECT_EQ(delivery(), "waiting 1");
    clock.advance(std::chrono::minutes(3));  // past the latest retry time
    sender.notify();
    ASSERT_TRUE(eventually([&] { return delivery() == "sent 2"; }));
    EXPECT_EQ(posted.load(), 2);
    sender.stop();
    writer.stop();
}

TEST(RelayConclusion, GithubsVocabularyForEveryClass) {
    const std::vector<std::pair<std::string, std::string>> cases = {
        {"passed", "success"},
        {"flaky", "success"},
        {"regression", "failure"},
        {"timeout", "timed_out"},
        {"cancelled", "cancelled"},
        {"infra_error", "neutral"},
        {"device_unavailable", "neutral"},
        {"pre_existing", "neutral"}};
    for (const auto& [klass, want] : cases)
        EXPECT_EQ(relay_conclusion(*from_string<Conclusion>(klass)), want) << klass;
    EXPECT_EQ(cases.size(), names<Conclusion>().size());  // every class has its answer
}

TEST(CallbackBody, TheFieldsTheRelayAndHudRequire) {
    OutboxSettings s;
    s.public_url = "https://ci.example:8443";
    s.workflow_name = "spyre-ci";
    CallbackRun run{12, RunEvent::pull_request, k_sha, "6d1c2a70-guid", json{{"number", 2}}};
    CallbackJob job{41,
                    "smoke",
                    2,
                    JobState::completed,
                    Conclusion::flaky,
                    "1 test failed, then passed on rerun",
                    "2026-12-01T10:00:00.000Z",
                    "2026-12-01T10:05:00.000Z",
                    json{{"passed", 3}, {"failed", 0}, {"skipped", 1}, {"flaky", 1}}};
    auto b = callback_body(run, job, true, s);
    EXPECT_EQ(b["event_type"], "pull_request");
    EXPECT_EQ(b["delivery_id"], "6d1c2a70-guid");
    EXPECT_EQ(b["payload"], (json{{"number", 2}}));
    const json& wf = b["workflow"];
    EXPECT_EQ(wf["schema_version"], "1");
    EXPECT_EQ(wf["status"], "completed");
    EXPECT_EQ(wf["conclusion"], "success");
    EXPECT_EQ(wf["crcr_class"], "flaky");
    EXPECT_EQ(wf["name"], "spyre-ci");
    EXPECT_EQ(wf["job_name"], "smoke");
    EXPECT_EQ(wf["check_run_id"], "41");
    EXPECT_EQ(wf["run_id"], "12");
    EXPECT_EQ(wf["run_attempt"], "2");
    EXPECT_EQ(wf["url"], "https://ci.example:8443/ui/runs/12");
    EXPECT_EQ(wf["artifact_url"], "https://ci.example:8443/api/v1/jobs/41/log");
    EXPECT_EQ(wf["test_results"],
              (json{{"passed", 4}, {"failed", 0}, {"skipped", 1}, {"total", 5}}));
    EXPECT_EQ(wf["completed_at"], "2026-12-01T10:05:00.000Z");
    auto started = callback_body(run, job, false, s)["workflow"];
    EXPECT_EQ(started["status"], "in_progress");
    EXPECT_TRUE(started["conclusion"].is_null());
    EXPECT_TRUE(started["completed_at"].is_null());
    EXPECT_EQ(started["started_at"], "2026-12-01T10:00:00.000Z");
    EXPECT_EQ(started["check_run_id"], "41");  // HUD's row key: the same in both
    // A scheduled run self-reports as nightly with the SHA as its delivery id.
    CallbackRun nightly{
        13, RunEvent::schedule, k_sha, k_sha,
        json{{"repository", {{"full_name", "pytorch/pytorch"}}}, {"head_sha", k_sha}}};
    auto n = callback_body(nightly, job, true, s);
    EXPECT_EQ(n["event_type"], "nightly");
    EXPECT_EQ(n["delivery_id"], k_sha);
}

TEST_F(OutboxTest, ACallbackPairPerStartedAttemptNeverCoalescedEvenWhenBothHappenInOneCommit) {
    settings.github = false;
    settings.callback = true;
    settings.workflow_name = "crcrd";
    // A run from a CRCR delivery (the relay has a dispatch record for it).
    store::Delivery d;
    d.delivery_id = "transport-1";
    d.crcr_delivery_id = "crcr-guid-1";
    d.received_at = "2026-11-29T00:00:00.000Z";
    d.intended = store::Verdict::queued;
    d.http_status = 202;
    d.body = compress(json{{"client_payload",
                            {{"event_type", "pull_request"},
                             {"delivery_id", "crcr-guid-1"},
                             {"payload", {{"number", 5}}}}}}
                          .dump());
    store::NewRun r;
    r.event = RunEvent::pull_request;
    r.sha = k_sha;
    d.run = r;
    auto out = store::record_delivery(*db, d);
    const auto run = *out.run_id;
    auto add_job = [&](const std::string& tier, int attempt) {
        auto st = db->prepare(
            "INSERT INTO jobs (run_id, tier, position, attempt, state, timeout_ms, created_at) "
            "VALUES (?,?,0,?,'queued',1000,'x')");
        st.bind(1, run).bind(2, tier).bind(3, std::int64_t{attempt});
        st.run();
        return db->last_insert_rowid();
    };
    auto j1 = add_job("import", 1);
    db->exec("UPDATE runs SET state='running' WHERE id=" + std::to_string(run));
    sync_dirty(*db, settings);
    EXPECT_EQ(rows(), "");  // queued: nothing started, nothing to say
    // Started and finished before the hook ran once (a fast job in one commit batch).
    db->exec("UPDATE jobs SET state='running', started_at='2026-11-29T00:00:01.000Z' WHERE id=" +
             std::to_string(j1));
    db->exec(
        "UPDATE jobs SET state='completed', conclusion='regression', reason='1 failed', "
        "finished_at='2026-11-29T00:00:02.000Z' WHERE id=" +
        std::to_string(j1));
    sync_dirty(*db, settings);
    const std::string p1 = "job/" + std::to_string(j1);
    EXPECT_EQ(rows(),
              p1 + "/in_progress=in_progress:waiting " + p1 + "/completed=completed:waiting");
    // The rerun: attempt 2, its own pair; a job cancelled before it started says nothing.
    auto j2 = add_job("import", 2);
    db->exec("UPDATE jobs SET state='running', started_at='2026-11-29T00:00:03.000Z' WHERE id=" +
             std::to_string(j2));
    sync_dirty(*db, settings);
    add_job("smoke", 1);
    db->exec("UPDATE jobs SET state='cancelled', conclusion='cancelled' WHERE tier='smoke'");
    db->exec(
        "UPDATE jobs SET state='completed', conclusion='flaky', "
        "finished_at='2026-11-29T00:00:04.000Z' WHERE id=" +
        std::to_string(j2));
    sync_dirty(*db, settings);
    const std::string p2 = "job/" + std::to_string(j2);
    EXPECT_EQ(rows(),
              p1 + "/in_progress=in_progress:waiting " + p1 + "/completed=completed:waiting " + p2 +
                  "/in_progress=in_progress:waiting " + p2 + "/completed=completed:waiting");
    auto st = db->prepare("SELECT body FROM outbox WHERE context = ?");
    st.bind(1, p2 + "/completed");
    ASSERT_TRUE(st.step());
    auto body = json::parse(st.text(0));
    EXPECT_EQ(body["delivery_id"], "crcr-guid-1");
    EXPECT_EQ(body["workflow"]["run_attempt"], "2");
    EXPECT_EQ(body["workflow"]["conclusion"], "success");
}

TEST_F(OutboxTest, NoCallbackForARunTheRelayDidNotDispatch) {
    settings.github = false;
    settings.callback = true;
    auto run = run_with({"import"});  // a push queued without a CRCR delivery (a direct form, say)
    db->exec("UPDATE runs SET state='running' WHERE id=" + std::to_string(run));
    db->exec(
        "UPDATE jobs SET state='completed', conclusion='passed', started_at='x', finished_at='y'");
    sync_dirty(*db, settings);
    EXPECT_EQ(rows(), "");
}

}  // namespace
}  // namespace crcrd::report
