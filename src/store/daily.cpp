// The daily roll-ups (daily.hpp): their rebuild from the history, and their read for the admin
// API (AdminReads::daily).
#include "crcrd/store/daily.hpp"

#include "crcrd/store/admin_reads.hpp"
#include "crcrd/store/sqlite.hpp"
#include "store/guarded.hpp"

namespace crcrd::store {

namespace {

/// A run's or job's end as its trigger dates it.
constexpr const char* k_day = "substr(coalesce(finished_at, created_at), 1, 10)";

/// The wait bucket of `w` milliseconds, as migration 20's trigger computes it.
std::string bucket_sql(const std::string& w) {
    std::string out = "(";
    for (std::size_t i = 0; i < k_wait_bounds_ms.size(); ++i)
        out += (i ? " + (" : "(") + w + " >= " + std::to_string(k_wait_bounds_ms[i]) + ")";
    return out + ")";
}

}  // namespace

std::int64_t rebuild_daily(Db& db) {
    db.exec("DELETE FROM daily_runs; DELETE FROM daily_jobs; DELETE FROM daily_waits;");
    const std::string day = k_day;
    db.exec("INSERT INTO daily_runs (day, event, conclusion, runs) SELECT " + day +
            ", event, coalesce(conclusion, state), count(*) FROM runs WHERE state = 'completed' "
            "OR state = 'cancelled' GROUP BY 1, 2, 3");
    std::int64_t counted = db.changes();
    const std::string busy =
        "CASE WHEN started_at IS NULL OR finished_at IS NULL THEN 0 ELSE max(0, coalesce("
        "CAST(round((julianday(finished_at) - julianday(started_at)) * 86400000) AS INTEGER), 0)) "
        "END";
    // A time SQLite cannot read counts as no wait, as in the trigger.
    const std::string wait =
        "coalesce(CAST(round((julianday(started_at) - julianday(created_at)) * 86400000) AS "
        "INTEGER), 0)";
    const std::string waited = "(started_at IS NOT NULL AND slot IS NOT NULL)";
    db.exec(
        "INSERT INTO daily_jobs (day, tier, slot, conclusion, position, jobs, busy_ms, waited, "
        "wait_ms) SELECT " +
        day +
        ", tier, coalesce(slot, ''), coalesce(conclusion, state), min(position), "
        "count(*), sum(" +
        busy + "), sum(" + waited + "), sum(CASE WHEN " + waited + " THEN max(0, " + wait +
        ") ELSE 0 END) FROM jobs WHERE state = 'completed' OR state = 'cancelled' GROUP BY "
        "1, 2, 3, 4");
    counted += db.changes();
    db.exec("INSERT INTO daily_waits (day, bucket, n) SELECT " + day + ", " + bucket_sql(wait) +
            ", count(*) FROM jobs WHERE (state = 'completed' OR state = 'cancelled') AND " +
            waited + " GROUP BY 1, 2");
    return counted;
}

Result<DailyRollups> AdminReads::daily(const std::string& since) {
    return guarded([&] {
        DailyRollups out;
        Scoped runs(*m_db,
                    "SELECT day, event, conclusion, runs FROM daily_runs WHERE day >= ? ORDER BY "
                    "day, event, conclusion");
        runs->bind(1, since);
        while (runs->step())
            out.runs.push_back({runs->text(0), runs->text(1), runs->text(2), runs->int64(3)});
        Scoped jobs(*m_db,
                    "SELECT day, tier, slot, conclusion, position, jobs, busy_ms, waited, wait_ms "
                    "FROM daily_jobs WHERE day >= ? ORDER BY day, position, tier, slot, "
                    "conclusion");
        jobs->bind(1, since);
        while (jobs->step()) {
            out.jobs.push_back({jobs->text(0), jobs->text(1), jobs->text(2), jobs->text(3),
                                jobs->int64(4), jobs->int64(5), jobs->int64(6), jobs->int64(7),
                                jobs->int64(8)});
        }
        Scoped waits(*m_db,
                     "SELECT day, bucket, n FROM daily_waits WHERE day >= ? ORDER BY day, bucket");
        waits->bind(1, since);
        while (waits->step())
            out.waits.push_back({waits->text(0), waits->int64(1), waits->int64(2)});
        return out;
    });
}

}  // namespace crcrd::store
