#pragma once
// The single writer: one thread owns the writable connection and runs submitted work in
// group commits. Every piece of work gets its own SAVEPOINT inside a shared transaction, so
// one failing piece changes nothing, and one fsync acknowledges a whole batch.

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <functional>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "crcrd/core/result.hpp"
#include "crcrd/core/worker_loop.hpp"
#include "crcrd/store/events.hpp"
#include "crcrd/store/fwd.hpp"

namespace crcrd::store {

struct WriterOptions {
    std::size_t max_pending = 10000;  // submit() refuses beyond this ("overloaded")
    std::size_t max_batch = 1024;
    /// When set, WAL checkpoints run on a second connection and thread instead of inside
    /// the writer's commits, so a commit never waits for the database file to be synced
    /// (but for one short pass per catch-up, below).
    std::filesystem::path checkpoint_path;
    std::chrono::milliseconds checkpoint_interval{500};
    /// With checkpoint_path: the size the WAL file is trimmed to when it is restarted (once a
    /// checkpoint has caught up). A log at three quarters of it is restarted even under
    /// writes that never pause: the checkpointer holds the writer's next batch for one short
    /// pass.
    std::int64_t wal_size_limit = std::int64_t{64} << 20;
};

class Writer;

/// Runs `fn` in a savepoint of `db`'s open transaction (in writer work or a commit hook): when
/// it throws, what it wrote is undone and the exception goes on; the rest of the transaction
/// stays.
void within_savepoint(Db& db, const std::function<void()>& fn);

/// Opens (creating it 0600 when missing) and migrates the database at `path` with the given busy
/// timeout, and starts its writer. Codes: "storage" (cannot open), "storage_version" (written by
/// a newer crcrd), other storage codes from the migration.
Result<std::unique_ptr<Writer>> open_writer(const std::filesystem::path& path, int busy_timeout_ms,
                                            WriterOptions opts);

class Writer {
  public:
    /// Work runs on the writer thread inside the group transaction; it may throw SqlError.
    using Work = std::function<void(Db&)>;
    /// Called on the writer thread once the batch is durably committed (Ok) or rolled back
    /// (the error). Must not block.
    using Done = std::function<void(Status)>;

    /// Takes ownership of an open, migrated connection and starts the thread.
    Writer(std::unique_ptr<Db> db, WriterOptions opts = {});
    /// Drains what was submitted, then stops.
    ~Writer();
    Writer(const Writer&) = delete;
    Writer& operator=(const Writer&) = delete;

    /// Queues work. Returns false (and never calls `done`) when the queue is full or the
    /// writer is stopping: the caller answers 503.
    bool submit(Work work, Done done);

    /// Submits `work` and waits for its commit: for worker threads (planner, dispatcher,
    /// start-up), never for a network thread. "overloaded" when the queue is full.
    Status run_sync(Work work);

    /// Stops accepting work, finishes what was queued, joins the thread. Idempotent.
    void stop();

    /// Each of `before` runs at the end of every batch, in order, inside its transaction (each
    /// in a savepoint of its own: when one throws, its work alone is undone, the batch still
    /// commits and that hook's work waits for the next one); `after` runs once a batch
    /// committed. Set before submitting work.
    void set_commit_hooks(std::vector<Work> before, std::function<void()> after);

    /// Receives, on the writer thread after each durable commit, the events that batch
    /// recorded (store/events.hpp; none before install_event_triggers() ran as writer work).
    /// Events of a rolled-back item or batch are never passed. Must not block. Set before
    /// submitting work.
    using EventSink = std::function<void(const std::vector<Event>&)>;
    void set_event_sink(EventSink sink);

    /// Work queued but not yet committed.
    std::size_t pending() const;

    /// Why the last batch failed to commit (a full disk, an I/O error, a lock held too long),
    /// or nullopt when it committed (or nothing was written yet). For /readyz: it reads the
    /// writer's state and writes nothing.
    std::optional<std::string> last_commit_error() const;
    /// Whether submit() would refuse work now (the queue is full).
    bool overloaded() const;

  private:
    struct Item {
        Work work;
        Done done;
    };
    /// The writer's loop: commits batches until the queue is empty.
    std::optional<core::WorkerLoop::Duration> pass();
    void commit_batch(std::deque<Item>& batch);
    /// The log's frames at a checkpoint's start, and those in the database after it.
    struct CheckpointPass {
        std::int64_t log = 0, done = 0;
    };
    /// One PASSIVE checkpoint on the checkpointer's connection; nullopt when it failed or
    /// another connection was checkpointing.
    std::optional<CheckpointPass> checkpoint_once();
    /// The checkpointer's loop: a checkpoint every interval, and a catch-up when a commit
    /// found the log long.
    std::optional<core::WorkerLoop::Duration> checkpoint_pass();
    /// Passes back to back after `first`, then one that holds the writer's next batch back so
    /// that it restarts the log.
    void catch_up_restart(CheckpointPass first);
    // The writer's commit left the log this many frames long (since its last restart).
    void log_length(std::int64_t frames);

    std::unique_ptr<Db> m_db;
    WriterOptions m_opts;
    std::vector<Work> m_before_commit;
    std::function<void()> m_after_commit;
    EventSink m_event_sink;
    mutable std::mutex m_mu;
    std::condition_variable m_unhold_cv;  // the writer waits for the checkpointer's hold to end
    std::condition_variable m_gate_cv;    // the checkpointer waits for the writer's batch to end
    // The catch-up's passes go on until one copied at most this many frames (1 MiB; fewer
    // for a small limit): the pass that holds the writer back copies about as many.
    static constexpr std::int64_t kCatchUpFrames = 256;
    std::deque<Item> m_queue;
    std::optional<std::string> m_last_commit;  // the last commit's error
    bool m_stopping = false;
    bool m_in_batch = false;  // the writer is in a batch (taken from the queue, not yet done)
    bool m_hold = false;      // the checkpointer's catch-up pass: take no batch now
    bool m_catch_up = false;  // a commit found the log at m_catch_up_frames or more
    std::int64_t m_catch_up_frames = std::numeric_limits<std::int64_t>::max();
    std::unique_ptr<Db> m_checkpoint_db;  // the checkpointer's connection
    core::WorkerLoop m_checkpointer{"storage checkpoint", [this] { return checkpoint_pass(); }};
    core::WorkerLoop m_loop{"writer", [this] { return pass(); },
                            core::WorkerLoop::Options{std::chrono::seconds(1), true}};
};

}  // namespace crcrd::store
