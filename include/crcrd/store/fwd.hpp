#pragma once
// The database as other modules see it: an opaque connection handed to repositories (and to the
// writer's closures). Only `store` knows what is inside.

namespace crcrd::store {

class Db;

}  // namespace crcrd::store
