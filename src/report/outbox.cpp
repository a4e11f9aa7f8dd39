#include "crcrd/report/outbox.hpp"

#include <nlohmann/json.hpp>

#include <vector>

#include "crcrd/core/compress.hpp"
#include "crcrd/core/time.hpp"
#include "crcrd/report/budget.hpp"
#include "crcrd/store/outbox.hpp"

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

StatusText final_status(Conclusion conclusion, const std::string& reason) {
    GithubState state = GithubState::error;
    if (is_pass(conclusion)) state = GithubState::success;
    if (conclusion == Conclusion::regression) state = GithubState::failure;
    // passed and pre_existing say only why ("N tests fail on <base7> too", docs/verdicts.md).
    const bool plain = conclusion == Conclusion::passed || conclusion == Conclusion::pre_existing;
    return {state, shorten(plain ? reason : std::string(to_string(conclusion)) + ": " + reason)};
}

std::string relay_conclusion(Conclusion crcr_class) {
    switch (crcr_class) {
        case Conclusion::passed:
        case Conclusion::flaky:
            return "success";
        case Conclusion::regression:
            return "failure";
        case Conclusion::timeout:
            return "timed_out";
        case Conclusion::cancelled:
            return "cancelled";
        default:
            return "neutral";  // infra_error, device_unavailable, pre_existing: not the change's
                               // fault, not a pass
    }
}

json callback_body(const CallbackRun& run, const CallbackJob& job, bool completed,
                   const OutboxSettings& s) {
    std::int64_t passed = 0, failed = 0, skipped = 0;
    if (job.counts.is_object()) {
        passed = job.counts.value("passed", std::int64_t{0}) +
                 job.counts.value("flaky", std::int64_t{0});
        failed = job.counts.value("failed", std::int64_t{0});
        skipped = job.counts.value("skipped", std::int64_t{0});
    }
    // An attempt cancelled while it ran has no class of its own: it ended cancelled.
    const Conclusion klass = job.state == JobState::cancelled
                                 ? Conclusion::cancelled
                                 : job.conclusion.value_or(Conclusion::cancelled);
    json wf = {
        {"schema_version", "1"},
        {"status", completed ? "completed" : "in_progress"},
        {"conclusion", completed ? json(relay_conclusion(klass)) : json(nullptr)},
        {"name", s.workflow_name},
        {"job_name", job.tier},
        {"check_run_id", std::to_string(job.id)},
        {"run_id", std::to_string(run.id)},
        {"run_attempt", std::to_string(job.attempt)},
        {"url", s.public_url.empty() ? json(nullptr)
                                     : json(s.public_url + "/ui/runs/" + std::to_string(run.id))},
        {"artifact_url", s.public_url.empty() ? json(nullptr)
                                              : json(s.public_url + "/api/v1/jobs/" +
                                                     std::to_string(job.id) + "/log")},
        {"started_at", job.started_at},
        {"completed_at", completed ? json(job.finished_at.empty() ? now_rfc3339() : job.finished_at)
                                   : json(nullptr)},
        {"test_results",
         {{"passed", passed},
          {"failed", failed},
          {"skipped", skipped},
          {"total", passed + failed + skipped}}},
        {"crcr_class", completed ? json(std::string(to_string(klass))) : json(nullptr)},
        {"crcr_reason", completed ? json(job.reason) : json(nullptr)}};
    const std::string event_type = run.event == RunEvent::schedule
                                       ? s.scheduled_event_type
                                       : std::string(to_string(run.event));
    return json{{"event_type", event_type},
                {"delivery_id", run.delivery_id},
                {"payload", run.payload},
                {"workflow", wf}};
}

