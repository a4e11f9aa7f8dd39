// The admin API's reads of the builds table (docs/build.md): BuildsRepo's reads on the admin
// worker's read-only connection, a storage failure as an error value.
#include "crcrd/store/admin_reads.hpp"
#include "crcrd/store/builds.hpp"
#include "store/guarded.hpp"

namespace crcrd::store {

Result<std::vector<BuildRow>> AdminReads::builds(const BuildsQuery& q) {
    return guarded([&] { return BuildsRepo(*m_db).list(q); });
}

Result<std::optional<BuildRow>> AdminReads::build(std::int64_t id) {
    return guarded([&] { return BuildsRepo(*m_db).get(id); });
}

}  // namespace crcrd::store
