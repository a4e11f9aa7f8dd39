#include "crcrd/store/writer.hpp"

#include "crcrd/store/schema.hpp"
#include "crcrd/store/sqlite.hpp"

#include <spdlog/spdlog.h>
#include <sqlite3.h>

#include <algorithm>
#include <future>
#include <optional>
#include <utility>
#include <vector>

namespace crcrd::store {

Result<std::unique_ptr<Writer>> open_writer(const std::filesystem::path& path, int busy_timeout_ms,
                                            WriterOptions opts) {
    OpenOptions o;
    o.busy_timeout_ms = busy_timeout_ms;
    auto db = Db::open(path, o);
    if (!db) return db.error();
    if (auto m = migrate(**db); !m) return m.error();
    return std::make_unique<Writer>(std::move(*db), std::move(opts));
}

Writer::Writer(std::unique_ptr<Db> db, WriterOptions opts)
    : m_db(std::move(db)), m_opts(std::move(opts)) {
    if (!m_opts.checkpoint_path.empty()) {
        auto cp = Db::open(m_opts.checkpoint_path);
        if (cp) {
            // The WAL is restarted, and trimmed to this size, by the writer's connection, not
            // the checkpointer's: without it a burst's WAL (hundreds of MiB: under sustained
            // writes no checkpoint catches up, so it only grows) kept its size until the
            // daemon stopped.
            m_db->exec("PRAGMA wal_autocheckpoint=0; PRAGMA journal_size_limit=" +
                       std::to_string(m_opts.wal_size_limit));
            std::int64_t page_size = 4096;
            if (auto ps = m_db->prepare("PRAGMA page_size"); ps.step()) page_size = ps.int64(0);
            // After each commit, with the log's length in frames since it was last restarted
            // (none when the limit is not a size: 0 trims to the minimum, -1 never).
            if (m_opts.wal_size_limit > 0) {
                m_catch_up_frames =
                    std::max<std::int64_t>(1, m_opts.wal_size_limit * 3 / 4 / (page_size + 24));
                sqlite3_wal_hook(
                    m_db->handle(),
                    [](void* self, sqlite3*, const char*, int frames) noexcept {
                        try {
                            static_cast<Writer*>(self)->log_length(frames);
                        } catch (...) {
                            // A mutex that cannot be locked: this commit does not start a catch-up.
                        }
                        return SQLITE_OK;
                    },
                    this);
            }
            m_checkpoint_db = std::move(*cp);
            m_checkpointer.start(m_opts.checkpoint_interval);
        } else {
            spdlog::warn("storage: checkpoints stay in the writer: {}", cp.error().message);
        }
    }
    m_loop.start();
}

Writer::~Writer() {
    stop();
}

void Writer::log_length(std::int64_t frames) {
    if (frames < m_catch_up_frames) return;
    {
        std::lock_guard lk(m_mu);
        if (m_catch_up) return;
        m_catch_up = true;
    }
    m_checkpointer.notify();
}

bool Writer::submit(Work work, Done done) {
    {
        std::lock_guard lk(m_mu);
        if (m_stopping || m_queue.size() >= m_opts.max_pending) return false;
        m_queue.push_back(Item{std::move(work), std::move(done)});
    }
    m_loop.notify();
    return true;
}

Status Writer::run_sync(Work work) {
    std::promise<Status> done;
    auto result = done.get_future();
    if (!submit(std::move(work), [&done](Status s) { done.set_value(std::move(s)); })) {
        return make_error(Errc::overloaded, "too many writes pending");
    }
    return result.get();
}

void Writer::stop() {
    {
        std::lock_guard lk(m_mu);
        m_stopping = true;  // submit() refuses from now on
    }
    m_checkpointer.stop();
    m_loop.stop();  // its last pass commits what was accepted
    if (!m_checkpoint_db) return;
    try {
        m_checkpoint_db->exec("PRAGMA wal_checkpoint(TRUNCATE)");
    } catch (const SqlError& e) {
        spdlog::warn("storage final checkpoint failed: {}", e.what());
    }
    m_checkpoint_db.reset();
}

std::optional<Writer::CheckpointPass> Writer::checkpoint_once() {
    // PASSIVE never blocks the writer; the WAL file is reused from its start once a checkpoint
    // has caught up (when writes pause, or by the catch-up below), and the writer's
    // journal_size_limit trims it.
    auto& st = m_checkpoint_db->cached("PRAGMA wal_checkpoint(PASSIVE)");
    try {
        st.reset();
        if (!st.step()) return std::nullopt;
        // (1, -1, -1): another connection (a sqlite3 shell, a backup) is checkpointing.
        const bool busy = st.int64(0) != 0;
        CheckpointPass p{st.int64(1), st.int64(2)};
        st.reset();
        if (busy || p.log < 0) return std::nullopt;
        return p;
    } catch (const SqlError& e) {
        spdlog::warn("storage checkpoint failed code={} error=\"{}\"", e.code(), e.what());
    } catch (const std::exception& e) {
        spdlog::warn("storage checkpoint failed: {}", e.what());
    }
    return std::nullopt;
}

std::optional<core::WorkerLoop::Duration> Writer::checkpoint_pass() {
    bool catch_up = false;
    {
        std::lock_guard lk(m_mu);
        catch_up = std::exchange(m_catch_up, false);
    }
    auto p = checkpoint_once();
    // A busy pass (another connection checkpointing) counts as a try too.
    const bool tried = catch_up && (!p || p->log >= m_catch_up_frames);
    if (tried && p) catch_up_restart(*p);
    // After a catch-up, the next one waits a fifth of the interval: a reader that keeps frames
    // out (or takes a read slot as the held batch begins, which makes SQLite skip the restart)
    // would otherwise make every commit start one.
    if (tried && !m_checkpointer.sleep_for(m_opts.checkpoint_interval / 5)) return std::nullopt;
    return m_opts.checkpoint_interval;
}

void Writer::catch_up_restart(CheckpointPass first) {
    // The writer's commit found the log at three quarters of its size limit (restarted before
    // the file outgrows the limit, which the writer would truncate back in a commit of 10-17 ms
    // on the bench machine). Under writes that never pause for a whole pass (one copies what
    // the commits since the last one wrote, then syncs the database file) no pass ends between
    // two commits, and the log is restarted only by a transaction that begins once every frame
    // is in the database: it grew without bound (docs/operations.md). Passes back to back
    // shrink what is left to what one short pass copies; then one pass holds the writer's next
    // batch back, so that the batch finds every frame in the database and writes the log from
    // its start. When writes come as fast as the passes copy, that pass copies as much as the
    // last one did (the price of a bounded log). When a reader's snapshot keeps frames out, or
    // another connection is checkpointing, nothing is held.
    //
    // A pass that copied at most this many frames is short enough to hold the writer for the
    // next one (256 frames, 1 MiB, 1-11 ms on the bench machine).
    const std::int64_t short_pass =
        std::clamp<std::int64_t>(m_catch_up_frames / 8, 1, kCatchUpFrames);
    std::optional<CheckpointPass> p = first;
    std::int64_t last = p->log;
    for (int i = 0; i < 8; ++i) {
        auto q = checkpoint_once();
        if (!q) return;
        const auto copied = q->log - p->done;
        p = q;
        // Short enough, or no longer shrinking (writes as fast as the passes copy).
        if (copied <= short_pass || copied * 4 > last * 3) break;
        last = copied;
    }
    if (p->done < p->log) return;
    {
        std::unique_lock lk(m_mu);
        if (m_stopping) return;
        m_hold = true;
        m_gate_cv.wait(lk, [&] { return !m_in_batch; });
    }
    checkpoint_once();  // catches everything it can throw
    {
        std::lock_guard lk(m_mu);
        m_hold = false;
        m_catch_up = false;  // the commits of this catch-up saw the log before its restart
    }
    m_unhold_cv.notify_all();
}

void within_savepoint(Db& db, const std::function<void()>& fn) {
    db.cached("SAVEPOINT part").run();
    try {
        fn();
    } catch (...) {
        db.cached("ROLLBACK TO part").run();
        db.cached("RELEASE part").run();
        throw;
    }
    db.cached("RELEASE part").run();
}

void Writer::set_commit_hooks(std::vector<Work> before, std::function<void()> after) {
    std::lock_guard lk(m_mu);
    m_before_commit = std::move(before);
    m_after_commit = std::move(after);
}

bool Writer::overloaded() const {
    std::lock_guard lk(m_mu);
    return m_queue.size() >= m_opts.max_pending;
}

void Writer::set_event_sink(EventSink sink) {
    std::lock_guard lk(m_mu);
    m_event_sink = std::move(sink);
}

std::optional<std::string> Writer::last_commit_error() const {
    std::lock_guard lk(m_mu);
    return m_last_commit;
}

std::size_t Writer::pending() const {
    std::lock_guard lk(m_mu);
    return m_queue.size();
}

std::optional<core::WorkerLoop::Duration> Writer::pass() {
    // Batches until the queue is empty; at the stop, the last pass commits what was accepted.
    for (;;) {
        std::deque<Item> batch;
        {
            std::unique_lock lk(m_mu);
            // The checkpointer's catch-up holds the next batch back for one pass.
            m_unhold_cv.wait(lk, [&] { return !m_hold; });
            if (m_queue.empty()) return std::nullopt;  // until submit() notifies
            m_in_batch = true;
            while (!m_queue.empty() && batch.size() < m_opts.max_batch) {
                batch.push_back(std::move(m_queue.front()));
                m_queue.pop_front();
            }
        }
        try {
            commit_batch(batch);
        } catch (const std::exception& e) {
            spdlog::error("writer: uncaught exception: {}", e.what());
        }
        {
            std::lock_guard lk(m_mu);
            m_in_batch = false;
        }
        m_gate_cv.notify_one();
    }
}

void Writer::commit_batch(std::deque<Item>& batch) {
    std::vector<Status> results(batch.size(), Status(Ok{}));
    Status batch_status = Ok{};
    std::vector<Event> events;
    try {
        Transaction tx(*m_db);
        // Prepared once (Db::cached), not parsed again for every item of every batch.
        auto& savepoint = m_db->cached("SAVEPOINT item");
        auto& release = m_db->cached("RELEASE item");
        auto& rollback = m_db->cached("ROLLBACK TO item");
        auto again = [](Stmt& st) {
            st.reset();
            st.run();
        };
        for (std::size_t i = 0; i < batch.size(); ++i) {
            again(savepoint);
            try {
                batch[i].work(*m_db);
                again(release);
            } catch (const SqlError& e) {
                results[i] = make_error(e.kind(), e.what());
                again(rollback);
                again(release);
            } catch (const std::exception& e) {
                results[i] = make_error(Errc::internal, e.what());
                again(rollback);
                again(release);
            }
        }
        for (const auto& hook : m_before_commit) {
            try {
                within_savepoint(*m_db, [&] { hook(*m_db); });
            } catch (const std::exception& e) {
                spdlog::error("storage commit hook failed: {}", e.what());
            }
        }
        if (m_event_sink) {
            // A statement's failure undoes only that statement: the events wait for the next batch.
            try {
                events = take_events(*m_db);
            } catch (const SqlError& e) {
                spdlog::warn("storage: metrics events not taken: {}", e.what());
            }
        }
        tx.commit();
        m_db->reset_cached();  // a statement stepped but not finished would pin the WAL
    } catch (const SqlError& e) {
        spdlog::error("storage commit failed batch={} code={} error=\"{}\"", batch.size(), e.code(),
                      e.what());
        batch_status = make_error(e.kind(), e.what());
    } catch (const std::exception& e) {
        spdlog::error("storage batch failed: {}", e.what());
        batch_status = make_error(Errc::storage, e.what());
    }
    {
        std::lock_guard lk(m_mu);
        m_last_commit = batch_status ? std::optional<std::string>() : batch_status.error().message;
    }
    // Counted before anyone hears of the commit: a client that saw its answer sees its count.
    if (batch_status && !events.empty()) m_event_sink(events);
    for (std::size_t i = 0; i < batch.size(); ++i) {
        batch[i].done(batch_status ? results[i] : batch_status);
    }
    if (batch_status && m_after_commit) m_after_commit();
}

}  // namespace crcrd::store
