// The admin API's reads of trunk health (trunk.hpp, docs/dashboard.md): a ref's push and
// scheduled runs through runs_trunk, their tiers' last attempts through jobs_by_run, a test's
// results through test_results_by_name and the newest flaky results through test_results_flaky
// (migration 19). Every statement names the index it walks: the daemon never runs ANALYZE, and
// a plan that walked the whole history instead would only show at a million runs.
#include <nlohmann/json.hpp>

#include <map>
#include <set>

#include "crcrd/store/admin_reads.hpp"
#include "crcrd/store/sqlite.hpp"
#include "store/guarded.hpp"

namespace crcrd::store {

namespace {

/// The trunk index's condition, written as migration 19 wrote it (a partial index is used only
/// for a query that states its condition).
constexpr const char* k_trunk_events = "(r.event = 'push' OR r.event = 'schedule')";

/// The last attempt of each tier of run `run_id` (base checks left out), by position.
void cells_of(Db& db, std::int64_t run_id, std::vector<TrunkCell>& out) {
    Scoped st(db,
              "SELECT id, tier, position, attempt, state, conclusion, reason FROM jobs "
              "INDEXED BY jobs_by_run WHERE run_id = ? AND base_check IS NULL "
              "ORDER BY position, attempt DESC, id DESC");
    st->bind(1, run_id);
    std::optional<std::int64_t> position;
    while (st->step()) {
        if (position && *position == st->int64(2)) continue;  // an earlier attempt
        position = st->int64(2);
        out.push_back({run_id, st->int64(0), st->text(1), st->int64(2), st->int64(3), st->text(4),
                       st->opt_text(5), st->opt_text(6)});
    }
}

}  // namespace

Result<TrunkPage> AdminReads::trunk(const TrunkQuery& q) {
    return guarded([&] {
        TrunkPage page;
        {
            Scoped st(*m_db, std::string("SELECT r.id, r.event, r.sha, r.state, r.conclusion, "
                                         "r.created_at, r.finished_at FROM runs r INDEXED BY "
                                         "runs_trunk WHERE r.ref = ? AND ") +
                                 k_trunk_events + " AND r.id < ? ORDER BY r.id DESC LIMIT ?");
            st->bind(1, q.ref)
                .bind(2, q.before_id.value_or(INT64_MAX))
                .bind(3, std::int64_t{q.limit});
            while (st->step()) {
                page.runs.push_back({st->int64(0), st->text(1), st->text(2), st->text(3),
                                     st->opt_text(4), st->text(5), st->opt_text(6)});
            }
        }
        BisectionsRepo bisections(*m_db);
        std::set<std::int64_t> seen;
        nlohmann::json shas = nlohmann::json::array();
        for (const auto& r : page.runs) {
            cells_of(*m_db, r.id, page.cells);
            shas.push_back(r.sha);
            if (auto b = bisections.of_bad_run(r.id); b && seen.insert(b->id).second)
                page.bisections.push_back(std::move(*b));
        }
        // Bisections whose culprit is a commit of the page: few rows (one per trunk
        // regression), read whole.
        Scoped culprits(*m_db,
                        "SELECT id FROM bisections WHERE culprit IN (SELECT value FROM "
                        "json_each(?)) ORDER BY id");
        culprits->bind(1, shas.dump());
        std::vector<std::int64_t> ids;
        while (culprits->step()) ids.push_back(culprits->int64(0));
        for (const auto id : ids) {
            if (!seen.insert(id).second) continue;
            if (auto b = bisections.load(id)) page.bisections.push_back(std::move(*b));
        }
        return page;
    });
}

Result<std::vector<TierOutcome>> AdminReads::tier_outcomes(const std::string& ref,
                                                           const std::string& tier,
                                                           std::int64_t from, int limit) {
    return guarded([&] {
        // The runs first (runs_trunk, newest first), then the tier's attempts of each through
        // jobs_by_run: the order is fixed (CROSS JOIN, `+`), never jobs first.
        Scoped st(*m_db,
                  std::string("SELECT r.id, r.sha, j.state, j.conclusion FROM runs r INDEXED BY "
                              "runs_trunk CROSS JOIN jobs j INDEXED BY jobs_by_run ON j.run_id = "
                              "r.id AND +j.tier = ? AND +j.base_check IS NULL WHERE r.ref = ? "
                              "AND ") +
                      k_trunk_events +
                      " AND r.id <= ? ORDER BY r.id DESC, j.attempt DESC, j.id DESC");
        // No row limit: a run may have any number of attempts of the tier (a row each), and the
        // plan sorts only each run's attempts (the runs come in index order), so stepping stops
        // at the first row of the run after the `limit`th.
        st->bind(1, tier).bind(2, ref).bind(3, from);
        std::vector<TierOutcome> out;
        while (st->step()) {
            if (!out.empty() && out.back().run_id == st->int64(0)) continue;  // earlier attempt
            if (static_cast<int>(out.size()) == limit) break;
            out.push_back({st->int64(0), st->text(1), st->text(2), st->opt_text(3)});
        }
        return out;
    });
}

Result<std::vector<TestHistoryRow>> AdminReads::test_results_of(
    const std::string& name, std::optional<std::int64_t> before_job, int limit) {
    return guarded([&] {
        Scoped st(*m_db,
                  "SELECT t.job_id, j.run_id, j.attempt, j.tier, t.outcome, j.conclusion, "
                  "coalesce(t.duration_s, 0), t.message, coalesce(j.sha, r.sha), r.event, r.pr, "
                  "coalesce(j.finished_at, r.created_at) FROM test_results t INDEXED BY "
                  "test_results_by_name CROSS JOIN jobs j ON j.id = t.job_id CROSS JOIN runs r "
                  "ON r.id = j.run_id WHERE t.name = ? AND t.job_id < ? AND +j.base_check IS "
                  "NULL ORDER BY t.job_id DESC LIMIT ?");
        st->bind(1, name).bind(2, before_job.value_or(INT64_MAX)).bind(3, std::int64_t{limit});
        std::vector<TestHistoryRow> out;
        while (st->step()) {
            TestHistoryRow h;
            h.job_id = st->int64(0);
            h.run_id = st->int64(1);
            h.attempt = st->int64(2);
            h.tier = st->text(3);
            h.outcome = st->text(4);
            h.job_conclusion = st->opt_text(5);
            h.duration_s = st->real(6);
            h.message = st->opt_text(7);
            h.sha = st->text(8);
            h.event = st->text(9);
            h.pr = st->opt_int64(10);
            h.at = st->text(11);
            out.push_back(std::move(h));
        }
        return out;
    });
}

Result<std::vector<FlakyName>> AdminReads::recent_flaky(int results) {
    return guarded([&] {
        Scoped st(*m_db,
                  "SELECT name, max(job_id), count(*) FROM (SELECT name, job_id FROM "
                  "test_results INDEXED BY test_results_flaky WHERE outcome = 'flaky' ORDER BY "
                  "job_id DESC LIMIT ?) GROUP BY name ORDER BY max(job_id) DESC, name");
        st->bind(1, std::int64_t{results});
        std::vector<FlakyName> out;
        while (st->step()) out.push_back({st->text(0), st->int64(1), st->int64(2)});
        return out;
    });
}

Result<std::vector<Bisection>> AdminReads::bisections_of_runs(
    const std::vector<std::int64_t>& run_ids) {
    return guarded([&] {
        Scoped st(*m_db,
                  "SELECT id FROM bisections WHERE bad_run_id IN (SELECT value FROM json_each(?)) "
                  "ORDER BY bad_run_id DESC");
        st->bind(1, nlohmann::json(run_ids).dump());
        std::vector<std::int64_t> ids;
        while (st->step()) ids.push_back(st->int64(0));
        BisectionsRepo bisections(*m_db);
        std::vector<Bisection> out;
        for (const auto id : ids)
            if (auto b = bisections.load(id)) out.push_back(std::move(*b));
        return out;
    });
}

Result<FlakyWindow> AdminReads::flaky_window(const std::string& name, int runs) {
    return guarded([&] {
        FlakyWindow w;
        {
            // A test's rows are next to each other (its primary key's first column): a page or
            // two, at most ~100 rows, ordered here.
            Scoped st(*m_db,
                      "SELECT run_id, job_id, tier, outcome FROM test_flaky_runs WHERE name = ? "
                      "ORDER BY job_id DESC LIMIT ?");
            st->bind(1, name).bind(2, std::int64_t{runs});
            while (st->step())
                w.runs.push_back({st->int64(0), st->int64(1), st->text(2), st->text(3)});
        }
        for (const auto& r : w.runs) {
            if (r.outcome != "flaky") continue;
            Scoped at(*m_db,
                      "SELECT coalesce(j.finished_at, r.created_at) FROM jobs j CROSS JOIN runs "
                      "r ON r.id = j.run_id WHERE j.id = ?");
            at->bind(1, r.job_id);
            if (at->step()) w.last_flaky_at = at->text(0);
            break;
        }
        return w;
    });
}

}  // namespace crcrd::store
