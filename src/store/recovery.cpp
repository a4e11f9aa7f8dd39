#include "crcrd/store/recovery.hpp"

#include "crcrd/store/sqlite.hpp"
#include "store/delivery_keys.hpp"
#include "store/guarded.hpp"
#include "store/meta_rows.hpp"

namespace crcrd::store {

namespace {

/// Whether `sql` (one `?`) finds a row for `value`.
bool exists(Db& db, const std::string& sql, const std::string& value) {
    Scoped st(db, sql);
    st->bind(1, value);
    return st->step();
}

}  // namespace

RecoveryReads::RecoveryReads(std::unique_ptr<Db> db) : m_db(std::move(db)) {}
RecoveryReads::RecoveryReads(RecoveryReads&&) noexcept = default;
RecoveryReads& RecoveryReads::operator=(RecoveryReads&&) noexcept = default;
RecoveryReads::~RecoveryReads() = default;

Result<RecoveryReads> RecoveryReads::open(const std::filesystem::path& db) {
    auto opened = open_reader(db);
    if (!opened) return opened.error();
    return RecoveryReads(std::move(*opened));
}

Result<std::optional<std::string>> RecoveryReads::watermark() {
    return guarded([&] { return read_recovery_watermark(*m_db); });
}

Result<bool> RecoveryReads::accepted(const std::string& guid) {
    // The transport key record_delivery() claims for an accepted delivery (deliveries.cpp).
    return guarded([&] {
        return exists(*m_db, "SELECT 1 FROM delivery_keys WHERE key = ?", transport_key(guid));
    });
}

Result<bool> RecoveryReads::redelivered(const std::string& guid) {
    return guarded(
        [&] { return exists(*m_db, "SELECT 1 FROM recovery_redelivered WHERE guid = ?", guid); });
}

void RecoveryRepo::record_redelivery(const std::string& guid, std::int64_t delivery,
                                     const std::string& at) {
    Scoped ins(m_db,
               "INSERT OR IGNORE INTO recovery_redelivered (guid, delivery, at) VALUES (?,?,?)");
    ins->bind(1, guid).bind(2, delivery).bind(3, at);
    ins->run();
}

void RecoveryRepo::record_pass(const RecoveryPassRecord& pass,
                               const std::optional<std::string>& new_watermark) {
    {
        Scoped ins(m_db,
                   "INSERT INTO recovery_passes (started_at, finished_at, since, listed, failed, "
                   "redelivered, errors) "
                   "VALUES (?,?,?,?,?,?,?)");
        ins->bind(1, pass.started_at)
            .bind(2, pass.finished_at)
            .bind(3, pass.since)
            .bind(4, pass.listed)
            .bind(5, pass.failed);
        ins->bind(6, pass.redelivered).bind(7, pass.errors_json);
        ins->run();
    }
    if (new_watermark) put_recovery_watermark(m_db, *new_watermark);
    // Passes are kept for a month of history at the default interval.
    m_db.exec(
        "DELETE FROM recovery_passes WHERE id <= (SELECT max(id) FROM recovery_passes) - 5000");
}

}  // namespace crcrd::store
