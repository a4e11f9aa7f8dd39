#pragma once
// Missed-delivery recovery's tables (recovery_passes, recovery_redelivered) and what a pass
// checks before asking GitHub to redeliver: the watermark in `meta` and the accepted deliveries'
// transport keys. RecoveryReads owns the pass's read-only connection; RecoveryRepo writes on the
// writer's.

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "crcrd/core/result.hpp"
#include "crcrd/store/fwd.hpp"

namespace crcrd::store {

/// One recovery pass as recorded.
struct RecoveryPassRecord {
    std::string started_at, finished_at;  // RFC 3339
    std::string since;                    // the watermark the pass listed back to
    std::int64_t listed = 0, failed = 0, redelivered = 0;
    std::string errors_json = "[]";
};

/// A recorded pass with its row id.
struct RecoveryPassRow {
    std::int64_t id = 0;
    RecoveryPassRecord pass;
};

/// A read-only connection for one recovery pass. Every read returns a storage error as a value.
/// Not thread-safe: one thread uses it.
class RecoveryReads {
  public:
    /// Opens the database at `db` read-only with the readers' busy timeout; code "storage" when
    /// it cannot be opened.
    static Result<RecoveryReads> open(const std::filesystem::path& db);
    RecoveryReads(RecoveryReads&&) noexcept;
    RecoveryReads& operator=(RecoveryReads&&) noexcept;
    ~RecoveryReads();

    /// The watermark the last complete pass left (RFC 3339), or nullopt before the first one.
    Result<std::optional<std::string>> watermark();
    /// Whether crcrd accepted a delivery with this X-GitHub-Delivery `guid` (its transport key).
    Result<bool> accepted(const std::string& guid);
    /// Whether a pass already asked GitHub to redeliver `guid`.
    Result<bool> redelivered(const std::string& guid);

  private:
    explicit RecoveryReads(std::unique_ptr<Db> db);
    std::unique_ptr<Db> m_db;
};

/// Recovery's writes on the writer's connection, inside the caller's writer item. Each throws
/// SqlError on a storage failure (the Writer rolls the item back).
class RecoveryRepo {
  public:
    explicit RecoveryRepo(Db& db) noexcept : m_db(db) {}

    /// Remembers that GitHub was asked to redeliver `guid` (its delivery `delivery`) at `at`;
    /// a guid already remembered is left as it is.
    void record_redelivery(const std::string& guid, std::int64_t delivery, const std::string& at);
    /// Records `pass`, then sets the watermark to `new_watermark` when given, then drops all but
    /// the newest 5,000 passes.
    void record_pass(const RecoveryPassRecord& pass,
                     const std::optional<std::string>& new_watermark);

  private:
    Db& m_db;
};

}  // namespace crcrd::store
