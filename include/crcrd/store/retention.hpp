#pragma once
// Retention (docs/operations.md): what crcrd keeps forever (runs, jobs, test results, the
// rows of accepted deliveries) and what it prunes: accepted delivery bodies, delivered outbox
// rows and job logs older than `storage.retention`; rows of rejected requests older than
// `storage.rejected_retention` (docs/ingest.md).

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "crcrd/core/time.hpp"
#include "crcrd/core/worker_loop.hpp"
#include "crcrd/store/writer.hpp"

namespace crcrd::store {

struct Pruned {
    std::int64_t bodies = 0;        // delivery bodies dropped (the rows stay)
    std::int64_t outbox_rows = 0;   // sent, coalesced or dead rows deleted (waiting ones stay)
    std::vector<std::string> logs;  // job log files whose jobs finished before the cutoff
};

/// Inside a write transaction: deletes up to `limit` rows of rejected requests received
/// before `cutoff` (oldest first). Returns how many; call again while it returns `limit`.
std::int64_t prune_rejected(Db& db, SystemTime cutoff, std::int64_t limit);

/// Inside a write transaction: prunes what is older than `cutoff` (RFC 3339). A delivery body
/// stays while its run is still queued or running (the relay callback quotes it). Returns
/// the log files to delete; their jobs' `log_path` is cleared.
Pruned prune(Db& db, SystemTime cutoff);

/// A thread that prunes every `interval` through the writer, then deletes the log files.
class Pruner {
  public:
    /// `retention` applies to bodies, delivered outbox rows and logs, `rejected_retention` to
    /// the rows of rejected requests; 0 keeps them forever.
    Pruner(Writer& writer, std::chrono::milliseconds retention,
           std::chrono::milliseconds rejected_retention, std::chrono::milliseconds interval);
    ~Pruner();
    void start();
    void stop();

  private:
    /// One pass: prunes what is older than the retentions.
    void pass();
    Writer& m_writer;
    std::chrono::milliseconds m_retention, m_rejected_retention, m_interval;
    core::WorkerLoop m_loop{"retention", [this] {
                                pass();
                                return std::optional<core::WorkerLoop::Duration>(m_interval);
                            }};
};

}  // namespace crcrd::store
