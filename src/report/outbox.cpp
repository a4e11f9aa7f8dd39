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

/// The workflow part of the relay's callback body.
std::string callback_body(store::Db& db, const RunRow& run, const std::vector<JobRow>& jobs,
                          const OutboxSettings& s, bool completed) {
    json payload = nullptr;
    std::string delivery_id = run.delivery_id;
    auto& st = db.cached("SELECT body FROM deliveries WHERE run_id = ? AND verdict = 'queued' AND body IS NOT NULL ORDER BY id LIMIT 1");
    st.bind(1, run.id);
    if (st.step()) {
        auto blob = st.text(0);
        if (auto raw = decompress(blob)) {
            auto body = json::parse(*raw, nullptr, false);
            if (body.is_object()) {
                const json cp = body.value("client_payload", json(nullptr));
                if (cp.is_object()) {
                    payload = cp.contains("payload") ? cp["payload"] : cp;
                    if (cp.contains("delivery_id") && cp["delivery_id"].is_string()) delivery_id = cp["delivery_id"];
                } else {
                    payload = body;
                }
            }
        }
    }
    st.reset();
    std::int64_t passed = 0, failed = 0, skipped = 0;
    std::string started_at;
    for (const auto& j : jobs) {
        if (j.counts.is_object()) {
            passed += j.counts.value("passed", 0) + j.counts.value("flaky", 0);
            failed += j.counts.value("failed", 0);
            skipped += j.counts.value("skipped", 0);
        }
        if (!j.started_at.empty() && (started_at.empty() || j.started_at < started_at)) started_at = j.started_at;
    }
    json wf = {{"status", completed ? "completed" : "in_progress"},
               {"conclusion", completed ? json(run.conclusion.empty() ? "cancelled" : run.conclusion) : json(nullptr)},
               {"name", s.context_prefix},
               {"url", s.target_url.empty() ? json(nullptr) : json(s.target_url)},
               {"run_id", run.id},
               {"run_attempt", 1},
               {"started_at", started_at.empty() ? json(run.created_at) : json(started_at)},
               {"completed_at", completed && !run.finished_at.empty() ? json(run.finished_at) : json(nullptr)},
               {"test_results", {{"passed", passed}, {"failed", failed}, {"skipped", skipped}}}};
    json out = {{"schema_version", 1},
                {"event_type", run.event},
                {"delivery_id", delivery_id.empty() ? json(nullptr) : json(delivery_id)},
                {"payload", payload},
                {"sha", run.sha},
                {"workflow", wf}};
    return out.dump();
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
    if (s.callback && run.state != "queued") {
        const bool completed = run.state == "completed" || run.state == "cancelled";
        wanted.push_back({"callback", "run/" + std::to_string(run_id), completed ? "completed" : "in_progress", "",
                          callback_body(db, run, jobs, s, completed)});
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
        // Nothing was ever announced for a context that ends cancelled: say nothing.
        if (!had && (run.state == "cancelled" || w.description.rfind("cancelled:", 0) == 0)) continue;
        if (!had && w.sink == "callback" && run.state == "cancelled") continue;
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
