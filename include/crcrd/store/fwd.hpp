#pragma once
// The database as other modules see it: an opaque connection handed to repositories (and to the
// writer's closures), and the store types that other headers only name. Only `store` knows what
// is inside.

namespace crcrd::store {

class Db;
class OutboxQueue;  // crcrd/store/outbox.hpp
struct OutboxItem;  // crcrd/store/outbox.hpp

}  // namespace crcrd::store
