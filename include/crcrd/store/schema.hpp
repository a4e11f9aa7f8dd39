#pragma once
// Schema migrations keyed by PRAGMA user_version.

#include "crcrd/core/result.hpp"
#include "crcrd/store/fwd.hpp"

namespace crcrd::store {

/// The schema version this build writes.
int schema_version();

/// Brings `db` up to schema_version() in one transaction per step. Refuses (code
/// "storage_version") a database written by a newer crcrd.
Status migrate(Db& db);

}  // namespace crcrd::store
