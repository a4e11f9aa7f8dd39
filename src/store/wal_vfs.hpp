#pragma once
// Store-internal: a VFS over SQLite's "unix" VFS that hands the write-ahead log a transaction's
// frames in a few writes instead of two per page (issue 16).
//
// SQLite writes each WAL frame as two pwrite calls (its 24-byte header, then its page), so a
// commit of 60 pages is 120 system calls, expensive on a virtual machine. This VFS collects the
// contiguous writes to a WAL file in memory and writes them out before anything could depend on
// them being in the file: before the WAL is synced (the commit of a synchronous=FULL
// connection), read, truncated, sized or closed, before any write elsewhere in the file, and
// before the connection publishes new frames to other connections (the wal-index header's
// barrier) and before it gives up the WAL's write lock. Files other than the WAL pass straight
// through. A connection through it must use synchronous=FULL (Db::open's only mode): in
// another mode a commit's frames are first written at the barrier, which cannot fail, so a
// failure to write them there ends the process. The writes reach the disk in the
// same order and the sync covers the same bytes, so what a crash leaves is what it left before.

namespace crcrd::store::wal_vfs {

/// The name of the VFS, registered with SQLite on the first call (not as the default).
/// Meant for connections that write (Db::open uses it for every writable connection).
const char* name();

}  // namespace crcrd::store::wal_vfs
