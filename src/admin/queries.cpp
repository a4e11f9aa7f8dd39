#include "crcrd/admin/queries.hpp"

#include <vector>

#include "crcrd/core/crypto.hpp"
#include "crcrd/core/vocab.hpp"
#include "crcrd/store/admin_reads.hpp"

namespace crcrd::admin {

using nlohmann::json;

namespace {

json opt(const std::optional<std::string>& v) {
    return v ? json(*v) : json(nullptr);
}
json opt(const std::optional<std::int64_t>& v) {
    return v ? json(*v) : json(nullptr);
}

json run_json(const store::RunRow& r) {
    json sel = nullptr;
    if (r.selection_json) {
        sel = json::parse(*r.selection_json, nullptr, false);
        if (sel.is_discarded()) sel = nullptr;
    }
    return {{"id", r.id},
            {"event", r.event},
            {"sha", r.sha},
            {"pr", opt(r.pr)},
            {"ref", opt(r.ref)},
            {"base_sha", opt(r.base_sha)},
            {"delivery_id", opt(r.delivery_id)},
            {"state", r.state},
            {"conclusion", opt(r.conclusion)},
            {"reason", opt(r.reason)},
            {"created_at", r.created_at},
            {"finished_at", opt(r.finished_at)},
            {"selection", sel},
            {"base_ref", opt(r.base_ref)},
            {"head_repo", opt(r.head_repo)}};
}

json job_json(const store::JobRow& j) {
    json tests = json::parse(j.tests_json, nullptr, false);
    json meta = !j.metadata_json ? json::object() : json::parse(*j.metadata_json, nullptr, false);
    if (!meta.is_object()) meta = json::object();
    if (!meta.contains("tests")) meta["tests"] = tests.is_array() ? tests : json::array();
    json counts = !j.counts_json ? json::object() : json::parse(*j.counts_json, nullptr, false);
    if (!counts.is_object()) counts = json::object();
    for (const char* k : {"passed", "failed", "skipped", "flaky"})
        if (!counts.contains(k)) counts[k] = 0;
    return {{"id", j.id},
            {"run_id", j.run_id},
            {"tier", j.tier},
            {"state", j.state},
            {"conclusion", opt(j.conclusion)},
            {"reason", opt(j.reason)},
            {"attempt", j.attempt},
            {"slot", opt(j.slot)},
            {"started_at", opt(j.started_at)},
            {"finished_at", opt(j.finished_at)},
            {"exit_status", opt(j.exit_status)},
            {"timeout_s", j.timeout_ms / 1000},
            {"tests", counts},
            {"metadata", meta},
            {"evidence",
             !j.evidence_json ? json(nullptr) : json::parse(*j.evidence_json, nullptr, false)}};
}

/// docs/verdicts.md: {good, bad, commits, culprit, runs}, with the state and why.
json bisect_json(const store::Bisection& b, const std::vector<store::BisectRun>& runs) {
    json rl = json::array();
    for (const auto& r : runs) {
        json verdict = nullptr;
        if (r.state == RunState::cancelled)
            verdict = "skip";
        else if (r.conclusion) {
            verdict = *r.conclusion == Conclusion::regression ? "bad"
                      : is_pass(*r.conclusion)                ? "good"
                                                              : "skip";
        }
        rl.push_back({{"run_id", r.run_id},
                      {"sha", r.sha},
                      {"state", std::string(to_string(r.state))},
                      {"conclusion",
                       r.conclusion ? json(std::string(to_string(*r.conclusion))) : json(nullptr)},
                      {"verdict", verdict}});
    }
    return {{"state", to_string(b.state)},
            {"reason", b.reason},
            {"tier", b.tier},
            {"tests", b.tests},
            {"good", opt(b.good_sha)},
            {"good_run_id", opt(b.good_run_id)},
            {"bad", b.bad_sha},
            {"bad_run_id", b.bad_run_id},
            {"commits", b.commits.size()},
            {"culprit", opt(b.culprit)},
            {"runs", rl},
            {"created_at", b.created_at},
            {"finished_at", opt(b.finished_at)}};
}

json outbox_json(const store::OutboxRow& o) {
    return {{"id", o.id},
            {"sink", o.sink},
            {"run_id", o.run_id},
            {"sha", o.sha},
            {"context", o.context},
            {"state", o.state},
            {"description", o.description},
            {"target_url", opt(o.target_url)},
            {"delivery", o.delivery},
            {"attempts", o.attempts},
            {"next_attempt_at", opt(o.next_attempt_at)},
            {"last_error", opt(o.last_error)},
            {"http_status", opt(o.http_status)},
            {"created_at", o.created_at},
            {"sent_at", opt(o.sent_at)}};
}

}  // namespace

std::string make_cursor(std::int64_t last_id) {
    return crypto::base64url_encode("id<" + std::to_string(last_id));
}

std::optional<std::int64_t> parse_cursor(const std::string& cursor) {
    std::string padded = cursor;
    for (char& c : padded) {
        if (c == '-')
            c = '+';
        else if (c == '_')
            c = '/';
    }
    while (padded.size() % 4) padded.push_back('=');
    auto raw = crypto::base64_decode(padded);
    if (!raw || raw->rfind("id<", 0) != 0) return std::nullopt;
    try {
        std::size_t used = 0;
        auto id = std::stoll(raw->substr(3), &used);
        if (used != raw->size() - 3) return std::nullopt;
        return id;
    } catch (const std::exception&) {
        return std::nullopt;
    }
}

namespace {

json page(std::vector<json> items, int limit) {
    json next = nullptr;
    if (static_cast<int>(items.size()) == limit && !items.empty())
        next = make_cursor(items.back()["id"].get<std::int64_t>());
    return {{"items", std::move(items)}, {"next_cursor", next}};
}

/// The page of `rows` (shown by `show`) with the cursor below its last one when it is full.
template <class Row, class Show>
Result<json> paged(const Result<std::vector<Row>>& rows, int limit, Show show) {
    if (!rows) return rows.error();
    std::vector<json> items;
    for (const auto& r : *rows) items.push_back(show(r));
    return page(std::move(items), limit);
}

}  // namespace

Result<json> list_runs(const std::filesystem::path& path, const RunFilter& f) {
    auto db = store::AdminReads::for_this_thread(path);
    if (!db) return db.error();
    // a list item is a run without jobs and statuses
    return paged(db->runs(f), f.page.limit, run_json);
}

Result<json> get_run(const std::filesystem::path& path, std::int64_t id) {
    auto db = store::AdminReads::for_this_thread(path);
    if (!db) return db.error();
    auto detail = db->run_detail(id);
    if (!detail) return detail.error();
    if (!*detail) return make_error(Errc::not_found, "no run " + std::to_string(id));
    json run = run_json((*detail)->run);
    json list = json::array();
    for (const auto& j : (*detail)->jobs) list.push_back(job_json(j));
    run["jobs"] = std::move(list);
    json sl = json::array();
    for (const auto& o : (*detail)->statuses) sl.push_back(outbox_json(o));
    run["statuses"] = std::move(sl);
    if (const auto& b = (*detail)->bisection)
        run["bisect"] = bisect_json(*b, (*detail)->bisect_runs);
    if (const auto& b = (*detail)->bisecting)
        run["bisection_of"] = {{"run_id", b->bad_run_id}, {"tier", b->tier}, {"tests", b->tests}};
    return run;
}

Result<json> list_deliveries(const std::filesystem::path& path, const DeliveryFilter& f) {
    auto db = store::AdminReads::for_this_thread(path);
    if (!db) return db.error();
    return paged(
        db->deliveries(f.verdict, f.page), f.page.limit, [](const store::DeliveryRow& d) -> json {
            json run_ids =
                !d.run_ids_json ? json::array() : json::parse(*d.run_ids_json, nullptr, false);
            return {{"id", d.id},
                    {"delivery_id", opt(d.delivery_id)},
                    {"received_at", d.received_at},
                    {"scheme", opt(d.scheme)},
                    {"event", opt(d.event)},
                    {"verdict", d.verdict},
                    {"http_status", d.http_status},
                    {"reason", opt(d.reason)},
                    {"run_id", opt(d.run_id)},
                    {"crcr_delivery_id", opt(d.crcr_delivery_id)},
                    {"run_ids", run_ids}};
        });
}

Result<json> list_outbox(const std::filesystem::path& path, const OutboxFilter& f) {
    auto db = store::AdminReads::for_this_thread(path);
    if (!db) return db.error();
    store::OutboxQuery q;
    q.delivery = f.state;
    q.sink = f.sink;
    q.run_id = f.run_id;
    q.page = f.page;
    return paged(db->outbox(q), f.page.limit, outbox_json);
}

Result<json> with_backlog(const std::filesystem::path& path, json lanes) {
    auto db = store::AdminReads::for_this_thread(path);
    if (!db) return db.error();
    for (auto& lane : lanes) {
        const auto sink = from_string<Sink>(lane.value("sink", ""));
        if (!sink) continue;
        auto b = db->outbox_backlog(*sink);
        if (!b) return b.error();
        lane["waiting"] = b->waiting;
        lane["dead"] = b->dead;
        lane["oldest_final_waiting_at"] = b->oldest_final.empty() ? json() : json(b->oldest_final);
    }
    return lanes;
}

Result<json> get_job(const std::filesystem::path& path, std::int64_t id) {
    auto db = store::AdminReads::for_this_thread(path);
    if (!db) return db.error();
    auto job = db->job(id);
    if (!job) return job.error();
    if (!*job) return make_error(Errc::not_found, "no job " + std::to_string(id));
    return job_json(**job);
}

Result<std::string> job_log_path(const std::filesystem::path& path, std::int64_t id) {
    auto db = store::AdminReads::for_this_thread(path);
    if (!db) return db.error();
    auto log = db->job_log(id);
    if (!log) return log.error();
    if (!log->job_found) return make_error(Errc::not_found, "no job " + std::to_string(id));
    if (!log->path)
        return make_error(Errc::not_found, "job " + std::to_string(id) + " has no log yet");
    return *log->path;
}

Result<json> list_tests(const std::filesystem::path& path, std::int64_t job,
                        const std::optional<std::string>& outcome, const Page& p) {
    auto db = store::AdminReads::for_this_thread(path);
    if (!db) return db.error();
    return paged(db->tests(job, outcome, p), p.limit, [](const store::TestResultRow& t) -> json {
        return {{"id", t.rowid},
                {"name", t.name},
                {"outcome", t.outcome},
                {"duration_s", t.duration_s},
                {"message", opt(t.message)}};
    });
}

Result<json> list_slots(const std::filesystem::path& path) {
    auto db = store::AdminReads::for_this_thread(path);
    if (!db) return db.error();
    auto slots = db->slots();
    if (!slots) return slots.error();
    json items = json::array();
    for (const auto& s : *slots) {
        const auto stored = from_string<SlotState>(s.state);
        const std::string state = stored ? std::string(display_state(*stored, s.drained)) : s.state;
        json health =
            !s.last_health_json ? json(nullptr) : json::parse(*s.last_health_json, nullptr, false);
        items.push_back({{"name", s.name},
                         {"state", state},
                         {"drained", s.drained},
                         {"job_id", opt(s.job_id)},
                         {"last_health", health}});
    }
    return items;
}

Result<json> list_selection_misses(const std::filesystem::path& path,
                                   const SelectionMissFilter& f) {
    auto db = store::AdminReads::for_this_thread(path);
    if (!db) return db.error();
    return paged(db->selection_misses(f), f.page.limit,
                 [](const store::SelectionMissRow& m) -> json {
                     json commits = json::parse(m.commits_json, nullptr, false);
                     if (!commits.is_array()) commits = json::array();
                     return {{"id", m.id},
                             {"run_id", m.run_id},
                             {"previous_run_id", m.previous_run_id},
                             {"tier", m.tier},
                             {"test", m.test},
                             {"commits", commits},
                             {"created_at", m.created_at}};
                 });
}

Result<json> list_recovery(const std::filesystem::path& path, int limit) {
    auto db = store::AdminReads::for_this_thread(path);
    if (!db) return db.error();
    auto passes = db->recovery_passes(limit);
    if (!passes) return passes.error();
    json items = json::array();
    for (const auto& p : *passes) {
        items.push_back({{"id", p.id},
                         {"started_at", p.started_at},
                         {"finished_at", p.finished_at},
                         {"since", p.since},
                         {"listed", p.listed},
                         {"failed", p.failed},
                         {"redelivered", p.redelivered},
                         {"errors", json::parse(p.errors_json, nullptr, false)}});
    }
    auto wm = db->recovery_watermark();
    if (!wm) return wm.error();
    json watermark = *wm ? json(**wm) : json(nullptr);
    return json{{"items", items}, {"watermark", watermark}};
}

}  // namespace crcrd::admin
