#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "crcrd/store/admin_reads.hpp"
#include "crcrd/store/schema.hpp"
#include "crcrd/store/sqlite.hpp"
#include "support/temp_dir.hpp"

namespace crcrd::store {
namespace {

const std::string k_sha_a = "ec26c3e57ca3a959ca5aad62de7213c562f8c821";
const std::string k_sha_b = "f95f852bd8fca8fcc58a9a2d6c842781e32a215e";

/// A run query with the fields `set` sets (GCC warns on designated initializers that skip fields).
RunQuery runs_where(void (*set)(RunQuery&)) {
    RunQuery q;
    set(q);
    return q;
}

Page page(int limit, std::optional<std::int64_t> before_id = std::nullopt) {
    Page p;
    p.limit = limit;
    p.before_id = before_id;
    return p;
}

/// A migrated database in a temp dir, written through its own connection (as the writer does).
class AdminReadsTest : public ::testing::Test {
  protected:
    void SetUp() override {
        m_path = m_dir.path() / "crcrd.db";
        auto db = Db::open(m_path);
        ASSERT_TRUE(db) << db.error().message;
        m_db = std::move(*db);
        ASSERT_TRUE(migrate(*m_db));
    }

    std::int64_t run(const std::string& event, const std::string& sha,
                     std::optional<std::int64_t> pr, const std::string& state,
                     std::optional<std::string> conclusion, const std::string& created_at) {
        auto st = m_db->prepare(
            "INSERT INTO runs (event, sha, pr, state, conclusion, created_at) VALUES "
            "(?,?,?,?,?,?)");
        st.bind(1, event)
            .bind(2, sha)
            .bind(3, pr)
            .bind(4, state)
            .bind(5, conclusion)
            .bind(6, created_at);
        st.run();
        return m_db->last_insert_rowid();
    }

    std::int64_t job(std::int64_t run_id, const std::string& tier, int position, int attempt) {
        auto st = m_db->prepare(
            "INSERT INTO jobs (run_id, tier, position, state, attempt, timeout_ms, created_at) "
            "VALUES (?,?,?,'queued',?,60000,'2026-01-01T00:00:00Z')");
        st.bind(1, run_id)
            .bind(2, tier)
            .bind(3, std::int64_t{position})
            .bind(4, std::int64_t{attempt});
        st.run();
        return m_db->last_insert_rowid();
    }

    std::int64_t status(std::int64_t run_id, const std::string& sink, const std::string& context,
                        const std::string& state) {
        auto st = m_db->prepare(
            "INSERT INTO outbox (sink, run_id, sha, context, state, created_at) "
            "VALUES (?,?,?,?,?,'2026-01-01T00:00:00Z')");
        st.bind(1, sink).bind(2, run_id).bind(3, k_sha_a).bind(4, context).bind(5, state);
        st.run();
        return m_db->last_insert_rowid();
    }

    AdminReads reads() {
        auto r = AdminReads::for_this_thread(m_path);
        EXPECT_TRUE(r) << (r ? "" : r.error().message);
        return *r;
    }

    static std::vector<std::int64_t> ids(const std::vector<RunRow>& rows) {
        std::vector<std::int64_t> out;
        for (const auto& r : rows) out.push_back(r.id);
        return out;
    }

