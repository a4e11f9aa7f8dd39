#pragma once
// The outbox (docs/reporting.md) as rows: what the writer's hook reads to decide the statuses
// and callbacks a run should show and appends for them (OutboxRepo, on the writer's
// connection), and what the sender reads to deliver them (OutboxQueue, on its own read-only
// connection). What the statuses say stays in report/.

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "crcrd/core/result.hpp"
#include "crcrd/core/time.hpp"
#include "crcrd/core/vocab.hpp"
#include "crcrd/store/fwd.hpp"

namespace crcrd::store {

/// A run as its statuses describe it; NULL columns read as "".
struct StatusRun {
    std::int64_t id = 0;
    std::string sha;
    RunState state = RunState::queued;
    std::optional<Conclusion> conclusion;  // once completed
    std::string reason;
    RunEvent event = RunEvent::push;
    std::string delivery_id, created_at, finished_at;
    std::string culprit;  // a bisection of this run found it (docs/verdicts.md); "" otherwise
};

/// The latest attempt of one tier; NULL columns read as "" (counts as "null").
struct StatusJob {
    std::string tier;
    JobState state = JobState::queued;
    std::optional<Conclusion> conclusion;  // once completed
    std::string reason, slot, started_at;
    std::int64_t attempt = 1;
    std::string counts_json;
    /// A base check (docs/verdicts.md): the SHA it runs on and how many failing tests it checks.
    bool base_check = false;
    std::string sha;
    std::int64_t checked = 0;
    /// A queued build job whose key another job builds (docs/build.md): that job.
    std::optional<std::int64_t> waiting_on;
};

/// One attempt of a tier that started; NULL columns read as "" (counts as "null").
struct StartedAttempt {
    std::int64_t id = 0;
    std::string tier;
    std::int64_t attempt = 1;
    JobState state = JobState::running;
    std::optional<Conclusion> conclusion;  // once completed
    std::string reason, started_at, finished_at, counts_json;
};

/// The CRCR delivery that queued a run: the relay's delivery id and the stored body, still
/// zstd-compressed.
struct DispatchRecord {
    std::string crcr_delivery_id;
    std::string body_zstd;
};

/// The newest row of one (run, sink, context); `shown`: a row of it was sent.
struct LastStatus {
    std::string state, description;
    bool shown = false;
};

/// A status or callback to append.
struct NewStatusRow {
    Sink sink = Sink::github;
    std::int64_t run_id = 0;
    std::string sha, context, state, description;
    std::optional<std::string> target_url, body;
    std::string created_at;
    /// The GitHub lane's order (report::StatusPriority); 0 for the other sinks.
    std::int64_t priority = 0;
};

/// What POST /api/v1/outbox/{id}/retry found.
struct RequeueOutcome {
    enum class Kind { requeued, not_found, not_dead, newer_reported };
    Kind kind = Kind::not_found;
    OutboxDelivery delivery = OutboxDelivery::waiting;  // the row's delivery state (not_dead)
    std::string context;                                // the row's context (newer_reported)
};

/// One delivery attempt's outcome, as the sender stores it.
struct AttemptRecord {
    enum class Kind { sent, dead, again };  // again: the row stays waiting
    std::int64_t id = 0;
    Kind kind = Kind::again;
    std::optional<std::int64_t> http_status;
    std::optional<std::string> error;
    std::optional<std::string> next_attempt_at;  // RFC 3339
};

/// A waiting row as the sender delivers it.
struct OutboxItem {
    std::int64_t id = 0;
    Sink sink = Sink::github;
    std::string sha, context, state, description;
    std::optional<std::string> target_url, body;
    std::int64_t attempts = 0;
    std::int64_t run_id = 0;
    /// Requests made for it so far (written before each request, so a request whose answer a
    /// crash lost is counted), and how many of them were answered 4xx (not acted on).
    std::int64_t tried = 0;
    std::int64_t refused = 0;
    std::int64_t priority = 0;
};

/// A request a lane made: when, and the priority of the row it carried.
struct MadeRequest {
    SystemTime at;
    std::int64_t priority = 0;
    bool operator==(const MadeRequest&) const = default;
};

/// The order in which a lane takes its due rows: id order, or (priority, newest run, id), the
/// GitHub lane's (its rows only).
enum class LaneOrder { fifo, priority };

/// The outbox on the writer's connection. Every call runs inside the caller's writer item,
/// hook or transaction and throws SqlError on a storage failure (the Writer rolls the item
/// back); none commits.
class OutboxRepo {
  public:
    explicit OutboxRepo(Db& db) noexcept : m_db(db) {}

