#pragma once
// Store-internal: reading a column that holds a name of core/vocab.hpp.

#include <sqlite3.h>

#include <optional>
#include <string>

#include "crcrd/core/vocab.hpp"
#include "crcrd/store/sqlite.hpp"

namespace crcrd::store {

/// Column `col` of the current row as an E. A text that is no name of E (a row edited by hand)
/// is a broken invariant: throws SqlError (SQLITE_CORRUPT) naming `what` and the text.
template <class E>
E vocab_column(const Stmt& st, int col, const char* what) {
    const std::string text = st.text(col);
    if (auto e = from_string<E>(text)) return *e;
    throw SqlError(SQLITE_CORRUPT,
                   std::string(what) + " holds '" + text + "', not one of its names");
}

/// As vocab_column(), but NULL or "" (a column not set yet) is nullopt.
template <class E>
std::optional<E> opt_vocab_column(const Stmt& st, int col, const char* what) {
    if (st.is_null(col) || st.text(col).empty()) return std::nullopt;
    return vocab_column<E>(st, col, what);
}

}  // namespace crcrd::store