    TempDir m_dir;
    std::filesystem::path m_path;
    std::unique_ptr<Db> m_db;
};

TEST_F(AdminReadsTest, RunFiltersMatchExactlyAndListNewestFirst) {
    auto r1 = run("pull_request", k_sha_a, 7, "completed", "passed", "2026-01-01T10:00:00Z");
    auto r2 = run("push", k_sha_b, std::nullopt, "running", std::nullopt, "2026-01-02T10:00:00Z");
    auto r3 = run("pull_request", k_sha_b, 8, "completed", "regression", "2026-01-03T10:00:00Z");
    auto r4 = run("pull_request", k_sha_a, 7, "queued", std::nullopt, "2026-01-04T10:00:00Z");
    auto db = reads();

    struct Case {
        const char* name;
        RunQuery q;
        std::vector<std::int64_t> want;
    };
    std::vector<Case> cases;
    cases.push_back({"none", {}, {r4, r3, r2, r1}});
    cases.push_back({"state", runs_where([](RunQuery& q) { q.state = "completed"; }), {r3, r1}});
    cases.push_back(
        {"conclusion", runs_where([](RunQuery& q) { q.conclusion = "regression"; }), {r3}});
    cases.push_back({"sha", runs_where([](RunQuery& q) { q.sha = k_sha_b; }), {r3, r2}});
    cases.push_back({"event", runs_where([](RunQuery& q) { q.event = "push"; }), {r2}});
    cases.push_back({"pr", runs_where([](RunQuery& q) { q.pr = 7; }), {r4, r1}});
    cases.push_back({"since is inclusive",
                     runs_where([](RunQuery& q) { q.since = "2026-01-02T10:00:00Z"; }),
                     {r4, r3, r2}});
    cases.push_back({"until is exclusive",
                     runs_where([](RunQuery& q) { q.until = "2026-01-03T10:00:00Z"; }),
                     {r2, r1}});
    cases.push_back({"all at once",
                     runs_where([](RunQuery& q) {
                         q.state = "completed";
                         q.sha = k_sha_a;
                         q.event = "pull_request";
                         q.since = "2026-01-01";
                         q.until = "2026-01-02";
                         q.pr = 7;
                     }),
                     {r1}});
    cases.push_back({"no match", runs_where([](RunQuery& q) { q.state = "cancelled"; }), {}});
    for (const auto& c : cases) {
        auto rows = db.runs(c.q);
        ASSERT_TRUE(rows) << c.name << ": " << rows.error().message;
        EXPECT_EQ(ids(*rows), c.want) << c.name;
    }

    // The row holds the columns as stored, NULL as empty.
    auto rows = db.runs(runs_where([](RunQuery& q) { q.event = "push"; }));
    ASSERT_TRUE(rows);
    ASSERT_EQ(rows->size(), 1u);
    const RunRow& push = rows->front();
    EXPECT_EQ(push.sha, k_sha_b);
    EXPECT_EQ(push.state, "running");
    EXPECT_EQ(push.created_at, "2026-01-02T10:00:00Z");
    EXPECT_FALSE(push.pr);
    EXPECT_FALSE(push.conclusion);
    EXPECT_FALSE(push.selection_json);
    EXPECT_FALSE(push.finished_at);
}

TEST_F(AdminReadsTest, PagesContinueBelowBeforeId) {
    std::vector<std::int64_t> all;
    for (int i = 0; i < 5; ++i)
        all.push_back(run("push", k_sha_a, std::nullopt, "queued", std::nullopt, "2026-01-01"));
    auto db = reads();

    std::vector<std::int64_t> seen;
    RunQuery q;
    q.page.limit = 2;
    for (int pages = 0; pages < 10; ++pages) {
        auto rows = db.runs(q);
        ASSERT_TRUE(rows) << rows.error().message;
        EXPECT_LE(rows->size(), 2u);
        for (const auto& r : *rows) seen.push_back(r.id);
        if (rows->size() < 2) break;
        q.page.before_id = rows->back().id;
    }
    EXPECT_EQ(seen, (std::vector<std::int64_t>{all[4], all[3], all[2], all[1], all[0]}));

    // before_id combines with the other filters.
    RunQuery queued_below;
    queued_below.state = "queued";
    queued_below.page = page(50, all[2]);
    auto rows = db.runs(queued_below);
    ASSERT_TRUE(rows);
    EXPECT_EQ(ids(*rows), (std::vector<std::int64_t>{all[1], all[0]}));

    // The outbox and the test results page the same way (the tests by rowid).
    auto r = all[0];
    auto j = job(r, "unit", 0, 1);
    std::vector<std::int64_t> outbox;
    for (int i = 0; i < 3; ++i)
        outbox.push_back(status(r, "file", "ctx" + std::to_string(i), "pending"));
    OutboxQuery of_run;
    of_run.run_id = r;
    of_run.page = page(2, outbox[2]);
    auto statuses = db.outbox(of_run);
    ASSERT_TRUE(statuses);
    ASSERT_EQ(statuses->size(), 2u);
    EXPECT_EQ((*statuses)[0].id, outbox[1]);
    EXPECT_EQ((*statuses)[1].id, outbox[0]);

    for (const char* name : {"a", "b", "c"}) {
        auto st = m_db->prepare(
            "INSERT INTO test_results (job_id, name, outcome, duration_s) VALUES (?, ?, 'passed', "
            "0.5)");
        st.bind(1, j).bind(2, name);
        st.run();
    }
    auto first = db.tests(j, std::nullopt, page(2));
    ASSERT_TRUE(first);
    ASSERT_EQ(first->size(), 2u);
    EXPECT_EQ((*first)[0].name, "c");
    EXPECT_EQ((*first)[1].name, "b");
    auto rest = db.tests(j, std::nullopt, page(2, (*first)[1].rowid));
    ASSERT_TRUE(rest);
    ASSERT_EQ(rest->size(), 1u);
    EXPECT_EQ((*rest)[0].name, "a");
    EXPECT_DOUBLE_EQ((*rest)[0].duration_s, 0.5);
    EXPECT_FALSE((*rest)[0].message);
    auto failed = db.tests(j, std::string("failed"), page(50));
    ASSERT_TRUE(failed);
    EXPECT_TRUE(failed->empty());
}

TEST_F(AdminReadsTest, RunDetailHasJobsInOrderAndTheNewestStatusPerSinkAndContext) {
    auto r = run("pull_request", k_sha_a, 3, "running", std::nullopt, "2026-01-01T00:00:00Z");
    auto other = run("pull_request", k_sha_b, 4, "running", std::nullopt, "2026-01-01T00:00:00Z");
    auto second_tier = job(r, "integration", 1, 1);
    auto first_tier = job(r, "unit", 0, 1);
    auto retry = job(r, "unit", 0, 2);
    job(other, "unit", 0, 1);

    status(r, "github", "ci/unit", "pending");  // replaced below
    auto file_unit = status(r, "file", "ci/unit", "pending");
    status(r, "callback", "ci/unit", "in_progress");  // callbacks are not statuses
    auto gh_integration = status(r, "github", "ci/integration", "pending");
    status(other, "github", "ci/unit", "failure");  // another run's
    auto gh_unit = status(r, "github", "ci/unit", "success");
    status(r, "callback", "ci/unit", "completed");

    auto detail = reads().run_detail(r);
    ASSERT_TRUE(detail) << detail.error().message;
    ASSERT_TRUE(*detail);
    EXPECT_EQ((*detail)->run.id, r);
    EXPECT_EQ((*detail)->run.pr, 3);

    std::vector<std::int64_t> job_ids;
    for (const auto& j : (*detail)->jobs) job_ids.push_back(j.id);
    EXPECT_EQ(job_ids, (std::vector<std::int64_t>{first_tier, retry, second_tier}));
    const JobRow& j = (*detail)->jobs.front();
    EXPECT_EQ(j.tier, "unit");
    EXPECT_EQ(j.state, "queued");
    EXPECT_EQ(j.timeout_ms, 60000);
    EXPECT_EQ(j.tests_json, "[]");
    EXPECT_FALSE(j.metadata_json);
    EXPECT_FALSE(j.counts_json);
    EXPECT_FALSE(j.exit_status);

    // By sink, then by when the context was first reported: github's ci/unit came first.
    std::vector<std::int64_t> status_ids;
    for (const auto& o : (*detail)->statuses) status_ids.push_back(o.id);
    EXPECT_EQ(status_ids, (std::vector<std::int64_t>{file_unit, gh_unit, gh_integration}));
    EXPECT_EQ((*detail)->statuses[1].state, "success");
    EXPECT_EQ((*detail)->statuses[1].delivery, "waiting");

    auto none = reads().run_detail(other + 100);
    ASSERT_TRUE(none);
    EXPECT_FALSE(*none);
}

TEST_F(AdminReadsTest, NoReadKeepsASnapshotOpen) {
    auto r = run("push", k_sha_a, std::nullopt, "queued", std::nullopt, "2026-01-01");
    job(r, "unit", 0, 1);
    status(r, "github", "ci/unit", "pending");
    auto db = reads();
    ASSERT_TRUE(db.run_detail(r));
    ASSERT_TRUE(db.runs({}));
    // A newer write is seen, and a checkpoint is not held back by the reader.
    auto r2 = run("push", k_sha_b, std::nullopt, "queued", std::nullopt, "2026-01-02");
    auto detail = db.run_detail(r2);
    ASSERT_TRUE(detail);
    EXPECT_TRUE(*detail);
    auto cp = m_db->prepare("PRAGMA wal_checkpoint(TRUNCATE)");
    ASSERT_TRUE(cp.step());
    EXPECT_EQ(cp.int64(0), 0) << "a reader still holds a snapshot";
}

TEST_F(AdminReadsTest, JobsLogsSlotsAndRecovery) {
    auto r = run("push", k_sha_a, std::nullopt, "queued", std::nullopt, "2026-01-01");
    auto j = job(r, "unit", 0, 1);
    auto db = reads();

    auto missing = db.job(j + 1);
    ASSERT_TRUE(missing);
    EXPECT_FALSE(*missing);
    auto found = db.job(j);
    ASSERT_TRUE(found);
    ASSERT_TRUE(*found);
    EXPECT_EQ((*found)->run_id, r);

    auto log = db.job_log(j + 1);
    ASSERT_TRUE(log);
    EXPECT_FALSE(log->job_found);
    log = db.job_log(j);
    ASSERT_TRUE(log);
    EXPECT_TRUE(log->job_found);
    EXPECT_FALSE(log->path);
    m_db->exec("UPDATE jobs SET log_path = '/var/log/x.log'");
    log = db.job_log(j);
    ASSERT_TRUE(log);
    EXPECT_EQ(log->path, "/var/log/x.log");

    m_db->exec(
        "INSERT INTO slots (name, state, drained) VALUES ('b', 'idle', 1), ('a', 'busy', 0)");
    auto slots = db.slots();
    ASSERT_TRUE(slots);
    ASSERT_EQ(slots->size(), 2u);
    EXPECT_EQ((*slots)[0].name, "a");
    EXPECT_FALSE((*slots)[0].drained);
    EXPECT_EQ((*slots)[1].state, "idle");  // the stored state; "drained" is the admin's to show
    EXPECT_TRUE((*slots)[1].drained);

    auto wm = db.recovery_watermark();
    ASSERT_TRUE(wm);
    EXPECT_FALSE(*wm);
    m_db->exec(
        "INSERT INTO meta (key, value) VALUES ('recovery_watermark', '2026-01-01T00:00:00Z')");
    for (int i = 0; i < 3; ++i) {
        m_db->exec(
            "INSERT INTO recovery_passes (started_at, finished_at, since, listed, failed, "
            "redelivered) "
            "VALUES ('s', 'f', 'x', 4, 1, 1)");
    }
    wm = db.recovery_watermark();
    ASSERT_TRUE(wm);
    EXPECT_EQ(*wm, "2026-01-01T00:00:00Z");
    auto passes = db.recovery_passes(2);
    ASSERT_TRUE(passes);
    ASSERT_EQ(passes->size(), 2u);
    EXPECT_EQ((*passes)[0].id, 3);
    EXPECT_EQ((*passes)[0].errors_json, "[]");
    EXPECT_EQ((*passes)[0].listed, 4);
}

TEST(AdminReads, AMissingDatabaseIsAStorageError) {
    TempDir dir;
    auto r = AdminReads::for_this_thread(dir.path() / "none.db");
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code, Errc::storage);
}

}  // namespace
}  // namespace crcrd::store
