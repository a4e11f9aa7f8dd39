#include "wal_vfs.hpp"

#include "crcrd/store/sqlite.hpp"

#include <sqlite3.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>

namespace crcrd::store::wal_vfs {

namespace {

// At most this much is collected (a burst's commit is about 0.3 MiB); SQLite's own writes are
// a page at most.
constexpr std::size_t k_max_buffer = 4u << 20;
// The unix VFS writes at most 128 KiB - 1 bytes a call (it masks the length with 0x1ffff), so
// the collected bytes go out in pieces of 31 pages.
constexpr std::size_t k_max_write = 31u * 4096u;
// A buffer grown past this by a large commit is given back after it.
constexpr std::size_t k_keep_buffer = 1u << 20;
// SQLite's WAL write lock: the wal-index lock at offset 0 (WAL_WRITE_LOCK in wal.c).
constexpr int k_wal_write_lock = 0;

std::atomic<std::uint64_t> g_wal_writes{0};
std::atomic<std::uint64_t> g_file_writes{0};

// The object SQLite allocates for each open file (szOsFile bytes): ours first, the real
// file's after it.
struct File {
    sqlite3_file base;         // must be first: SQLite sees this
    sqlite3_file* real;        // the unix VFS's file, inside the same allocation
    bool wal;                  // the WAL: its appends are collected
    File* wal_file;            // a database: its WAL's File while open
    File* database;            // a WAL: its database's File while open
    std::string* pending;      // a WAL: the writes not yet in the file
    sqlite3_int64 pending_at;  // the file offset of pending's first byte
};

constexpr std::size_t k_real_offset = (sizeof(File) + 15) & ~std::size_t(15);

File* as_file(sqlite3_file* f) {
    return reinterpret_cast<File*>(f);
}
const sqlite3_io_methods* real_methods(File* f) {
    return f->real->pMethods;
}

int flush(File* f) {
    if (!f->wal || f->pending->empty()) return SQLITE_OK;
    int rc = SQLITE_OK;
    for (std::size_t done = 0; done < f->pending->size() && rc == SQLITE_OK;) {
        const std::size_t n = std::min(k_max_write, f->pending->size() - done);
        g_file_writes.fetch_add(1, std::memory_order_relaxed);
        rc = real_methods(f)->xWrite(f->real, f->pending->data() + done, static_cast<int>(n),
                                     f->pending_at + static_cast<sqlite3_int64>(done));
        done += n;
    }
    // On a failure the transaction fails with it (the error reaches SQLite from the call that
    // flushed: the sync of its commit at the latest), and frames past the last commit mean
    // nothing, so the bytes are dropped either way.
    f->pending->clear();
    if (f->pending->capacity() > k_keep_buffer) std::string().swap(*f->pending);
    return rc;
}

int x_close(sqlite3_file* file) {
    File* f = as_file(file);
    int rc = flush(f);
    if (f->wal && f->database) f->database->wal_file = nullptr;
    if (!f->wal && f->wal_file) f->wal_file->database = nullptr;
    int closed = real_methods(f)->xClose(f->real);
    delete f->pending;
    f->pending = nullptr;
    return rc != SQLITE_OK ? rc : closed;
}

int x_read(sqlite3_file* file, void* out, int amount, sqlite3_int64 offset) {
    File* f = as_file(file);
    if (int rc = flush(f); rc != SQLITE_OK) return rc;
    return real_methods(f)->xRead(f->real, out, amount, offset);
}

int x_write(sqlite3_file* file, const void* data, int amount, sqlite3_int64 offset) {
    File* f = as_file(file);
    if (!f->wal) return real_methods(f)->xWrite(f->real, data, amount, offset);
    g_wal_writes.fetch_add(1, std::memory_order_relaxed);
    const auto n = static_cast<std::size_t>(amount);
    std::string& pending = *f->pending;
    const bool appends =
        !pending.empty() && offset == f->pending_at + static_cast<sqlite3_int64>(pending.size());
    if (!appends || pending.size() + n > k_max_buffer) {
        // Anything but the next bytes of the same run goes out in order: the collected bytes
        // first, then these (a frame rewritten in its own transaction, the header of a
        // restarted log).
        if (int rc = flush(f); rc != SQLITE_OK) return rc;
        f->pending_at = offset;
    }
    try {
        pending.append(static_cast<const char*>(data), n);
    } catch (const std::bad_alloc&) {
        return SQLITE_IOERR_NOMEM;
    }
    return SQLITE_OK;
}

int x_truncate(sqlite3_file* file, sqlite3_int64 size) {
    File* f = as_file(file);
    if (int rc = flush(f); rc != SQLITE_OK) return rc;
    return real_methods(f)->xTruncate(f->real, size);
}

int x_sync(sqlite3_file* file, int flags) {
    File* f = as_file(file);
    if (int rc = flush(f); rc != SQLITE_OK) return rc;
    return real_methods(f)->xSync(f->real, flags);
}

int x_file_size(sqlite3_file* file, sqlite3_int64* size) {
    File* f = as_file(file);
    if (int rc = flush(f); rc != SQLITE_OK) return rc;
    return real_methods(f)->xFileSize(f->real, size);
}

int x_lock(sqlite3_file* file, int level) {
    return real_methods(as_file(file))->xLock(as_file(file)->real, level);
}
int x_unlock(sqlite3_file* file, int level) {
    return real_methods(as_file(file))->xUnlock(as_file(file)->real, level);
}
int x_check_reserved_lock(sqlite3_file* file, int* out) {
    return real_methods(as_file(file))->xCheckReservedLock(as_file(file)->real, out);
}

int x_file_control(sqlite3_file* file, int op, void* arg) {
    File* f = as_file(file);
    if (int rc = flush(f); rc != SQLITE_OK) return rc;
    return real_methods(f)->xFileControl(f->real, op, arg);
}

int x_sector_size(sqlite3_file* file) {
    return real_methods(as_file(file))->xSectorSize(as_file(file)->real);
}
int x_device_characteristics(sqlite3_file* file) {
    return real_methods(as_file(file))->xDeviceCharacteristics(as_file(file)->real);
}

int x_shm_map(sqlite3_file* file, int region, int size, int extend, void volatile** out) {
    return real_methods(as_file(file))->xShmMap(as_file(file)->real, region, size, extend, out);
}
int x_shm_lock(sqlite3_file* file, int offset, int n, int flags) {
    File* f = as_file(file);
    if (f->wal_file && (flags & SQLITE_SHM_UNLOCK) && offset <= k_wal_write_lock &&
        offset + n > k_wal_write_lock) {
        // Whatever was written under the write lock is in the file before another connection
        // can take it, as without this VFS: frames a rolled-back transaction spilled would
        // otherwise reach the file later, over frames another writer committed at the same
        // offsets meanwhile. (After a synchronous=FULL commit there is nothing left to write.)
        if (int rc = flush(f->wal_file); rc != SQLITE_OK) {
            sqlite3_log(rc, "crcrd-wal: frames of a transaction that did not commit not written");
        }
    }
    return real_methods(f)->xShmLock(f->real, offset, n, flags);
}
void x_shm_barrier(sqlite3_file* file) {
    // SQLite calls the barrier between the two copies of the wal-index header that make new
    // frames visible to other connections: they must be in the file by then. A
    // synchronous=FULL commit (Db::open sets no other mode) has written them at its sync, so
    // there is nothing left here; in any other mode they are written now, and since the
    // barrier cannot fail, a failure to write them ends the process before the frames are
    // published without their bytes (readers and the checkpoint would read zeros).
    File* f = as_file(file);
    if (f->wal_file) {
        if (int rc = flush(f->wal_file); rc != SQLITE_OK) {
            std::fprintf(stderr,
                         "crcrd-wal: WAL frames could not be written before their commit was "
                         "published (SQLite code %d)\n",
                         rc);
            std::abort();
        }
    }
    real_methods(f)->xShmBarrier(f->real);
}
int x_shm_unmap(sqlite3_file* file, int remove) {
    return real_methods(as_file(file))->xShmUnmap(as_file(file)->real, remove);
}
int x_fetch(sqlite3_file* file, sqlite3_int64 offset, int amount, void** out) {
    File* f = as_file(file);
    if (int rc = flush(f); rc != SQLITE_OK) return rc;
    return real_methods(f)->xFetch(f->real, offset, amount, out);
}
int x_unfetch(sqlite3_file* file, sqlite3_int64 offset, void* p) {
    return real_methods(as_file(file))->xUnfetch(as_file(file)->real, offset, p);
}

// SQLite calls no method beyond a file's iVersion, so each version gets a table of its own
// and a file gets the one its real file has.
sqlite3_io_methods methods_of_version(int version) {
    sqlite3_io_methods m{};
    m.iVersion = version;
    m.xClose = x_close;
    m.xRead = x_read;
    m.xWrite = x_write;
    m.xTruncate = x_truncate;
    m.xSync = x_sync;
    m.xFileSize = x_file_size;
    m.xLock = x_lock;
    m.xUnlock = x_unlock;
    m.xCheckReservedLock = x_check_reserved_lock;
    m.xFileControl = x_file_control;
    m.xSectorSize = x_sector_size;
    m.xDeviceCharacteristics = x_device_characteristics;
    if (version >= 2) {
        m.xShmMap = x_shm_map;
        m.xShmLock = x_shm_lock;
        m.xShmBarrier = x_shm_barrier;
        m.xShmUnmap = x_shm_unmap;
    }
    if (version >= 3) {
        m.xFetch = x_fetch;
        m.xUnfetch = x_unfetch;
    }
    return m;
}

const sqlite3_io_methods k_methods[3] = {methods_of_version(1), methods_of_version(2),
                                         methods_of_version(3)};

bool is_ours(const sqlite3_file* f) {
    return f && (f->pMethods == &k_methods[0] || f->pMethods == &k_methods[1] ||
                 f->pMethods == &k_methods[2]);
}

sqlite3_vfs* real_vfs(sqlite3_vfs* vfs) {
    return static_cast<sqlite3_vfs*>(vfs->pAppData);
}

int x_open(sqlite3_vfs* vfs, sqlite3_filename name, sqlite3_file* file, int flags, int* out_flags) {
    File* f = as_file(file);
    std::memset(f, 0, sizeof(File));
    f->real = reinterpret_cast<sqlite3_file*>(reinterpret_cast<char*>(file) + k_real_offset);
    f->real->pMethods = nullptr;
    f->wal = (flags & SQLITE_OPEN_WAL) != 0;
    if (f->wal) {
        f->pending = new (std::nothrow) std::string();
        if (!f->pending) return SQLITE_NOMEM;
    }
    int rc = real_vfs(vfs)->xOpen(real_vfs(vfs), name, f->real, flags, out_flags);
    if (rc != SQLITE_OK || !f->real->pMethods) {
        if (f->real->pMethods) f->real->pMethods->xClose(f->real);
        delete f->pending;
        f->pending = nullptr;
        f->base.pMethods = nullptr;
        return rc != SQLITE_OK ? rc : SQLITE_CANTOPEN;
    }
    int version = f->real->pMethods->iVersion;
    f->base.pMethods = &k_methods[version >= 3 ? 2 : version == 2 ? 1 : 0];
    if (f->wal && name) {
        sqlite3_file* database = sqlite3_database_file_object(name);
        if (is_ours(database)) {
            f->database = as_file(database);
            f->database->wal_file = f;
        }
    }
    return SQLITE_OK;
}

int x_delete(sqlite3_vfs* vfs, const char* name, int sync_dir) {
    return real_vfs(vfs)->xDelete(real_vfs(vfs), name, sync_dir);
}
int x_access(sqlite3_vfs* vfs, const char* name, int flags, int* out) {
    return real_vfs(vfs)->xAccess(real_vfs(vfs), name, flags, out);
}
int x_full_pathname(sqlite3_vfs* vfs, const char* name, int n, char* out) {
    return real_vfs(vfs)->xFullPathname(real_vfs(vfs), name, n, out);
}
void* x_dl_open(sqlite3_vfs* vfs, const char* name) {
    return real_vfs(vfs)->xDlOpen(real_vfs(vfs), name);
}
void x_dl_error(sqlite3_vfs* vfs, int n, char* out) {
    real_vfs(vfs)->xDlError(real_vfs(vfs), n, out);
}
void (*x_dl_sym(sqlite3_vfs* vfs, void* handle, const char* symbol))(void) {
    return real_vfs(vfs)->xDlSym(real_vfs(vfs), handle, symbol);
}
void x_dl_close(sqlite3_vfs* vfs, void* handle) {
    real_vfs(vfs)->xDlClose(real_vfs(vfs), handle);
}
int x_randomness(sqlite3_vfs* vfs, int n, char* out) {
    return real_vfs(vfs)->xRandomness(real_vfs(vfs), n, out);
}
int x_sleep(sqlite3_vfs* vfs, int micros) {
    return real_vfs(vfs)->xSleep(real_vfs(vfs), micros);
}
int x_current_time(sqlite3_vfs* vfs, double* out) {
    return real_vfs(vfs)->xCurrentTime(real_vfs(vfs), out);
}
int x_get_last_error(sqlite3_vfs* vfs, int n, char* out) {
    return real_vfs(vfs)->xGetLastError(real_vfs(vfs), n, out);
}
int x_current_time_int64(sqlite3_vfs* vfs, sqlite3_int64* out) {
    return real_vfs(vfs)->xCurrentTimeInt64(real_vfs(vfs), out);
}

sqlite3_vfs* registered() {
    static sqlite3_vfs* vfs = [] {
        sqlite3_initialize();
        sqlite3_vfs* unix_vfs = sqlite3_vfs_find("unix");
        if (!unix_vfs || unix_vfs->iVersion < 2)
            throw std::runtime_error("SQLite has no unix VFS of version 2 or later");
        static sqlite3_vfs v{};
        v.iVersion = 2;
        v.szOsFile = static_cast<int>(k_real_offset) + unix_vfs->szOsFile;
        v.mxPathname = unix_vfs->mxPathname;
        v.zName = "crcrd-wal";
        v.pAppData = unix_vfs;
        v.xOpen = x_open;
        v.xDelete = x_delete;
        v.xAccess = x_access;
        v.xFullPathname = x_full_pathname;
        v.xDlOpen = x_dl_open;
        v.xDlError = x_dl_error;
        v.xDlSym = x_dl_sym;
        v.xDlClose = x_dl_close;
        v.xRandomness = x_randomness;
        v.xSleep = x_sleep;
        v.xCurrentTime = x_current_time;
        v.xGetLastError = x_get_last_error;
        v.xCurrentTimeInt64 = x_current_time_int64;
        if (int rc = sqlite3_vfs_register(&v, 0); rc != SQLITE_OK) {
            throw std::runtime_error(std::string("cannot register SQLite VFS: ") +
                                     sqlite3_errstr(rc));
        }
        return &v;
    }();
    return vfs;
}

}  // namespace

const char* name() {
    return registered()->zName;
}

}  // namespace crcrd::store::wal_vfs

namespace crcrd::store {

WalWriteCounts wal_write_counts() {
    return WalWriteCounts{wal_vfs::g_wal_writes.load(std::memory_order_relaxed),
                          wal_vfs::g_file_writes.load(std::memory_order_relaxed)};
}

}  // namespace crcrd::store
