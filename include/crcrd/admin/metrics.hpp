#pragma once
// GET /metrics (CONTRACT.md §7): the store's counts in Prometheus' text format (0.0.4),
// read at scrape time on a read-only connection. Blocking: call from a worker.

#include <cstddef>
#include <filesystem>
#include <string>

#include "crcrd/core/result.hpp"

namespace crcrd::admin {

/// Deliveries by verdict, runs by state and class, jobs by state, finished attempts by class,
/// slots by state, outbox rows by sink and delivery state, the age of the oldest waiting
/// row, and `writer_pending` (writes queued in the daemon).
Result<std::string> metrics_text(const std::filesystem::path& db, std::size_t writer_pending);

}  // namespace crcrd::admin
