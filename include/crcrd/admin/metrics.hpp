#pragma once
// GET /metrics (docs/operations.md "Metrics"): Prometheus' text format (0.0.4).
// Counters and histograms live in memory and move as events happen: the writer's committed
// events (store/events.hpp) and each HTTP request. They start from one read of the database
// at start-up. A scrape adds gauges of what is open now (indexed reads, never the history),
// the reporting lanes' gauges (from the sender's memory) and the process_* families.

#include <cstddef>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "crcrd/core/metrics.hpp"
#include "crcrd/core/result.hpp"
#include "crcrd/core/time.hpp"
#include "crcrd/store/events.hpp"
#include "crcrd/store/metrics.hpp"

namespace crcrd::admin {

class Metrics {
  public:
    Metrics();
    Metrics(const Metrics&) = delete;
    Metrics& operator=(const Metrics&) = delete;

    /// Adds the start-up totals to the counters (read in the same writer item that installed
    /// the event triggers, so nothing is counted twice or missed).
    void seed(const store::EventTotals& totals);
    /// Counts the events of one durable commit. Thread-safe, never blocks for long.
    void record(const std::vector<store::Event>& events);
    /// One HTTP request answered: `route` is a bounded label (a route pattern, "webhook",
    /// "other"), `method` the request's (anything but GET, HEAD, POST counts as "other").
    void observe_request(std::string_view route, std::string_view method, double seconds);

    /// The whole exposition: the counters and histograms, the gauges of what is open now read
    /// on `db` (a read-only connection per call; blocking: call from a worker), `writer_pending`,
    /// the reporting lanes' gauges of `lanes` (lane_gauges()), the build and the process. A
    /// storage code when the gauges cannot be read.
    Result<std::string> text(const std::filesystem::path& db, std::size_t writer_pending,
                             const nlohmann::json& lanes = nlohmann::json::array()) const;

    /// The counters and histograms only (no database, no process): what text() starts with.
    std::string counters_text() const;

    /// For tests: a counter's value by family name ("crcrd_deliveries_total") and labels.
    double counter(std::string_view family, const std::vector<std::string>& labels) const;

  private:
    CounterFamily m_deliveries;
    CounterFamily m_runs_created;
    CounterFamily m_runs_finished;
    CounterFamily m_jobs_finished;
    CounterFamily m_statuses;
    CounterFamily m_selection_misses;
    CounterFamily m_build_cache;       // crcrd_build_cache_lookups_total{result}
    CounterFamily m_build_evictions;   // crcrd_build_evictions_total
    HistogramFamily m_build_duration;  // crcrd_build_duration_seconds{outcome}
    HistogramFamily m_job_duration;
    HistogramFamily m_queue_wait;
    HistogramFamily m_requests;
};

/// The reporting lanes' gauges (docs/operations.md, "Metrics"): crcrd_outbox_budget_left{sink,
/// window} (the requests left in each window of a configured lane's budget, `window` its length
/// as "60s"), crcrd_outbox_lane_paused{sink} (1 while the lane's paused_until is after `now`),
/// crcrd_outbox_held_back{sink} and crcrd_outbox_next_send_seconds{sink} (until next_send_at,
/// 0 when it is due or nothing waits). `lanes` is the array Api::on_outbox_lanes returns (each
/// lane's "sink", "configured", "budget", "paused_until", "next_send_at", "held_back");
/// `waiting` the waiting rows per sink (the scrape's crcrd_outbox_backlog counts). Reads
/// nothing else; a field missing from a lane reads as none.
std::string lane_gauges(const nlohmann::json& lanes,
                        const std::vector<store::LabelledCount>& waiting, SystemTime now);

}  // namespace crcrd::admin
