#pragma once
// Store-internal: the recovery watermark's row of `meta`, read and written on a connection the
// calling repository owns (RecoveryReads, RecoveryRepo, AdminReads). Both throw SqlError.

#include <optional>
#include <string>

#include "crcrd/store/fwd.hpp"

namespace crcrd::store {

/// The stored watermark (RFC 3339), or nullopt when no pass has set one.
std::optional<std::string> read_recovery_watermark(Db& db);

/// Sets the watermark.
void put_recovery_watermark(Db& db, const std::string& value);

}  // namespace crcrd::store
