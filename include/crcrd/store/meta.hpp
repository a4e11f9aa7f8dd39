#pragma once
// The `meta` table: small named values that outlive a restart (the full matrix's schedule and
// next firing time; the recovery watermark is kept by RecoveryRepo, store/recovery.hpp).

#include <filesystem>
#include <optional>
#include <string>

#include "crcrd/core/result.hpp"
#include "crcrd/store/fwd.hpp"

namespace crcrd::store {

/// The full matrix's rows of `meta`, as stored (no parsing): the schedule expression the next
/// firing time belongs to, and that time in Unix seconds.
struct FullMatrixMeta {
    std::optional<std::string> schedule;
    std::optional<std::string> next;
};

/// Reads the full matrix's rows on a read-only connection opened for this call. A database that
/// cannot be opened reads as no rows; a failed read is an error value.
Result<FullMatrixMeta> read_full_matrix_meta(const std::filesystem::path& db);

/// Sets `key` to `value`, inside the caller's writer item. Throws SqlError (the Writer rolls the
/// item back).
void put_meta(Db& db, const std::string& key, const std::string& value);

}  // namespace crcrd::store
