#pragma once
// GET /metrics (docs/operations.md "Metrics"): Prometheus' text format (0.0.4).
// Counters and histograms live in memory and move as events happen: the writer's committed
// events (store/events.hpp) and each HTTP request. They start from one read of the database
// at start-up. A scrape adds gauges of what is open now (indexed reads, never the history)
// and the process_* families.

#include <cstddef>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "crcrd/core/metrics.hpp"
#include "crcrd/core/result.hpp"
#include "crcrd/store/events.hpp"

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
    /// the build and the process. A storage code when the gauges cannot be read.
    Result<std::string> text(const std::filesystem::path& db, std::size_t writer_pending) const;

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
    HistogramFamily m_job_duration;
    HistogramFamily m_queue_wait;
    HistogramFamily m_requests;
};

}  // namespace crcrd::admin
