#include "crcrd/store/selection_misses.hpp"

#include <map>

#include "crcrd/store/admin_reads.hpp"
#include "crcrd/store/sqlite.hpp"
#include "store/guarded.hpp"
#include "vocab_column.hpp"

namespace crcrd::store {

namespace {

/// The condition that keeps a tier's final attempt only (jobs aliased `j`).
constexpr const char* k_final_attempt =
    "j.attempt = (SELECT max(k.attempt) FROM jobs k WHERE k.run_id = j.run_id AND k.tier = j.tier)";

/// Runs `read` inside one read transaction of `db`, so that every query sees one snapshot.
template <class Fn>
auto in_snapshot(Db& db, Fn&& read) {
    db.exec("BEGIN");
    auto out = std::forward<Fn>(read)();
    db.exec("COMMIT");
    return out;
}

}  // namespace

Result<AuditInputs> read_audit_inputs(const std::filesystem::path& path, std::int64_t run_id) {
    auto opened = open_reader(path);
    if (!opened) return opened.error();
    auto& db = **opened;
    return guarded([&] {
        return in_snapshot(db, [&] {
            AuditInputs in;
            {
                auto run = db.prepare("SELECT event, sha, state, ref FROM runs WHERE id = ?");
                run.bind(1, run_id);
                if (!run.step()) return in;
                in.found = true;
                in.event = vocab_column<RunEvent>(run, 0, "runs.event");
                in.sha = run.text(1);
                in.state = run.text(2);
                in.ref = run.opt_text(3);
            }
            auto failed = db.prepare(std::string("SELECT DISTINCT j.tier, t.name FROM jobs j JOIN "
                                                 "test_results t ON t.job_id = j.id "
                                                 "WHERE j.run_id = ? AND j.conclusion = "
                                                 "'regression' AND t.outcome = 'failed' AND ") +
                                     k_final_attempt + " ORDER BY j.position, t.name");
            failed.bind(1, run_id);
            while (failed.step()) in.failed.push_back({failed.text(0), failed.text(1)});
            if (in.failed.empty()) return in;

            auto previous = db.prepare(
                "SELECT id, sha FROM runs WHERE id < ? AND event = 'schedule' AND ref IS ? AND "
                "state = 'completed' "
                "ORDER BY id DESC LIMIT 1");
            previous.bind(1, run_id).bind(2, in.ref);
            if (!previous.step()) return in;
            in.previous = PreviousScheduled{previous.int64(0), previous.text(1)};

            // One pass over each failing tier's passes there, rather than one lookup per test.
            std::map<std::string, std::set<std::string>> wanted;
            for (const auto& f : in.failed) wanted[f.tier].insert(f.test);
            auto passed = db.prepare(
                std::string(
                    "SELECT t.name FROM jobs j JOIN test_results t ON t.job_id = j.id "
                    "WHERE j.run_id = ? AND j.tier = ? AND t.outcome IN ('passed','flaky') AND ") +
                k_final_attempt);
            for (const auto& [tier, tests] : wanted) {
                passed.reset();
                passed.bind(1, in.previous->id).bind(2, tier);
                while (passed.step()) {
                    auto name = passed.text(0);
                    if (tests.count(name)) in.passed_before.insert({tier, std::move(name)});
                }
            }
            return in;
        });
    });
}

Result<std::vector<CommitRuns>> read_commit_runs(const std::filesystem::path& path,
                                                 const std::vector<CommitKey>& commits) {
    auto opened = open_reader(path);
    if (!opened) return opened.error();
    auto& db = **opened;
    return guarded([&] {
        return in_snapshot(db, [&] {
            // Two index lookups (runs_by_sha, runs_by_pr) rather than one OR that scans.
            auto st = db.prepare(
                "SELECT r.id, j.tier FROM runs r LEFT JOIN jobs j ON j.run_id = r.id WHERE r.event "
                "= 'push' AND r.sha = ? "
                "UNION ALL "
                "SELECT r.id, j.tier FROM runs r LEFT JOIN jobs j ON j.run_id = r.id WHERE r.event "
                "= 'pull_request' AND r.pr = ? "
                "ORDER BY 1");
            std::vector<CommitRuns> out;
            for (const auto& c : commits) {
                st.reset();
                st.bind(1, c.sha).bind(2, c.pr);
                CommitRuns runs;
                while (st.step()) {
                    const auto id = st.int64(0);
                    if (runs.run_ids.empty() || runs.run_ids.back() != id)
                        runs.run_ids.push_back(id);
                    if (!st.is_null(1)) runs.tiers.insert(st.text(1));
                }
                out.push_back(std::move(runs));
            }
            return out;
        });
    });
}

std::int64_t record_selection_misses(Db& db, const std::vector<NewSelectionMiss>& misses,
                                     SystemTime now_at) {
    const std::string now = rfc3339(now_at);
    Scoped st(db,
              "INSERT OR IGNORE INTO selection_misses (run_id, previous_run_id, tier, test, "
              "commits, created_at) "
              "VALUES (?, ?, ?, ?, ?, ?)");
    std::int64_t added = 0;
    for (const auto& m : misses) {
        st->reset();
        st->bind(1, m.run_id)
            .bind(2, m.previous_run_id)
            .bind(3, m.tier)
            .bind(4, m.test)
            .bind(5, m.commits_json)
            .bind(6, now);
        st->run();
        added += db.changes();
    }
    return added;
}

Result<std::vector<SelectionMissRow>> AdminReads::selection_misses(const SelectionMissQuery& q) {
    return guarded([&] {
        Scoped st(*m_db,
                  "SELECT id, run_id, previous_run_id, tier, test, commits, created_at FROM "
                  "selection_misses "
                  "WHERE (?1 IS NULL OR run_id = ?1) AND (?2 IS NULL OR test = ?2) AND (?3 IS NULL "
                  "OR id < ?3) "
                  "ORDER BY id DESC LIMIT ?4");
        st->bind(1, q.run_id)
            .bind(2, q.test)
            .bind(3, q.page.before_id)
            .bind(4, std::int64_t{q.page.limit});
        std::vector<SelectionMissRow> rows;
        while (st->step()) {
            rows.push_back({st->int64(0), st->int64(1), st->int64(2), st->text(3), st->text(4),
                            st->text(5), st->text(6)});
        }
        return rows;
    });
}

}  // namespace crcrd::store
