#include "crcrd/store/sqlite.hpp"

#include <sqlite3.h>

#include <fcntl.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include "wal_vfs.hpp"

namespace crcrd::store {

namespace {

[[noreturn]] void fail(sqlite3* db, int rc, std::string_view what) {
    throw SqlError(rc, std::string(what) + ": " + (db ? sqlite3_errmsg(db) : sqlite3_errstr(rc)));
}

void sqlite_log(void*, int code, const char* msg) {
    // SQLite's own diagnostics (never bound values): warnings for notices, errors otherwise.
    int primary = code & 0xff;
    if (primary == SQLITE_NOTICE || primary == SQLITE_WARNING)
        spdlog::debug("sqlite code={} {}", code, msg);
    else if (primary != SQLITE_BUSY && primary != SQLITE_CONSTRAINT)
        spdlog::warn("sqlite code={} {}", code, msg);
}

}  // namespace

Errc SqlError::kind() const {
    switch (m_code & 0xff) {
        case SQLITE_FULL:
            return Errc::storage_full;
        case SQLITE_BUSY:
        case SQLITE_LOCKED:
            return Errc::storage_busy;
        case SQLITE_READONLY:
            return Errc::storage_readonly;
        default:
            return Errc::storage;
    }
}

Stmt::Stmt(sqlite3* db, std::string_view sql) : m_db(db) {
    int rc = sqlite3_prepare_v3(db, sql.data(), static_cast<int>(sql.size()),
                                SQLITE_PREPARE_PERSISTENT, &m_stmt, nullptr);
    if (rc != SQLITE_OK) fail(db, rc, "prepare");
}

Stmt& Stmt::operator=(Stmt&& o) noexcept {
    if (this != &o) {
        sqlite3_finalize(m_stmt);
        m_db = o.m_db;
        m_stmt = o.m_stmt;
        o.m_stmt = nullptr;
    }
    return *this;
}

Stmt::~Stmt() {
    sqlite3_finalize(m_stmt);
}

Stmt& Stmt::bind(int i, std::int64_t v) {
    if (int rc = sqlite3_bind_int64(m_stmt, i, v); rc != SQLITE_OK) fail(m_db, rc, "bind");
    return *this;
}
Stmt& Stmt::bind(int i, double v) {
    if (int rc = sqlite3_bind_double(m_stmt, i, v); rc != SQLITE_OK) fail(m_db, rc, "bind");
    return *this;
}
Stmt& Stmt::bind(int i, std::string_view v) {
    if (int rc =
            sqlite3_bind_text(m_stmt, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
        rc != SQLITE_OK)
        fail(m_db, rc, "bind");
    return *this;
}
Stmt& Stmt::bind(int i, std::nullopt_t) {
    if (int rc = sqlite3_bind_null(m_stmt, i); rc != SQLITE_OK) fail(m_db, rc, "bind");
    return *this;
}
Stmt& Stmt::bind_blob(int i, std::string_view v) {
    if (int rc =
            sqlite3_bind_blob(m_stmt, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
        rc != SQLITE_OK)
        fail(m_db, rc, "bind");
    return *this;
}

bool Stmt::step() {
    int rc = sqlite3_step(m_stmt);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    sqlite3_reset(m_stmt);
    fail(m_db, rc, "step");
}

void Stmt::run() {
    while (step()) {
    }
}

void Stmt::reset() noexcept {
    sqlite3_reset(m_stmt);
    sqlite3_clear_bindings(m_stmt);
}

bool Stmt::is_null(int col) const {
    return sqlite3_column_type(m_stmt, col) == SQLITE_NULL;
}
std::int64_t Stmt::int64(int col) const {
    return sqlite3_column_int64(m_stmt, col);
}
double Stmt::real(int col) const {
    return sqlite3_column_double(m_stmt, col);
}
std::optional<std::int64_t> Stmt::opt_int64(int col) const {
    if (is_null(col)) return std::nullopt;
    return int64(col);
}
std::string Stmt::text(int col) const {
    auto* p = sqlite3_column_blob(m_stmt, col);
    int n = sqlite3_column_bytes(m_stmt, col);
    return p ? std::string(static_cast<const char*>(p), static_cast<std::size_t>(n))
             : std::string();
}
std::optional<std::string> Stmt::opt_text(int col) const {
    if (is_null(col)) return std::nullopt;
    return text(col);
}

Result<std::unique_ptr<Db>> Db::open(const std::filesystem::path& path, OpenOptions opts) {
    static const bool k_log_installed = [] {
        sqlite3_config(SQLITE_CONFIG_LOG, sqlite_log, nullptr);
        // No allocation statistics: with them every sqlite3_malloc and sqlite3_free takes one
        // process-wide mutex, which the writer and the readers of every thread contend for
        // (issue 16). Nothing reads sqlite3_memory_used().
        sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
        return true;
    }();
    (void)k_log_installed;
    sqlite3* raw = nullptr;
    int flags =
        opts.read_only ? SQLITE_OPEN_READONLY : (SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
    flags |= SQLITE_OPEN_NOMUTEX;
    if (!opts.read_only) {
        // A new database is the daemon's alone (0600; SQLite gives its -wal and -shm files the
        // same mode), whatever the umask: a test command run as another uid must not read it.
        int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (fd >= 0) ::close(fd);
    }
    // A writable connection hands each commit's WAL frames to the file system in a few writes,
    // not two per page (wal_vfs.hpp).
    int rc = sqlite3_open_v2(path.c_str(), &raw, flags, opts.read_only ? nullptr : wal_vfs::name());
    if (rc != SQLITE_OK) {
        std::string msg = raw ? sqlite3_errmsg(raw) : sqlite3_errstr(rc);
        sqlite3_close_v2(raw);
        return make_error(Errc::storage, "cannot open " + path.string() + ": " + msg);
    }
    std::unique_ptr<Db> db(new Db(raw));
    sqlite3_extended_result_codes(raw, 1);
    sqlite3_busy_timeout(raw, opts.busy_timeout_ms);
    try {
        if (!opts.read_only) db->exec("PRAGMA journal_mode=WAL");
        // temp_store=MEMORY: the statement journals of the writer's per-item savepoints and the
        // metrics' temporary event table stay in memory instead of temporary files written on
        // every commit (issue 16). Neither is ever needed after a crash.
        db->exec("PRAGMA synchronous=FULL; PRAGMA foreign_keys=ON; PRAGMA temp_store=MEMORY");
    } catch (const SqlError& e) {
        return make_error(e.kind(), "cannot set up " + path.string() + ": " + e.what());
    }
    return db;
}

Db::~Db() {
    m_cache.clear();
    sqlite3_close_v2(m_db);
}

void Db::exec(std::string_view sql) {
    std::string s(sql);
    char* err = nullptr;
    int rc = sqlite3_exec(m_db, s.c_str(), nullptr, nullptr, &err);
    if (rc != SQLITE_OK) {
        std::string msg = err ? err : sqlite3_errstr(rc);
        sqlite3_free(err);
        throw SqlError(sqlite3_extended_errcode(m_db), "exec: " + msg);
    }
}

Stmt& Db::cached(const std::string& sql) {
    auto it = m_cache.find(sql);
    if (it == m_cache.end()) it = m_cache.emplace(sql, Stmt(m_db, sql)).first;
    it->second.reset();
    return it->second;
}

void Db::reset_cached() {
    for (auto& [sql, st] : m_cache) st.reset();
}

std::int64_t Db::last_insert_rowid() const {
    return sqlite3_last_insert_rowid(m_db);
}
int Db::changes() const {
    return sqlite3_changes(m_db);
}

Transaction::Transaction(Db& db) : m_db(db) {
    m_db.exec("BEGIN IMMEDIATE");
}

Transaction::~Transaction() {
    if (!m_done) {
        try {
            m_db.exec("ROLLBACK");
        } catch (const SqlError&) {
            // Nothing more can be done; SQLite already rolled back on most errors.
        }
    }
}

void Transaction::commit() {
    m_db.exec("COMMIT");
    m_done = true;
}

}  // namespace crcrd::store

namespace crcrd::store {

Result<std::unique_ptr<Db>> open_reader(const std::filesystem::path& path) {
    return Db::open(path, OpenOptions{true, k_reader_busy_timeout_ms});
}

}  // namespace crcrd::store
