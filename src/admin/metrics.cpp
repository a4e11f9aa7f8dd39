#include "crcrd/admin/metrics.hpp"

#include <array>
#include <chrono>
#include <map>
#include <optional>

#include "crcrd/core/time.hpp"
#include "crcrd/core/units.hpp"
#include "crcrd/core/vocab.hpp"
#include "crcrd/store/metrics.hpp"

namespace crcrd::admin {

namespace {

using Labels = std::vector<std::string>;

/// A gauge family read at scrape time: every name in `known` gets a line (0 when the database
/// has none), then any other label value the database has.
template <std::size_t N>
void gauge(std::string& out, const char* name, const char* help, const char* label,
           const std::array<std::string_view, N>& known,
           const std::vector<store::LabelledCount>& rows) {
    std::map<std::string, std::int64_t> values;
    for (auto k : known) values[std::string(k)] = 0;
    for (const auto& r : rows) values[r.labels.at(0)] += r.value;
    write_metric_header(out, name, "gauge", help);
    for (const auto& [v, n] : values)
        write_metric_sample(out, name, {label}, {v}, static_cast<double>(n));
}

void scalar(std::string& out, const char* name, const char* type, const char* help, double v) {
    write_metric_header(out, name, type, help);
    write_metric_sample(out, name, {}, {}, v);
}

/// A lane's time field ("paused_until", "next_send_at"); none when null, missing or unreadable.
std::optional<SystemTime> lane_time(const nlohmann::json& lane, const char* key) {
    auto it = lane.find(key);
    if (it == lane.end() || !it->is_string()) return std::nullopt;
    return parse_rfc3339(it->get<std::string>());
}

/// A lane's number field; 0 when null, missing or not a number.
double lane_number(const nlohmann::json& j, const char* key) {
    auto it = j.find(key);
    return it != j.end() && it->is_number() ? it->get<double>() : 0.0;
}

/// A budget window's length as a label: "60s", "3600s" ("1500ms" for a part of a second).
std::string window_label(double per_seconds) {
    return format_seconds(std::chrono::round<Duration>(std::chrono::duration<double>(per_seconds)));
}

}  // namespace

Metrics::Metrics()
    : m_deliveries("crcrd_deliveries_total", "Requests to the webhook path, by verdict.",
                   {"verdict"}),
      m_runs_created("crcrd_runs_created_total", "Runs created, by event.", {"event"}),
      m_runs_finished("crcrd_runs_finished_total",
                      "Runs that ended (completed or cancelled), by event and class.",
                      {"event", "conclusion"}),
      m_jobs_finished("crcrd_jobs_finished_total",
                      "Job attempts that ended (completed or cancelled; a retry is a new attempt), "
                      "by tier and class.",
                      {"tier", "conclusion"}),
      m_statuses("crcrd_statuses_total",
                 "Outbox rows (commit statuses, report-file lines, relay callbacks) that left the "
                 "queue, by sink and "
                 "outcome: sent, dead (given up), coalesced (replaced by a newer state of the same "
                 "context).",
                 {"sink", "outcome"}),
      m_selection_misses("crcrd_selection_misses_total",
                         "Failures of a scheduled run that no PR or push run of the commits since "
                         "the previous one "
                         "selected (docs/verdicts.md).",
                         {}),
      m_build_cache(
          "crcrd_build_cache_lookups_total",
          "Build stage lookups of a build key (docs/build.md), by result: hit (a build "
          "job passed without building: its key was ready) or miss (a key was built: new, "
          "or again after it failed or was evicted). Counted since the start.",
          {"result"}),
      m_build_evictions("crcrd_build_evictions_total",
                        "Ready builds evicted from the cache (its limit, the free-space floor, an "
                        "operator, or a folder found gone). Counted since the start.",
                        {}),
      m_build_duration("crcrd_build_duration_seconds",
                       "Time from a build's last attempt's start to the build's end, by outcome "
                       "(ready, failed).",
                       {"outcome"},
                       {10, 30, 60, 120, 300, 600, 900, 1200, 1800, 2700, 3600, 5400, 7200, 14400}),
      m_job_duration("crcrd_job_duration_seconds",
                     "Time from a job attempt's start to its end, by tier.", {"tier"},
                     {1, 5, 10, 30, 60, 120, 300, 600, 1200, 1800, 3600, 7200, 14400, 28800}),
      m_queue_wait("crcrd_job_queue_wait_seconds",
                   "Time a job attempt waited from its creation to its start, by tier.", {"tier"},
                   {0.1, 0.5, 1, 5, 10, 30, 60, 300, 600, 1800, 3600, 7200, 21600}),
      m_requests("crcrd_http_request_duration_seconds",
                 "Time to answer an HTTP request (webhook, admin API, metrics, health), by route "
                 "pattern and method.",
                 {"route", "method"},
                 {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}) {
    for (auto v : names<Verdict>()) m_deliveries.add({std::string(v)}, 0);
    m_selection_misses.add({}, 0);
    m_build_cache.add({"hit"}, 0);
    m_build_cache.add({"miss"}, 0);
    m_build_evictions.add({}, 0);
}

void Metrics::seed(const store::EventTotals& t) {
    auto add = [](CounterFamily& f, const std::vector<store::LabelledCount>& rows) {
        for (const auto& r : rows) f.add(r.labels, static_cast<double>(r.value));
    };
    add(m_deliveries, t.deliveries);
    add(m_runs_created, t.runs_created);
    add(m_runs_finished, t.runs_finished);
    add(m_jobs_finished, t.jobs_finished);
    add(m_statuses, t.statuses);
    m_selection_misses.add({}, static_cast<double>(t.selection_misses));
}

void Metrics::record(const std::vector<store::Event>& events) {
    using K = store::EventKind;
    for (const auto& e : events) {
        switch (e.kind) {
            case K::delivery:
                m_deliveries.add({e.a});
                break;
            case K::run_created:
                m_runs_created.add({e.a});
                break;
            case K::run_finished:
                m_runs_finished.add({e.a, e.b});
                break;
            case K::job_started:
                if (e.seconds) m_queue_wait.observe({e.a}, *e.seconds < 0 ? 0 : *e.seconds);
                break;
            case K::job_finished:
                m_jobs_finished.add({e.a, e.b});
                if (e.seconds) m_job_duration.observe({e.a}, *e.seconds < 0 ? 0 : *e.seconds);
                break;
            case K::status_settled:
                m_statuses.add({e.a, e.b});
                break;
            case K::selection_miss:
                m_selection_misses.add({});
                break;
            case K::followup:
                break;  // the planner's wake-up, not a metric
            case K::build_cache:
                m_build_cache.add({e.a});
                break;
            case K::build_evicted:
                m_build_evictions.add({});
                break;
            case K::build_finished:
                if (e.seconds) m_build_duration.observe({e.a}, *e.seconds < 0 ? 0 : *e.seconds);
                break;
        }
    }
}

void Metrics::observe_request(std::string_view route, std::string_view method, double seconds) {
    const bool known = method == "GET" || method == "HEAD" || method == "POST";
    m_requests.observe({std::string(route), known ? std::string(method) : "other"}, seconds);
}

std::string Metrics::counters_text() const {
    std::string out;
    for (const CounterFamily* f :
         {&m_deliveries, &m_runs_created, &m_runs_finished, &m_jobs_finished, &m_statuses,
          &m_selection_misses, &m_build_cache, &m_build_evictions}) {
        f->write(out);
    }
    for (const HistogramFamily* h :
         {&m_job_duration, &m_queue_wait, &m_build_duration, &m_requests})
        h->write(out);
    return out;
}

double Metrics::counter(std::string_view family, const std::vector<std::string>& labels) const {
    for (const CounterFamily* f :
         {&m_deliveries, &m_runs_created, &m_runs_finished, &m_jobs_finished, &m_statuses,
          &m_selection_misses, &m_build_cache, &m_build_evictions}) {
        if (f->name() == family) return f->value(labels);
    }
    return 0;
}

Result<std::string> Metrics::text(const std::filesystem::path& db, std::size_t writer_pending,
                                  const nlohmann::json& lanes) const {
    auto read = store::read_gauges(db);
    if (!read) return read.error();
    const auto& g = *read;
    std::string out;
    write_metric_header(out, "crcrd_build_info", "gauge", "The running crcrd.");
    write_metric_sample(out, "crcrd_build_info", {"version"}, {CRCRD_VERSION}, 1);
    out += counters_text();
    constexpr std::array<std::string_view, 2> open_runs{"queued", "running"};
    constexpr std::array<std::string_view, 3> open_jobs{"queued", "leased", "running"};
    constexpr std::array<std::string_view, 4> slots{"idle", "busy", "offline", "drained"};
    gauge(out, "crcrd_runs_open", "Runs not ended yet, by state (queued: the runs' queue depth).",
          "state", open_runs, g.runs_open);
    gauge(out, "crcrd_jobs_open",
          "Job attempts not ended yet, by state (queued: the jobs' queue depth).", "state",
          open_jobs, g.jobs_open);
    gauge(out, "crcrd_slots", "Runner slots by state.", "state", slots, g.slots_by_state);
    gauge(out, "crcrd_outbox_backlog", "Outbox rows waiting to be delivered, by sink.", "sink",
          names<Sink>(), g.outbox_waiting);
    gauge(out, "crcrd_outbox_dead_letters",
          "Outbox rows given up on (dead) and not pruned yet, by sink: POST "
          "/api/v1/outbox/{id}/retry sends one again.",
          "sink", names<Sink>(), g.outbox_dead);
    gauge(out, "crcrd_outbox_credentials_rejected",
          "Statuses waiting because their last attempt was answered 401 or 403 (not a rate limit): "
          "a revoked or "
          "rotated token; retried until the credentials work.",
          "sink", names<Sink>(), g.outbox_credentials_rejected);
    double oldest = 0;
    if (g.oldest_waiting_created_at) {
        if (auto t = parse_rfc3339(*g.oldest_waiting_created_at)) {
            oldest = static_cast<double>(std::chrono::duration_cast<std::chrono::seconds>(
                                             std::chrono::system_clock::now() - *t)
                                             .count());
        }
    }
    scalar(out, "crcrd_outbox_oldest_waiting_seconds", "gauge",
           "Age of the oldest status not delivered yet (0: none).", oldest < 0 ? 0 : oldest);
    out += lane_gauges(lanes, g.outbox_waiting, std::chrono::system_clock::now());
    scalar(out, "crcrd_writer_pending", "gauge", "Writes queued for the database.",
           static_cast<double>(writer_pending));
    gauge(out, "crcrd_builds",
          "Builds by state (docs/build.md): one row per build key, kept after it failed or was "
          "evicted.",
          "state", names<BuildState>(), g.builds_by_state);
    scalar(out, "crcrd_build_cache_bytes", "gauge",
           "Bytes of the ready builds in build.cache_dir (their regular files' sizes).",
           static_cast<double>(g.build_cache_bytes));
    write_process_metrics(out);
    return out;
}

std::string lane_gauges(const nlohmann::json& lanes,
                        const std::vector<store::LabelledCount>& waiting, SystemTime now) {
    std::map<std::string, std::int64_t> waits;
    for (const auto& r : waiting) waits[r.labels.at(0)] += r.value;
    struct Sample {
        std::vector<std::string> labels;
        double value;
    };
    std::vector<Sample> left, paused, held, next;
    for (const auto& lane : lanes) {
        if (!lane.is_object() || !lane.contains("sink") || !lane["sink"].is_string()) continue;
        const std::string sink = lane["sink"].get<std::string>();
        const auto budget = lane.find("budget");
        if (lane.contains("configured") && lane["configured"] == true && budget != lane.end() &&
            budget->is_array()) {
            for (const auto& w : *budget) {
                if (!w.is_object()) continue;
                left.push_back(
                    {{sink, window_label(lane_number(w, "per_seconds"))}, lane_number(w, "left")});
            }
        }
        const auto until = lane_time(lane, "paused_until");
        paused.push_back({{sink}, until && *until > now ? 1.0 : 0.0});
        held.push_back({{sink}, lane_number(lane, "held_back")});
        double wait = 0;
        if (const auto at = lane_time(lane, "next_send_at"); at && *at > now && waits[sink] > 0)
            wait = std::chrono::duration<double>(*at - now).count();
        next.push_back({{sink}, wait});
    }
    std::string out;
    // A family without samples (no lane has a budget) is left out, header and all.
    auto family = [&](const char* name, const char* help, std::vector<std::string> label_names,
                      const std::vector<Sample>& samples) {
        if (samples.empty()) return;
        write_metric_header(out, name, "gauge", help);
        for (const auto& s : samples)
            write_metric_sample(out, name, label_names, s.labels, s.value);
    };
    family("crcrd_outbox_budget_left",
           "Requests a configured reporting lane may still make in each window of its budget "
           "(report.<sink>.budget), by sink and window length, as of the lane's last look.",
           {"sink", "window"}, left);
    family("crcrd_outbox_lane_paused",
           "1 while a reporting lane pauses after a rate-limit answer (paused_until in the "
           "future), else 0.",
           {"sink"}, paused);
    family("crcrd_outbox_held_back",
           "Rows the budget's shares held back at the lane's last look (they wait; a pending one "
           "is replaced by its context's next state).",
           {"sink"}, held);
    family("crcrd_outbox_next_send_seconds",
           "Seconds until a reporting lane's next send while rows wait (a pause, the budget, a "
           "retry time); 0 when one is due or nothing waits.",
           {"sink"}, next);
    return out;
}

}  // namespace crcrd::admin
