// The daily roll-ups (daily.hpp): their rebuild from the history, and their read for the admin
// API (AdminReads::daily).
#include "crcrd/store/daily.hpp"

#include "crcrd/store/admin_reads.hpp"
#include "crcrd/store/sqlite.hpp"
#include "store/guarded.hpp"

namespace crcrd::store {

std::int64_t rebuild_daily(Db& db) {
    // The same views the triggers of migration 22 read, grouped as their upserts add up.
    db.exec(
        "DELETE FROM daily_runs; DELETE FROM daily_tiers; DELETE FROM daily_busy; DELETE FROM "
        "daily_waits;");
    std::int64_t counted = 0;
    db.exec(
        "INSERT INTO daily_runs (day, event, conclusion, runs) SELECT day, event, conclusion, "
        "count(*) FROM daily_run_ends GROUP BY day, event, conclusion");
    counted += db.changes();
    db.exec(
        "INSERT INTO daily_tiers (day, event, run_class, tier, conclusion, position, runs, "
        "busy_ms) SELECT day, event, run_class, tier, conclusion, min(position), count(*), "
        "sum(busy_ms) FROM daily_tier_ends GROUP BY day, event, run_class, tier, conclusion");
    counted += db.changes();
    db.exec(
        "INSERT INTO daily_busy (day, slot, tier, position, busy_ms) SELECT day, slot, tier, "
        "min(position), sum(busy_ms) FROM daily_busy_spans GROUP BY day, slot, tier");
    counted += db.changes();
    db.exec(
        "INSERT INTO daily_waits (day, tier, bucket, position, n, wait_ms) SELECT day, tier, "
        "bucket, min(position), count(*), sum(w) FROM daily_wait_ends GROUP BY day, tier, bucket");
    counted += db.changes();
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
        Scoped tiers(*m_db,
                     "SELECT day, event, run_class, tier, conclusion, position, runs, busy_ms "
                     "FROM daily_tiers WHERE day >= ? ORDER BY day, position, tier, event, "
                     "run_class, conclusion");
        tiers->bind(1, since);
        while (tiers->step()) {
            out.tiers.push_back({tiers->text(0), tiers->text(1), tiers->text(2), tiers->text(3),
                                 tiers->text(4), tiers->int64(5), tiers->int64(6),
                                 tiers->int64(7)});
        }
        Scoped busy(*m_db,
                    "SELECT day, slot, tier, position, busy_ms FROM daily_busy WHERE day >= ? "
                    "ORDER BY day, slot, tier");
        busy->bind(1, since);
        while (busy->step()) {
            out.busy.push_back(
                {busy->text(0), busy->text(1), busy->text(2), busy->int64(3), busy->int64(4)});
        }
        Scoped waits(*m_db,
                     "SELECT day, tier, position, bucket, n, wait_ms FROM daily_waits WHERE day "
                     ">= ? ORDER BY day, tier, bucket");
        waits->bind(1, since);
        while (waits->step()) {
            out.waits.push_back({waits->text(0), waits->text(1), waits->int64(2), waits->int64(3),
                                 waits->int64(4), waits->int64(5)});
        }
        return out;
    });
}

}  // namespace crcrd::store
