#include "crcrd/report/outbox.hpp"

#include <nlohmann/json.hpp>

#include <vector>

#include "crcrd/core/compress.hpp"
#include "crcrd/core/time.hpp"

namespace crcrd::report {

using nlohmann::json;

std::string shorten(const std::string& text, std::size_t max) {
    if (text.size() <= max) return text;
    const std::string ellipsis = "\xE2\x80\xA6";  // …
    std::size_t cut = max - ellipsis.size();
    // Back up to the start of a UTF-8 character.
    while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
    return text.substr(0, cut) + ellipsis;
}

StatusText final_status(const std::string& conclusion, const std::string& reason) {
    std::string state = "error";
    if (conclusion == "passed" || conclusion == "flaky") state = "success";
    if (conclusion == "regression") state = "failure";
    return {state, shorten(conclusion == "passed" ? reason : conclusion + ": " + reason)};
}

std::string relay_conclusion(const std::string& crcr_class) {
    if (crcr_class == "passed" || crcr_class == "flaky") return "success";
    if (crcr_class == "regression") return "failure";
    if (crcr_class == "timeout") return "timed_out";
    if (crcr_class == "cancelled") return "cancelled";
    return "neutral";  // infra_error, device_unavailable, pre_existing: not the change's fault, not a pass
}

json callback_body(const CallbackRun& run, const CallbackJob& job, bool completed, const OutboxSettings& s) {
    std::int64_t passed = 0, failed = 0, skipped = 0;
    if (job.counts.is_object()) {
        passed = job.counts.value("passed", std::int64_t{0}) + job.counts.value("flaky", std::int64_t{0});
        failed = job.counts.value("failed", std::int64_t{0});
        skipped = job.counts.value("skipped", std::int64_t{0});
    }
    const std::string klass = job.state == "cancelled" ? "cancelled" : job.conclusion;
    json wf = {{"schema_version", "1"},
               {"status", completed ? "completed" : "in_progress"},
               {"conclusion", completed ? json(relay_conclusion(klass)) : json(nullptr)},
               {"name", s.workflow_name},
               {"job_name", job.tier},
               {"check_run_id", std::to_string(job.id)},
               {"run_id", std::to_string(run.id)},
               {"run_attempt", std::to_string(job.attempt)},
               {"url", s.public_url.empty() ? json(nullptr) : json(s.public_url + "/ui/runs/" + std::to_string(run.id))},
               {"artifact_url",
                s.public_url.empty() ? json(nullptr) : json(s.public_url + "/api/v1/jobs/" + std::to_string(job.id) + "/log")},
               {"started_at", job.started_at},
               {"completed_at", completed ? json(job.finished_at.empty() ? now_rfc3339() : job.finished_at) : json(nullptr)},
               {"test_results", {{"passed", passed}, {"failed", failed}, {"skipped", skipped}, {"total", passed + failed + skipped}}},
               {"crcr_class", completed ? json(klass) : json(nullptr)},
               {"crcr_reason", completed ? json(job.reason) : json(nullptr)}};
    const std::string event_type = run.event == "schedule" ? s.scheduled_event_type : run.event;
    return json{{"event_type", event_type}, {"delivery_id", run.delivery_id}, {"payload", run.payload}, {"workflow", wf}};
}

namespace {

struct Wanted {
    std::string sink;
    std::string context;
    std::string state;
    std::string description;
    std::string body;  // callbacks only
};

struct RunRow {
    std::int64_t id = 0;
    std::string sha, state, conclusion, reason, event, delivery_id, created_at, finished_at;
};

struct JobRow {
    std::string tier, state, conclusion, reason, slot, started_at;
    std::int64_t attempt = 1;
    json counts;
};

std::string status_for_open_tier(const JobRow& j) {
    std::string again = j.attempt > 1 ? " (attempt " + std::to_string(j.attempt) + ")" : "";
    if (j.state == "queued") return "queued" + again;
    return "running on " + j.slot + again;
}

/// The run as the relay dispatched it, when callbacks are due for it: a run queued by a CRCR
/// delivery (it has a dispatch record at the relay) or a scheduled run (which self-reports).
std::optional<CallbackRun> callback_run(store::Db& db, const RunRow& run, const OutboxSettings& s) {
    CallbackRun out;
    out.id = run.id;
    out.event = run.event;
    out.sha = run.sha;
    if (run.event == "schedule") {
        out.delivery_id = run.sha;
        out.payload = {{"repository", {{"full_name", s.upstream_repo}}}, {"head_sha", run.sha}};
        return out;
    }
    if (run.event != "pull_request" && run.event != "push") return std::nullopt;  // manual, bisect
    auto& st = db.cached(
        "SELECT crcr_delivery_id, body FROM deliveries WHERE run_id = ? AND verdict = 'queued' AND crcr_delivery_id IS NOT NULL "
        "ORDER BY id LIMIT 1");
    st.bind(1, run.id);
    std::optional<CallbackRun> found;
    if (st.step() && !st.is_null(1)) {
        out.delivery_id = st.text(0);
        if (auto raw = decompress(st.text(1))) {
            auto body = json::parse(*raw, nullptr, false);
            if (body.is_object() && body.contains("client_payload") && body["client_payload"].is_object()) {
                out.payload = body["client_payload"].value("payload", json::object());
                found = std::move(out);
            }
        }
    }
    st.reset();
    return found;
}

/// Every attempt of the run's tiers that started, in the order they started.
std::vector<CallbackJob> started_jobs(store::Db& db, std::int64_t run_id) {
    std::vector<CallbackJob> out;
    auto& js = db.cached(
        "SELECT id, tier, attempt, state, coalesce(conclusion,''), coalesce(reason,''), started_at, coalesce(finished_at,''), "
        "coalesce(counts,'null') FROM jobs WHERE run_id = ? AND started_at IS NOT NULL ORDER BY id");
    js.bind(1, run_id);
    while (js.step()) {
        out.push_back({js.int64(0), js.text(1), js.int64(2), js.text(3), js.text(4), js.text(5), js.text(6), js.text(7),
                       json::parse(js.text(8), nullptr, false)});
    }
    js.reset();
    return out;
}

void sync_run(store::Db& db, const OutboxSettings& s, std::int64_t run_id) {
    auto& rs = db.cached(
        "SELECT sha, state, coalesce(conclusion,''), coalesce(reason,''), event, coalesce(delivery_id,''), created_at, "
        "coalesce(finished_at,'') FROM runs WHERE id = ?");
    rs.bind(1, run_id);
    if (!rs.step()) {
        rs.reset();
        return;
    }
    RunRow run{run_id, rs.text(0), rs.text(1), rs.text(2), rs.text(3), rs.text(4), rs.text(5), rs.text(6), rs.text(7)};
    rs.reset();
    std::vector<JobRow> jobs;
    auto& js = db.cached(
        "SELECT tier, state, coalesce(conclusion,''), coalesce(reason,''), coalesce(slot,''), attempt, "
        "coalesce(counts,'null'), coalesce(started_at,'') FROM jobs j WHERE run_id = ? "
        "AND attempt = (SELECT max(attempt) FROM jobs k WHERE k.run_id = j.run_id AND k.position = j.position) "
        "ORDER BY position");
    js.bind(1, run_id);
    while (js.step()) {
        jobs.push_back({js.text(0), js.text(1), js.text(2), js.text(3), js.text(4), js.text(7), js.int64(5),
                        json::parse(js.text(6), nullptr, false)});
    }
    js.reset();
    if (jobs.empty() && run.state == "queued") return;  // not planned yet

    std::vector<Wanted> wanted;
    const std::string& prefix = s.context_prefix;
    StatusText run_status;
    if (run.state == "completed") {
        run_status = final_status(run.conclusion, run.reason);
    } else if (run.state == "cancelled") {
        run_status = {"error", shorten("cancelled: " + run.reason)};
    } else {
        run_status.state = "pending";
        run_status.description = "queued";
        for (std::size_t i = 0; run.state == "running" && i < jobs.size(); ++i) {
            if (jobs[i].state == "queued" || jobs[i].state == "leased" || jobs[i].state == "running") {
                run_status.description = shorten("running " + jobs[i].tier + " (" + std::to_string(i + 1) + " of " +
                                                 std::to_string(jobs.size()) + ")");
                break;
            }
        }
    }
    std::vector<std::pair<std::string, StatusText>> contexts = {{prefix, run_status}};
    for (const auto& j : jobs) {
        StatusText t;
        if (j.state == "completed") {
            t = final_status(j.conclusion, j.reason);
        } else if (j.state == "cancelled") {
            t = {"error", shorten("cancelled: " + j.reason)};
        } else {
            t = {"pending", shorten(status_for_open_tier(j))};
        }
        contexts.emplace_back(prefix + "/" + j.tier, t);
    }
    for (const char* sink : {"github", "file"}) {
        if ((std::string(sink) == "github" && !s.github) || (std::string(sink) == "file" && !s.file)) continue;
        for (const auto& [ctx, t] : contexts) wanted.push_back({sink, ctx, t.state, t.description, ""});
    }
    if (s.callback) {
        // One `in_progress` and one `completed` per tier attempt that started, each its own
        // row (context "job/<id>/<status>"), so that nothing is ever coalesced; a scheduled run
        // self-reports `completed` only (§6.2).
        if (auto cr = callback_run(db, run, s)) {
            for (const auto& j : started_jobs(db, run_id)) {
                const bool ended = j.state == "completed" || j.state == "cancelled";
                if (run.event != "schedule") {
                    wanted.push_back({"callback", "job/" + std::to_string(j.id) + "/in_progress", "in_progress", "",
                                      callback_body(*cr, j, false, s).dump()});
                }
                if (ended) {
                    wanted.push_back({"callback", "job/" + std::to_string(j.id) + "/completed", "completed", "",
                                      callback_body(*cr, j, true, s).dump()});
                }
            }
        }
    }

    auto& last = db.cached(
        "SELECT state, description FROM outbox WHERE run_id = ? AND sink = ? AND context = ? ORDER BY id DESC LIMIT 1");
    auto& ins = db.cached(
        "INSERT INTO outbox (sink, run_id, sha, context, state, description, target_url, body, created_at) "
        "VALUES (?,?,?,?,?,?,?,?,?)");
    auto& coalesce = db.cached(
        "UPDATE outbox SET delivery = 'coalesced' WHERE sink = ? AND sha = ? AND context = ? AND delivery = 'waiting' "
        "AND id < ?");
    const std::string now = now_rfc3339();
    for (const auto& w : wanted) {
        last.reset();
        last.bind(1, run_id).bind(2, w.sink).bind(3, w.context);
        bool had = last.step();
        bool same = had && last.text(0) == w.state && (w.sink == "callback" || last.text(1) == w.description);
        last.reset();
        if (same) continue;
        // Nothing was ever announced for a context that ends cancelled: say nothing. (A
        // callback exists only for an attempt that started; its pair is always sent.)
        if (!had && w.sink != "callback" && (run.state == "cancelled" || w.description.rfind("cancelled:", 0) == 0)) continue;
        ins.reset();
        ins.bind(1, w.sink).bind(2, run_id).bind(3, run.sha).bind(4, w.context).bind(5, w.state).bind(6, w.description);
        ins.bind(7, s.target_url.empty() || w.sink == "callback" ? std::optional<std::string>() : std::optional<std::string>(s.target_url));
        ins.bind(8, w.body.empty() ? std::optional<std::string>() : std::optional<std::string>(w.body));
        ins.bind(9, now);
        ins.run();
        const auto id = db.last_insert_rowid();
        coalesce.reset();
        coalesce.bind(1, w.sink).bind(2, run.sha).bind(3, w.context).bind(4, id);
        coalesce.run();
    }
}

}  // namespace

void sync_dirty(store::Db& db, const OutboxSettings& s) {
    auto& take = db.cached("DELETE FROM status_dirty RETURNING run_id");
    std::vector<std::int64_t> ids;
    while (take.step()) ids.push_back(take.int64(0));
    take.reset();
    if (!s.github && !s.file && !s.callback) return;
    for (auto id : ids) {
        OutboxSettings per_run = s;
        auto pos = per_run.target_url.find("{run_id}");
        if (pos != std::string::npos) per_run.target_url.replace(pos, 8, std::to_string(id));
        sync_run(db, per_run, id);
    }
}

}  // namespace crcrd::report
