#include "crcrd/store/deliveries.hpp"
#include "crcrd/store/sqlite.hpp"

#include <nlohmann/json.hpp>

#include "crcrd/core/time.hpp"
#include "crcrd/store/runs.hpp"
#include "store/delivery_keys.hpp"

namespace crcrd::store {

std::string to_string(Verdict v) {
    return std::string(crcrd::to_string(v));
}

namespace {

std::int64_t insert_delivery(Db& db, const Delivery& d, Verdict verdict, int status,
                             std::optional<std::int64_t> run_id,
                             const std::vector<std::int64_t>& run_ids, bool store_body) {
    auto& st = db.cached(
        "INSERT INTO deliveries (delivery_id, crcr_delivery_id, received_at, scheme, event, "
        "verdict, "
        "http_status, reason, run_id, run_ids, remote, body, body_size) VALUES "
        "(?,?,?,?,?,?,?,?,?,?,?,?,?)");
    st.bind(1, d.delivery_id.empty() ? std::optional<std::string>() : d.delivery_id)
        .bind(2, d.crcr_delivery_id)
        .bind(3, d.received_at)
        .bind(4, d.scheme)
        .bind(5, d.event)
        .bind(6, to_string(verdict))
        .bind(7, std::int64_t{status})
        .bind(8, d.reason)
        .bind(9, run_id)
        .bind(10, run_ids.empty() ? std::optional<std::string>() : nlohmann::json(run_ids).dump())
        .bind(11, d.remote);
    if (store_body) {
        st.bind_blob(12, d.body).bind(13, static_cast<std::int64_t>(d.body_size));
    } else {
        st.bind(12, std::nullopt).bind(13, std::nullopt);
    }
    st.run();
    return db.last_insert_rowid();
}

std::vector<std::string> keys_of(const Delivery& d) {
    std::vector<std::string> keys;
    if (!d.delivery_id.empty()) keys.push_back(transport_key(d.delivery_id));
    if (d.crcr_delivery_id && !d.crcr_delivery_id->empty())
        keys.push_back(crcr_key(*d.crcr_delivery_id));
    return keys;
}

/// The first accepted delivery holding one of `keys`: (found, run_id).
std::optional<std::optional<std::int64_t>> find_key(Db& db, const std::vector<std::string>& keys) {
    auto& st = db.cached("SELECT run_id FROM delivery_keys WHERE key = ?");
    for (const auto& k : keys) {
        st.reset();
        st.bind(1, k);
        if (st.step()) {
            auto run = st.opt_int64(0);
            st.reset();
            return run;
        }
    }
    return std::nullopt;
}

std::int64_t insert_run_row(Db& db, const NewRun& r, SystemTime now_at) {
    const std::string now = rfc3339(now_at);
    auto& st = db.cached(
        "INSERT INTO runs (event, action, sha, pr, ref, base_ref, base_sha, head_repo, labels, "
        "delivery_id, state, inputs, created_at, concurrency_group) VALUES "
        "(?,?,?,?,?,?,?,?,?,?,'queued',?,?,?)");
    st.bind(1, to_string(r.event))
        .bind(2, r.action)
        .bind(3, r.sha)
        .bind(4, r.pr)
        .bind(5, r.ref)
        .bind(6, r.base_ref.empty() ? std::optional<std::string>() : r.base_ref)
        .bind(7, r.base_sha.empty() ? std::optional<std::string>() : r.base_sha)
        .bind(8, r.head_repo)
        .bind(9, r.labels_json)
        .bind(10, r.delivery_id)
        .bind(11, r.inputs_json)
        .bind(12, now)
        .bind(13, r.concurrency_group.empty() ? std::optional<std::string>() : r.concurrency_group);
    st.run();
    return db.last_insert_rowid();
}

// Cancels the open runs `ids` (found by the caller in this transaction) and their jobs, each
// by its id: an UPDATE of several rows of a table with triggers collects them in a temporary
// table first, and one through an index on the state it changes too (issue 16).
void cancel_runs(Db& db, const std::vector<std::int64_t>& ids, const std::string& reason,
                 SystemTime now_at) {
    RunsRepo runs(db);
    for (auto id : ids) runs.cancel(id, reason, now_at);
}

std::vector<std::int64_t> ids_of(Stmt& st) {
    std::vector<std::int64_t> ids;
    while (st.step()) ids.push_back(st.int64(0));
    st.reset();
    return ids;
}

std::vector<std::int64_t> cancel_pr_runs(Db& db, std::int64_t pr,
                                         const std::optional<std::string>& head_sha,
                                         const std::string& reason, SystemTime now_at) {
    const std::string now = rfc3339(now_at);
    std::optional<std::int64_t> upto;
    if (head_sha) {
        auto& last = db.cached(
            "SELECT max(id) FROM runs WHERE pr = ? AND event = 'pull_request' AND sha = ?");
        last.bind(1, pr).bind(2, *head_sha);
        if (last.step()) upto = last.opt_int64(0);
        last.reset();
    }
    auto& open = db.cached(
        "SELECT id FROM runs WHERE pr = ?1 AND state = 'queued' AND event = 'pull_request' AND (?2 "
        "IS NULL OR id <= ?2) "
        "UNION ALL "
        "SELECT id FROM runs WHERE pr = ?1 AND state = 'running' AND event = 'pull_request' AND "
        "(?2 IS NULL OR id <= ?2)");
    open.bind(1, pr).bind(2, upto);
    auto ids = ids_of(open);
    cancel_runs(db, ids, reason, now_at);
    return ids;
}

std::vector<std::int64_t> supersede(Db& db, const NewRun& r, std::int64_t new_id,
                                    SystemTime now_at) {
    const std::string now = rfc3339(now_at);
    if (r.concurrency_group.empty()) return {};
    // A SHA the group has seen before (a replay, or a push of an older commit again) never
    // cancels the group's work: only a SHA new to the group supersedes (docs/ingest.md). Looked up
    // by SHA (a few runs), never by group: SQLite would otherwise walk every run a long-lived group
    // (a branch's pushes) ever had, on every delivery (issue 16: half of ingest's CPU).
    auto& seen = db.cached(
        "SELECT 1 FROM runs INDEXED BY runs_by_sha WHERE sha = ? AND concurrency_group = ? AND id "
        "<> ? LIMIT 1");
    seen.bind(1, r.sha).bind(2, r.concurrency_group).bind(3, new_id);
    const bool known = seen.step();
    seen.reset();
    if (known) return {};
    const std::string reason = "superseded by " + r.sha;
    auto& open = db.cached(
        "SELECT id FROM runs WHERE concurrency_group = ?1 AND state = 'queued' AND sha <> ?2 AND "
        "id <> ?3 "
        "UNION ALL "
        "SELECT id FROM runs WHERE concurrency_group = ?1 AND state = 'running' AND sha <> ?2 AND "
        "id <> ?3");
    open.bind(1, r.concurrency_group).bind(2, r.sha).bind(3, new_id);
    auto ids = ids_of(open);
    cancel_runs(db, ids, reason, now_at);
    return ids;
}

}  // namespace

std::int64_t insert_run(Db& db, const NewRun& r, SystemTime now_at) {
    const std::string now = rfc3339(now_at);
    auto id = insert_run_row(db, r, now_at);
    supersede(db, r, id, now_at);
    return id;
}

Outcome record_delivery(Db& db, const Delivery& d) {
    Outcome out;
    if (d.intended == Verdict::rejected) {
        insert_delivery(db, d, Verdict::rejected, d.http_status, std::nullopt, {}, false);
        out.verdict = Verdict::rejected;
        out.http_status = d.http_status;
        return out;
    }
    auto keys = keys_of(d);
    if (auto seen = find_key(db, keys)) {
        out.verdict = Verdict::duplicate;
        out.http_status = 200;
        out.run_id = *seen;
        insert_delivery(db, d, Verdict::duplicate, 200, out.run_id, {}, false);
        return out;
    }
    const SystemTime now_at = std::chrono::system_clock::now();
    out.verdict = d.intended;
    out.http_status = d.http_status;
    if (d.intended == Verdict::queued && d.run) {
        out.run_id = insert_run_row(db, *d.run, now_at);
        out.superseded = supersede(db, *d.run, *out.run_id, now_at);
    } else if (d.intended == Verdict::cancelled && d.cancel_pr) {
        out.run_ids = cancel_pr_runs(db, *d.cancel_pr, d.cancel_sha, "PR closed", now_at);
        if (d.run) {  // a merged PR with selection.post_merge
            out.run_id = insert_run_row(db, *d.run, now_at);
            out.superseded = supersede(db, *d.run, *out.run_id, now_at);
        }
    }
    std::int64_t row =
        insert_delivery(db, d, out.verdict, out.http_status, out.run_id, out.run_ids, true);
    auto& st = db.cached("INSERT INTO delivery_keys (key, delivery_row, run_id) VALUES (?,?,?)");
    for (const auto& k : keys) {
        st.reset();
        st.bind(1, k).bind(2, row).bind(3, out.run_id);
        st.run();
    }
    return out;
}

}  // namespace crcrd::store