namespace {

struct Wanted {
    Sink sink;
    std::string context;
    std::string state;
    std::string description;
    std::string body;  // callbacks only
};

std::string status_for_open_tier(const store::StatusJob& j) {
    std::string again = j.attempt > 1 ? " (attempt " + std::to_string(j.attempt) + ")" : "";
    if (j.state == JobState::queued && j.waiting_on)
        return "waiting for the build by job " + std::to_string(*j.waiting_on) + again;
    if (j.state == JobState::queued) return "queued" + again;
    return "running on " + j.slot + again;
}

/// The run as the relay dispatched it, when callbacks are due for it: a run queued by a CRCR
/// delivery (it has a dispatch record at the relay) or a scheduled run (which self-reports).
std::optional<CallbackRun> callback_run(store::OutboxRepo& repo, const store::StatusRun& run,
                                        const OutboxSettings& s) {
    CallbackRun out;
    out.id = run.id;
    out.event = run.event;
    out.sha = run.sha;
    if (run.event == RunEvent::schedule) {
        out.delivery_id = run.sha;
        out.payload = {{"repository", {{"full_name", s.upstream_repo}}}, {"head_sha", run.sha}};
        return out;
    }
    if (run.event != RunEvent::pull_request && run.event != RunEvent::push)
        return std::nullopt;  // manual, bisect
    auto record = repo.dispatch_record(run.id);
    if (!record) return std::nullopt;
    out.delivery_id = record->crcr_delivery_id;
    if (auto raw = decompress(record->body_zstd)) {
        auto body = json::parse(*raw, nullptr, false);
        if (body.is_object() && body.contains("client_payload") &&
            body["client_payload"].is_object()) {
            out.payload = body["client_payload"].value("payload", json::object());
            return out;
        }
    }
    return std::nullopt;
}

/// Every attempt of the run's tiers that started, in the order they started.
std::vector<CallbackJob> started_jobs(store::OutboxRepo& repo, std::int64_t run_id) {
    std::vector<CallbackJob> out;
    for (auto& a : repo.started_attempts(run_id)) {
        out.push_back({a.id, std::move(a.tier), a.attempt, a.state, a.conclusion,
                       std::move(a.reason), std::move(a.started_at), std::move(a.finished_at),
                       json::parse(a.counts_json, nullptr, false)});
    }
    return out;
}

/// The run's own context: its verdict, or what it waits for.
StatusText run_status_text(const store::StatusRun& run, const std::vector<store::StatusJob>& jobs) {
    StatusText run_status;
    if (run.state == RunState::completed && run.conclusion) {
        // The culprit a bisection found comes first: a long reason is cut at its end.
        run_status = final_status(*run.conclusion,
                                  run.culprit.empty()
                                      ? run.reason
                                      : "culprit " + run.culprit.substr(0, 7) + ": " + run.reason);
    } else if (run.state == RunState::cancelled || run.state == RunState::completed) {
        run_status = {GithubState::error, shorten("cancelled: " + run.reason)};
    } else {
        run_status.state = GithubState::pending;
        run_status.description = "queued";
        for (std::size_t i = 0; run.state == RunState::running && i < jobs.size(); ++i) {
            if (is_open(jobs[i].state)) {
                run_status.description =
                    shorten("running " + jobs[i].tier + " (" + std::to_string(i + 1) + " of " +
                            std::to_string(jobs.size()) + ")");
                break;
            }
        }
    }
    return run_status;
}

/// The contexts of one tier's latest attempt: the tier's, and its base check's if it has one.
void add_tier_contexts(std::vector<std::pair<std::string, StatusText>>& contexts,
                       const std::string& prefix, const store::StatusJob& j) {
    StatusText t;
    if (j.base_check) {
        // docs/verdicts.md: the base check has its own context; the tier's says what it waits
        // for, then the tier's class.
        StatusText base;
        const std::string base7 = j.sha.substr(0, 7);
        if (j.state == JobState::completed && j.conclusion) {
            t = final_status(*j.conclusion, j.reason);
            base = {*j.conclusion == Conclusion::pre_existing ? GithubState::success
                                                              : GithubState::failure,
                    shorten(j.reason)};
        } else if (j.state == JobState::cancelled || j.state == JobState::completed) {
            t = base = {GithubState::error, shorten("cancelled: " + j.reason)};
        } else {
            t = {GithubState::pending,
                 shorten(j.tier == k_build_stage
                             ? "building base " + base7 + " to compare"
                             : "checking " + std::to_string(j.checked) +
                                   (j.checked == 1 ? " failing test" : " failing tests") +
                                   " on base " + base7)};
            base = {GithubState::pending, shorten(status_for_open_tier(j) + " on " + base7)};
        }
        contexts.emplace_back(prefix + "/" + j.tier, t);
        contexts.emplace_back(prefix + "/" + j.tier + "/base", base);
        return;
    }
    if (j.state == JobState::completed && j.conclusion) {
        t = final_status(*j.conclusion, j.reason);
    } else if (j.state == JobState::cancelled || j.state == JobState::completed) {
        t = {GithubState::error, shorten("cancelled: " + j.reason)};
    } else {
        t = {GithubState::pending, shorten(status_for_open_tier(j))};
    }
    contexts.emplace_back(prefix + "/" + j.tier, t);
}

/// The callback rows the run's started attempts want.
void add_callbacks(std::vector<Wanted>& wanted, store::OutboxRepo& repo,
                   const store::StatusRun& run, const OutboxSettings& s, std::int64_t run_id) {
    // One `in_progress` and one `completed` per tier attempt that started, each its own
    // row (context "job/<id>/<status>"), so that nothing is ever coalesced; a scheduled run
    // self-reports `completed` only (docs/reporting.md).
    // The dispatch record (the delivery's body, decompressed and parsed) only when an
    // attempt started: most syncs of a run (planned, superseded, cancelled) have none.
    const auto started = started_jobs(repo, run_id);
    auto cr = started.empty() ? std::nullopt : callback_run(repo, run, s);
    if (cr) {
        for (const auto& j : started) {
            const bool ended = !is_open(j.state);
            if (run.event != RunEvent::schedule) {
                wanted.push_back({Sink::callback, "job/" + std::to_string(j.id) + "/in_progress",
                                  "in_progress", "", callback_body(*cr, j, false, s).dump()});
            }
            if (ended) {
                wanted.push_back({Sink::callback, "job/" + std::to_string(j.id) + "/completed",
                                  "completed", "", callback_body(*cr, j, true, s).dump()});
            }
        }
    }
}

/// Appends a row for each wanted status that differs from the last one of its sink and context;
/// how many.
std::size_t append_changed(store::OutboxRepo& repo, const store::StatusRun& run,
                           const OutboxSettings& s, std::int64_t run_id,
                           const std::vector<Wanted>& wanted) {
    const std::string now = now_rfc3339();
    std::size_t appended = 0;
    for (const auto& w : wanted) {
        const auto last = repo.last_status(run_id, w.sink, w.context);
        bool had = last.has_value();
        bool same = had && last->state == w.state &&
                    (w.sink == Sink::callback || last->description == w.description);
        if (same) continue;
        // Nothing was ever announced for a context that ends cancelled: say nothing. (A
        // callback exists only for an attempt that started; its pair is always sent.)
        if (!had && w.sink != Sink::callback &&
            (run.state == RunState::cancelled || w.description.rfind("cancelled:", 0) == 0))
            continue;
        store::NewStatusRow row;
        row.sink = w.sink;
        row.run_id = run_id;
        row.sha = run.sha;
        row.context = w.context;
        row.state = w.state;
        row.description = w.description;
        row.target_url = s.target_url.empty() || w.sink == Sink::callback
                             ? std::optional<std::string>()
                             : std::optional<std::string>(s.target_url);
        row.body =
            w.body.empty() ? std::optional<std::string>() : std::optional<std::string>(w.body);
        row.created_at = now;
        if (w.sink == Sink::github) {
            row.priority = static_cast<std::int64_t>(status_priority(
                w.context == s.context_prefix, w.state != "pending", had && last->shown));
        }
        repo.append(row);
        ++appended;
    }
    return appended;
}

/// Appends the rows run `run_id` needs; how many.
std::size_t sync_run(store::OutboxRepo& repo, const OutboxSettings& s, std::int64_t run_id) {
    const auto found = repo.status_run(run_id);
    if (!found) return 0;
    const store::StatusRun& run = *found;
    const std::vector<store::StatusJob> jobs = repo.latest_attempts(run_id);
    if (jobs.empty() && run.state == RunState::queued) return 0;  // not planned yet
    if (run.event == RunEvent::bisect)
        return 0;  // a bisection's runs report nothing of their own (docs/verdicts.md)

    std::vector<Wanted> wanted;
    const std::string& prefix = s.context_prefix;
    const StatusText run_status = run_status_text(run, jobs);
    std::vector<std::pair<std::string, StatusText>> contexts = {{prefix, run_status}};
    for (const auto& j : jobs) add_tier_contexts(contexts, prefix, j);
    for (Sink sink : {Sink::github, Sink::file}) {
        if ((sink == Sink::github && !s.github) || (sink == Sink::file && !s.file)) continue;
        for (const auto& [ctx, t] : contexts)
            wanted.push_back({sink, ctx, std::string(to_string(t.state)), t.description, ""});
    }
    if (s.callback) add_callbacks(wanted, repo, run, s, run_id);

    return append_changed(repo, run, s, run_id, wanted);
}

}  // namespace

std::size_t sync_dirty(store::Db& db, const OutboxSettings& s) {
    store::OutboxRepo repo(db);
    const std::vector<std::int64_t> ids = repo.take_dirty();
    if (!s.github && !s.file && !s.callback) return 0;
    std::size_t appended = 0;
    for (auto id : ids) {
        OutboxSettings per_run = s;
        auto pos = per_run.target_url.find("{run_id}");
        if (pos != std::string::npos) per_run.target_url.replace(pos, 8, std::to_string(id));
        appended += sync_run(repo, per_run, id);
    }
    return appended;
}

}  // namespace crcrd::report
