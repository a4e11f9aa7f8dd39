#include "crcrd/store/meta.hpp"

#include "crcrd/store/sqlite.hpp"
#include "store/guarded.hpp"
#include "store/meta_rows.hpp"

namespace crcrd::store {

Result<FullMatrixMeta> read_full_matrix_meta(const std::filesystem::path& path) {
    auto db = open_reader(path);
    if (!db) return FullMatrixMeta{};
    return guarded([&] {
        FullMatrixMeta r;
        auto st = (*db)->prepare(
            "SELECT key, value FROM meta WHERE key IN ('full_matrix_schedule', "
            "'full_matrix_next')");
        while (st.step()) {
            if (st.text(0) == "full_matrix_schedule")
                r.schedule = st.text(1);
            else
                r.next = st.text(1);
        }
        return r;
    });
}

void put_meta(Db& db, const std::string& key, const std::string& value) {
    Scoped st(db,
              "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = "
              "excluded.value");
    st->bind(1, key).bind(2, value);
    st->run();
}

std::optional<std::string> read_recovery_watermark(Db& db) {
    Scoped wm(db, "SELECT value FROM meta WHERE key = 'recovery_watermark'");
    if (!wm->step()) return std::nullopt;
    return wm->text(0);
}

void put_recovery_watermark(Db& db, const std::string& value) {
    Scoped wm(db,
              "INSERT INTO meta (key, value) VALUES ('recovery_watermark', ?) ON CONFLICT (key) DO "
              "UPDATE SET value = excluded.value");
    wm->bind(1, value);
    wm->run();
}

}  // namespace crcrd::store