    /// Empties status_dirty and returns the runs it named (whether or not a sink is set).
    std::vector<std::int64_t> take_dirty();
    /// The run `run_id`, or nullopt when there is none.
    std::optional<StatusRun> status_run(std::int64_t run_id);
    /// The latest attempt of each of the run's tiers, in tier order.
    std::vector<StatusJob> latest_attempts(std::int64_t run_id);
    /// The first queued CRCR delivery of the run that has a delivery id and a body, or nullopt.
    std::optional<DispatchRecord> dispatch_record(std::int64_t run_id);
    /// Every attempt of the run's tiers that started, in id order.
    std::vector<StartedAttempt> started_attempts(std::int64_t run_id);
    /// The newest row of (run, sink, context), or nullopt when none was ever appended.
    std::optional<LastStatus> last_status(std::int64_t run_id, Sink sink,
                                          const std::string& context);
    /// Appends `row` (waiting), then marks the older rows of the same (sink, sha, context) that
    /// still wait as coalesced. Returns the new row's id.
    std::int64_t append(const NewStatusRow& row);
    /// Puts a dead row back to waiting with no attempts (and no requests tried), unless it is not
    /// dead or a newer row of its (sink, sha, context) is waiting or was sent. Changes nothing
    /// otherwise.
    RequeueOutcome requeue_dead(std::int64_t id);
    /// Stores each outcome in order: sent and dead end the row, again keeps it waiting; the
    /// attempts count grows by one, `now` is the sent time of a sent row.
    void record_attempts(const std::vector<AttemptRecord>& done, SystemTime now);
    /// Before a request of `sink`'s lane: counts it in the lane's request log (for its budget
    /// across restarts, with the row's priority; entries older than a day go) and in row `id`'s
    /// `tried`.
    void note_request(Sink sink, std::int64_t id, SystemTime at);

  private:
    Db& m_db;
};

/// The sender thread's read-only connection to the outbox. Every read returns a storage error
/// as a value (code "storage", "storage_busy", ...); a caller that gets one should open a new
/// queue. Not thread-safe: one thread uses it.
class OutboxQueue {
  public:
    /// Opens the database at `db` read-only with the readers' busy timeout; code "storage" when
    /// it cannot be opened.
    static Result<OutboxQueue> open(const std::filesystem::path& db);
    OutboxQueue(OutboxQueue&&) noexcept;
    OutboxQueue& operator=(OutboxQueue&&) noexcept;
    ~OutboxQueue();

    /// The first `limit` waiting rows of `sink` due at `now`, in `order`.
    Result<std::vector<OutboxItem>> due(Sink sink, SystemTime now, LaneOrder order,
                                        std::int64_t limit = 100);
    /// The delivery state of row `id`, or nullopt when it is gone.
    Result<std::optional<OutboxDelivery>> delivery_of(std::int64_t id);
    /// The earliest retry time of a waiting row of `sink` that has one, or nullopt.
    Result<std::optional<SystemTime>> earliest_retry(Sink sink);
    /// The requests `sink`'s lane made at or after `since`, oldest first.
    Result<std::vector<MadeRequest>> requests_made(Sink sink, SystemTime since);
    /// The delivery state of the run's first callback row with `context`, or nullopt.
    Result<std::optional<OutboxDelivery>> first_callback_delivery(std::int64_t run_id,
                                                                  const std::string& context);
    /// How many GitHub statuses of (sha, context) were sent.
    Result<std::int64_t> github_sent_count(const std::string& sha, const std::string& context);

  private:
    explicit OutboxQueue(std::unique_ptr<Db> db);
    std::unique_ptr<Db> m_db;
};

}  // namespace crcrd::store
