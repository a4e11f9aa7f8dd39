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

/// The same up to version `to` (at most schema_version()) only: a database already there or
/// past it is left as it is. For the tests of a migration on the rows an older schema held.
Status migrate(Db& db, int to);

}  // namespace crcrd::store
