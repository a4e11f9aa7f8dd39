#include "crcrd/store/retention.hpp"
#include "crcrd/store/sqlite.hpp"

#include <spdlog/spdlog.h>

#include "crcrd/core/time.hpp"

namespace crcrd::store {

Pruned prune(Db& db, SystemTime cutoff_at) {
    const std::string cutoff = rfc3339(cutoff_at);
    Pruned out;
    auto& bodies = db.cached(
        "UPDATE deliveries SET body = NULL WHERE body IS NOT NULL AND received_at < ? "
        "AND (run_id IS NULL OR run_id IN (SELECT id FROM runs WHERE state IN "
        "('completed','cancelled')))");
    bodies.bind(1, cutoff);
    bodies.run();
    out.bodies = static_cast<std::int64_t>(db.changes());
    auto& outbox = db.cached("DELETE FROM outbox WHERE delivery <> 'waiting' AND created_at < ?");
    outbox.bind(1, cutoff);
    outbox.run();
    out.outbox_rows = static_cast<std::int64_t>(db.changes());
    auto& paths = db.cached(
        "SELECT log_path FROM jobs WHERE log_path IS NOT NULL AND finished_at IS NOT NULL AND "
        "finished_at < ?");
    paths.bind(1, cutoff);
    while (paths.step()) out.logs.push_back(paths.text(0));
    paths.reset();
    auto& clear = db.cached(
        "UPDATE jobs SET log_path = NULL WHERE log_path IS NOT NULL AND finished_at IS NOT NULL "
        "AND finished_at < ?");
    clear.bind(1, cutoff);
    clear.run();
    return out;
}

std::int64_t prune_rejected(Db& db, SystemTime cutoff_at, std::int64_t limit) {
    const std::string cutoff = rfc3339(cutoff_at);
    auto& del = db.cached(
        "DELETE FROM deliveries WHERE id IN (SELECT id FROM deliveries WHERE verdict = 'rejected' "
        "AND received_at < ? "
        "ORDER BY id LIMIT ?)");
    del.bind(1, cutoff).bind(2, limit);
    del.run();
    return static_cast<std::int64_t>(db.changes());
}

Pruner::Pruner(Writer& writer, std::chrono::milliseconds retention,
               std::chrono::milliseconds rejected_retention, std::chrono::milliseconds interval)
    : m_writer(writer),
      m_retention(retention),
      m_rejected_retention(rejected_retention),
      m_interval(interval) {}

Pruner::~Pruner() {
    stop();
}

void Pruner::start() {
    if (m_retention.count() <= 0 && m_rejected_retention.count() <= 0) return;  // keep everything
    m_loop.start(m_interval);
}

void Pruner::stop() {
    m_loop.stop();
}

void Pruner::pass() {
    if (m_rejected_retention.count() > 0) {
        // In slices, so that a flood's millions of rows never hold the writer for long.
        const SystemTime cutoff_at = std::chrono::system_clock::now() - m_rejected_retention;
        const std::string cutoff = rfc3339(cutoff_at);
        constexpr std::int64_t k_slice = 5000;
        std::int64_t total = 0, n = k_slice;
        while (n == k_slice) {
            if (m_loop.stopping()) return;
            auto s = m_writer.run_sync([&](Db& db) { n = prune_rejected(db, cutoff_at, k_slice); });
            if (!s) {
                spdlog::warn("retention: pruning rejected requests failed: {}", s.error().message);
                break;
            }
            total += n;
        }
        if (total)
            spdlog::info("retention: before {}: {} rows of rejected requests pruned", cutoff,
                         total);
    }
    if (m_retention.count() <= 0) return;
    const SystemTime cutoff_at = std::chrono::system_clock::now() - m_retention;
    const std::string cutoff = rfc3339(cutoff_at);
    Pruned p;
    auto s = m_writer.run_sync([&](Db& db) { p = prune(db, cutoff_at); });
    if (!s) {
        spdlog::warn("retention: pruning failed: {}", s.error().message);
        return;
    }
    std::size_t removed = 0;
    for (const auto& path : p.logs) {
        std::error_code ec;
        if (std::filesystem::remove(path, ec)) ++removed;
    }
    if (p.bodies || p.outbox_rows || removed) {
        spdlog::info("retention: before {}: {} delivery bodies, {} outbox rows, {} job logs pruned",
                     cutoff, p.bodies, p.outbox_rows, removed);
    }
}

}  // namespace crcrd::store
