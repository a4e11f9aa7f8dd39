#pragma once
// Store-internal: runs a read on a store connection and turns a SqlError into an error value,
// so that no SQLite exception leaves the store through a reader's call.

#include <type_traits>
#include <utility>

#include "crcrd/core/result.hpp"
#include "crcrd/store/sqlite.hpp"

namespace crcrd::store {

template <class Fn>
auto guarded(Fn&& fn) -> Result<std::invoke_result_t<Fn>> {
    try {
        return std::forward<Fn>(fn)();
    } catch (const SqlError& e) {
        return make_error(e.kind(), e.what());
    }
}

}  // namespace crcrd::store
