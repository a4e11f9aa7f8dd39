#pragma once
// A thin RAII layer over SQLite: connection, prepared statement, transaction.
// Inside this layer a failed SQLite call throws SqlError (carrying the extended result code);
// repositories catch it at their boundary and return a Result. Bound values are never logged.
// Only `store` uses this header; other modules see `Db` through crcrd/store/fwd.hpp and talk
// to the database through the repositories (runs.hpp, jobs.hpp, slots.hpp, outbox.hpp, ...).

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include "crcrd/core/result.hpp"

struct sqlite3;
struct sqlite3_stmt;

namespace crcrd::store {

class SqlError : public std::runtime_error {
  public:
    SqlError(int code, const std::string& what) : std::runtime_error(what), m_code(code) {}
    int code() const { return m_code; }
    /// "storage_full", "storage_busy", "storage_readonly" or "storage".
    Errc kind() const;

  private:
    int m_code;
};

/// A prepared statement, finalised on destruction. Bind indexes start at 1.
class Stmt {
  public:
    Stmt() = default;
    Stmt(sqlite3* db, std::string_view sql);
    Stmt(Stmt&& o) noexcept : m_db(o.m_db), m_stmt(o.m_stmt) { o.m_stmt = nullptr; }
    Stmt& operator=(Stmt&& o) noexcept;
    ~Stmt();

    Stmt& bind(int i, std::int64_t v);
    Stmt& bind(int i, double v);
    Stmt& bind(int i, std::string_view v);
    Stmt& bind(int i, const std::string& v) { return bind(i, std::string_view(v)); }
    Stmt& bind(int i, const char* v) { return bind(i, std::string_view(v)); }
    Stmt& bind(int i, std::nullopt_t);
    template <class T>
    Stmt& bind(int i, const std::optional<T>& v) {
        return v ? bind(i, *v) : bind(i, std::nullopt);
    }
    Stmt& bind_blob(int i, std::string_view v);

    /// Advances; true when a row is available, false when done.
    bool step();
    /// Steps to completion (for statements without rows).
    void run();
    /// Resets and clears bindings so the statement can be reused.
    void reset() noexcept;

    bool is_null(int col) const;
    std::int64_t int64(int col) const;
    double real(int col) const;
    std::optional<std::int64_t> opt_int64(int col) const;
    std::string text(int col) const;
    std::optional<std::string> opt_text(int col) const;

  private:
    sqlite3* m_db = nullptr;
    sqlite3_stmt* m_stmt = nullptr;
};

/// Writes to the WAL files of this process's writable connections since it started: those
/// SQLite made (two a page) and those that reached the file system (a commit's frames go out
/// together, src/store/wal_vfs.hpp). For tests and diagnostics.
struct WalWriteCounts {
    std::uint64_t by_sqlite = 0;
    std::uint64_t to_file = 0;
};
WalWriteCounts wal_write_counts();

struct OpenOptions {
    bool read_only = false;
    int busy_timeout_ms = 5000;
};

/// One connection: WAL, synchronous=FULL, foreign keys on, extended result codes.
class Db {
  public:
    /// Opens (creating when writable) the database at `path`; code "storage" on failure.
    static Result<std::unique_ptr<Db>> open(const std::filesystem::path& path,
                                            OpenOptions opts = {});
    ~Db();
    Db(const Db&) = delete;
    Db& operator=(const Db&) = delete;

    void exec(std::string_view sql);
    /// A statement prepared once per connection and reused; it comes back reset.
    Stmt& cached(const std::string& sql);
    /// Resets every cached statement, so that none keeps a read snapshot open (which would
    /// hold back checkpoints).
    void reset_cached();
    Stmt prepare(std::string_view sql) { return Stmt(m_db, sql); }
    std::int64_t last_insert_rowid() const;
    int changes() const;
    sqlite3* handle() { return m_db; }

  private:
    explicit Db(sqlite3* db) : m_db(db) {}
    sqlite3* m_db;
    std::map<std::string, Stmt> m_cache;
};

/// A cached statement borrowed for one scope: it comes back reset and is reset again (bindings
/// cleared) when the scope ends, so no statement keeps a read snapshot open. Never throws on exit.
class Scoped {
  public:
    Scoped(Db& db, const std::string& sql) : m_st(db.cached(sql)) {}
    ~Scoped() { m_st.reset(); }
    Scoped(const Scoped&) = delete;
    Scoped& operator=(const Scoped&) = delete;
    Stmt* operator->() noexcept { return &m_st; }
    Stmt& operator*() noexcept { return m_st; }

  private:
    Stmt& m_st;
};

/// The busy timeout of the readers' connections (the admin API, the planner, the sender,
/// recovery): a reader waits this long for the writer's checkpoint before failing.
inline constexpr int k_reader_busy_timeout_ms = 5000;

/// Opens a read-only connection for a reader (no creation, no WAL change); code "storage" when
/// the file cannot be opened.
Result<std::unique_ptr<Db>> open_reader(const std::filesystem::path& path);

/// BEGIN IMMEDIATE on construction; ROLLBACK on destruction unless commit() succeeded.
class Transaction {
  public:
    explicit Transaction(Db& db);
    ~Transaction();
    void commit();

  private:
    Db& m_db;
    bool m_done = false;
};

}  // namespace crcrd::store
