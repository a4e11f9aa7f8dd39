#include "crcrd/store/outbox.hpp"

#include "crcrd/store/sqlite.hpp"
#include "store/guarded.hpp"
#include "store/vocab_column.hpp"

namespace crcrd::store {

namespace {

const char* bound(AttemptRecord::Kind k) {
    switch (k) {
        case AttemptRecord::Kind::sent:
            return "sent";
        case AttemptRecord::Kind::dead:
            return "dead";
        case AttemptRecord::Kind::again:
            return "again";
    }
    return "again";
}

}  // namespace

std::vector<std::int64_t> OutboxRepo::take_dirty() {
    // Read, then emptied at once (as take_events: no temporary table for RETURNING).
    std::vector<std::int64_t> ids;
    {
        Scoped take(m_db, "SELECT run_id FROM status_dirty");
        while (take->step()) ids.push_back(take->int64(0));
    }
    if (!ids.empty()) {
        Scoped clear(m_db, "DELETE FROM status_dirty");
        clear->run();
    }
    return ids;
}

std::optional<StatusRun> OutboxRepo::status_run(std::int64_t run_id) {
    Scoped rs(m_db,
              "SELECT sha, state, coalesce(conclusion,''), coalesce(reason,''), event, "
              "coalesce(delivery_id,''), created_at, "
              "coalesce(finished_at,''), coalesce((SELECT b.culprit FROM bisections b WHERE "
              "b.bad_run_id = runs.id), '') "
              "FROM runs WHERE id = ?");
    rs->bind(1, run_id);
    if (!rs->step()) return std::nullopt;
    return StatusRun{run_id,
                     rs->text(0),
                     vocab_column<RunState>(*rs, 1, "runs.state"),
                     opt_vocab_column<Conclusion>(*rs, 2, "runs.conclusion"),
                     rs->text(3),
                     vocab_column<RunEvent>(*rs, 4, "runs.event"),
                     rs->text(5),
                     rs->text(6),
                     rs->text(7),
                     rs->text(8)};
}

std::vector<StatusJob> OutboxRepo::latest_attempts(std::int64_t run_id) {
    Scoped js(m_db,
              "SELECT tier, state, coalesce(conclusion,''), coalesce(reason,''), "
              "coalesce(slot,''), attempt, "
              "coalesce(counts,'null'), coalesce(started_at,''), base_check IS NOT NULL, "
              "coalesce(sha,''), "
              "coalesce(json_array_length(base_check),0), "
              "(SELECT b.job_id FROM builds b WHERE j.state = 'queued' AND b.key = j.build_key "
              "AND b.job_id <> j.id AND b.state IN ('queued','running')) "
              "FROM jobs j WHERE run_id = ? "
              "AND attempt = (SELECT max(attempt) FROM jobs k WHERE k.run_id = j.run_id AND "
              "k.position = j.position) "
              "ORDER BY position");
    js->bind(1, run_id);
    std::vector<StatusJob> out;
    while (js->step()) {
        out.push_back({js->text(0), vocab_column<JobState>(*js, 1, "jobs.state"),
                       opt_vocab_column<Conclusion>(*js, 2, "jobs.conclusion"), js->text(3),
                       js->text(4), js->text(7), js->int64(5), js->text(6), js->int64(8) != 0,
                       js->text(9), js->int64(10), js->opt_int64(11)});
    }
    return out;
}

std::optional<DispatchRecord> OutboxRepo::dispatch_record(std::int64_t run_id) {
    Scoped st(m_db,
              "SELECT crcr_delivery_id, body FROM deliveries INDEXED BY deliveries_by_run "
              "WHERE run_id = ? AND verdict = 'queued' AND crcr_delivery_id IS NOT NULL "
              "ORDER BY id LIMIT 1");
    st->bind(1, run_id);
    if (!st->step() || st->is_null(1)) return std::nullopt;
    return DispatchRecord{st->text(0), st->text(1)};
}

std::vector<StartedAttempt> OutboxRepo::started_attempts(std::int64_t run_id) {
    Scoped js(
        m_db,
        // A base check is the tier's next attempt to the relay too: its `completed` carries the
        // tier's class (pre_existing, or the regression it stays), as HUD shows the last attempt.
        "SELECT id, tier, attempt, state, "
        "coalesce(conclusion,''), coalesce(reason,''), started_at, coalesce(finished_at,''), "
        "coalesce(counts,'null') FROM jobs WHERE run_id = ? AND started_at IS NOT NULL ORDER BY "
        "id");
    js->bind(1, run_id);
    std::vector<StartedAttempt> out;
    while (js->step()) {
        out.push_back({js->int64(0), js->text(1), js->int64(2),
                       vocab_column<JobState>(*js, 3, "jobs.state"),
                       opt_vocab_column<Conclusion>(*js, 4, "jobs.conclusion"), js->text(5),
                       js->text(6), js->text(7), js->text(8)});
    }
    return out;
}

std::optional<LastStatus> OutboxRepo::last_status(std::int64_t run_id, Sink sink,
                                                  const std::string& context) {
    Scoped last(m_db,
                "SELECT state, description, EXISTS (SELECT 1 FROM outbox s WHERE s.run_id = "
                "o.run_id AND s.context = o.context AND s.sink = o.sink AND s.delivery = 'sent') "
                "FROM outbox o WHERE run_id = ? AND sink = ? AND context = ? ORDER BY id DESC "
                "LIMIT 1");
    last->bind(1, run_id).bind(2, to_string(sink)).bind(3, context);
    if (!last->step()) return std::nullopt;
    return LastStatus{last->text(0), last->text(1), last->int64(2) != 0};
}

std::int64_t OutboxRepo::append(const NewStatusRow& row) {
    std::int64_t id = 0;
    {
        Scoped ins(m_db,
                   "INSERT INTO outbox (sink, run_id, sha, context, state, description, "
                   "target_url, body, created_at, priority) "
                   "VALUES (?,?,?,?,?,?,?,?,?,?)");
        ins->bind(1, to_string(row.sink))
            .bind(2, row.run_id)
            .bind(3, row.sha)
            .bind(4, row.context)
            .bind(5, row.state);
        ins->bind(6, row.description)
            .bind(7, row.target_url)
            .bind(8, row.body)
            .bind(9, row.created_at)
            .bind(10, row.priority);
        ins->run();
        id = m_db.last_insert_rowid();
    }
    // The rows it coalesces are found first, then changed one by one: an UPDATE that changes the
    // column of the index it is looking through collects the rows in a temporary table first,
    // even when there is none (most appends: a new SHA's first status).
    std::vector<std::int64_t> older;
    {
        Scoped waiting(m_db,
                       "SELECT id FROM outbox INDEXED BY outbox_by_key WHERE sink = ? AND sha = ? "
                       "AND context = ? "
                       "AND delivery = 'waiting' AND id < ?");
        waiting->bind(1, to_string(row.sink)).bind(2, row.sha).bind(3, row.context).bind(4, id);
        while (waiting->step()) older.push_back(waiting->int64(0));
    }
    if (!older.empty()) {
        Scoped coalesce(m_db, "UPDATE outbox SET delivery = 'coalesced' WHERE id = ?");
        for (auto old_id : older) {
            coalesce->reset();
            coalesce->bind(1, old_id);
            coalesce->run();
        }
    }
    return id;
}

RequeueOutcome OutboxRepo::requeue_dead(std::int64_t id) {
    RequeueOutcome out;
    std::string sink, sha;
    {
        Scoped row(m_db, "SELECT delivery, sink, sha, context FROM outbox WHERE id = ?");
        row->bind(1, id);
        if (!row->step()) return {RequeueOutcome::Kind::not_found, OutboxDelivery::waiting, ""};
        out.delivery = vocab_column<OutboxDelivery>(*row, 0, "outbox.delivery");
        sink = row->text(1);
        sha = row->text(2);
        out.context = row->text(3);
    }
    if (out.delivery != OutboxDelivery::dead) {
        out.kind = RequeueOutcome::Kind::not_dead;
        return out;
    }
    {
        Scoped newer(
            m_db,
            "SELECT count(*) FROM outbox WHERE sink = ? AND sha = ? AND context = ? AND id > ? "
            "AND delivery IN ('waiting','sent')");
        newer->bind(1, sink).bind(2, sha).bind(3, out.context).bind(4, id);
        newer->step();
        if (newer->int64(0) > 0) {
            out.kind = RequeueOutcome::Kind::newer_reported;
            return out;
        }
    }
    Scoped again(m_db,
                 "UPDATE outbox SET delivery = 'waiting', attempts = 0, tried = 0, refused = 0, "
                 "next_attempt_at = NULL WHERE id = ?");
    again->bind(1, id);
    again->run();
    out.kind = RequeueOutcome::Kind::requeued;
    return out;
}

void OutboxRepo::record_attempts(const std::vector<AttemptRecord>& done, SystemTime now_at) {
    const std::string now = rfc3339(now_at);
    Scoped upd(m_db,
               "UPDATE outbox SET delivery = CASE ?1 WHEN 'sent' THEN 'sent' WHEN 'dead' THEN "
               "'dead' ELSE delivery END, "
               "attempts = attempts + 1, http_status = ?2, last_error = ?3, next_attempt_at = ?4, "
               "refused = refused + coalesce(?2 BETWEEN 400 AND 499, 0), "
               "sent_at = CASE ?5 WHEN 'sent' THEN ?6 ELSE sent_at END WHERE id = ?7");
    for (const auto& a : done) {
        const char* kind = bound(a.kind);
        upd->reset();
        upd->bind(1, kind)
            .bind(2, a.http_status)
            .bind(3, a.error)
            .bind(4, a.next_attempt_at)
            .bind(5, kind)
            .bind(6, now)
            .bind(7, a.id);
        upd->run();
    }
}

void OutboxRepo::note_request(Sink sink, std::int64_t id, SystemTime at) {
    {
        Scoped log(m_db,
                   "INSERT INTO report_requests (sink, at, priority) VALUES "
                   "(?, ?, COALESCE((SELECT priority FROM outbox WHERE id = ?), 0))");
        log->bind(1, to_string(sink)).bind(2, rfc3339(at)).bind(3, id);
        log->run();
    }
    {
        Scoped old(m_db, "DELETE FROM report_requests WHERE sink = ? AND at < ?");
        old->bind(1, to_string(sink)).bind(2, rfc3339(at - std::chrono::hours(24)));
        old->run();
    }
    Scoped tried(m_db, "UPDATE outbox SET tried = tried + 1 WHERE id = ?");
    tried->bind(1, id);
    tried->run();
}

OutboxQueue::OutboxQueue(std::unique_ptr<Db> db) : m_db(std::move(db)) {}
OutboxQueue::OutboxQueue(OutboxQueue&&) noexcept = default;
OutboxQueue& OutboxQueue::operator=(OutboxQueue&&) noexcept = default;
OutboxQueue::~OutboxQueue() = default;

Result<OutboxQueue> OutboxQueue::open(const std::filesystem::path& db) {
    auto opened = open_reader(db);
    if (!opened) return opened.error();
    return OutboxQueue(std::move(*opened));
}

Result<std::vector<OutboxItem>> OutboxQueue::due(Sink sink, SystemTime now_at, LaneOrder order,
                                                 std::int64_t limit) {
    const std::string now = rfc3339(now_at);
    return guarded([&] {
        // Each order has its index: a lane's read passes over its own waiting rows only, in the
        // order it sends them, whatever the other lanes have waiting.
        Scoped due(
            *m_db,
            order == LaneOrder::fifo
                ? "SELECT id, sink, sha, context, state, description, target_url, body, "
                  "attempts, run_id, tried, refused, priority FROM outbox INDEXED BY outbox_fifo "
                  "WHERE sink = ?1 AND delivery = 'waiting' AND (next_attempt_at IS NULL "
                  "OR next_attempt_at <= ?2) ORDER BY id LIMIT ?3"
                : "SELECT id, sink, sha, context, state, description, target_url, body, "
                  "attempts, run_id, tried, refused, priority FROM outbox INDEXED BY "
                  "outbox_by_priority WHERE sink = 'github' AND sink = ?1 AND delivery = "
                  "'waiting' AND (next_attempt_at IS NULL OR next_attempt_at <= ?2) ORDER "
                  "BY priority, run_id DESC, id LIMIT ?3");
        due->bind(1, to_string(sink)).bind(2, now).bind(3, limit);
        std::vector<OutboxItem> rows;
        while (due->step()) {
            rows.push_back({due->int64(0), vocab_column<Sink>(*due, 1, "outbox.sink"), due->text(2),
                            due->text(3), due->text(4), due->text(5), due->opt_text(6),
                            due->opt_text(7), due->int64(8), due->int64(9), due->int64(10),
                            due->int64(11), due->int64(12)});
        }
        return rows;
    });
}

Result<std::optional<OutboxDelivery>> OutboxQueue::delivery_of(std::int64_t id) {
    return guarded([&]() -> std::optional<OutboxDelivery> {
        Scoped still(*m_db, "SELECT delivery FROM outbox WHERE id = ?");
        still->bind(1, id);
        if (!still->step()) return std::nullopt;
        return vocab_column<OutboxDelivery>(*still, 0, "outbox.delivery");
    });
}

Result<std::optional<SystemTime>> OutboxQueue::earliest_retry(Sink sink) {
    return guarded([&]() -> std::optional<SystemTime> {
        Scoped soon(*m_db,
                    "SELECT next_attempt_at FROM outbox INDEXED BY outbox_retry WHERE sink = ? "
                    "AND delivery = 'waiting' AND next_attempt_at IS NOT NULL ORDER BY "
                    "next_attempt_at LIMIT 1");
        soon->bind(1, to_string(sink));
        if (!soon->step()) return std::nullopt;
        return parse_rfc3339(soon->text(0));
    });
}

Result<std::vector<MadeRequest>> OutboxQueue::requests_made(Sink sink, SystemTime since) {
    return guarded([&] {
        Scoped st(
            *m_db,
            "SELECT at, priority FROM report_requests WHERE sink = ? AND at >= ? ORDER BY at");
        st->bind(1, to_string(sink)).bind(2, rfc3339(since));
        std::vector<MadeRequest> out;
        while (st->step()) {
            if (auto t = parse_rfc3339(st->text(0))) out.push_back({*t, st->int64(1)});
        }
        return out;
    });
}

Result<std::optional<OutboxDelivery>> OutboxQueue::first_callback_delivery(
    std::int64_t run_id, const std::string& context) {
    return guarded([&]() -> std::optional<OutboxDelivery> {
        Scoped first(*m_db,
                     "SELECT delivery FROM outbox WHERE run_id = ? AND sink = 'callback' AND "
                     "context = ? ORDER BY id LIMIT 1");
        first->bind(1, run_id).bind(2, context);
        if (!first->step()) return std::nullopt;
        return vocab_column<OutboxDelivery>(*first, 0, "outbox.delivery");
    });
}

Result<std::int64_t> OutboxQueue::github_sent_count(const std::string& sha,
                                                    const std::string& context) {
    return guarded([&] {
        Scoped count(*m_db,
                     "SELECT count(*) FROM outbox WHERE sink = 'github' AND sha = ? AND context = "
                     "? AND delivery = 'sent'");
        count->bind(1, sha).bind(2, context);
        count->step();
        return count->int64(0);
    });
}

}  // namespace crcrd::store
