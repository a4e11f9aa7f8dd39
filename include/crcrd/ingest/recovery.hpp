#pragma once
// Missed-delivery recovery (docs/ingest.md). GitHub never redelivers a failed webhook by
// itself and keeps deliveries 3 days: at start-up and every `recovery.interval`, crcrd lists
// the hook's deliveries back to its watermark (cursor paging), groups them by guid (the
// X-GitHub-Delivery it would have seen), and asks GitHub once to redeliver each guid none of
// whose deliveries succeeded and that crcrd never accepted. The redelivery arrives as an
// ordinary webhook and is deduplicated as usual. Each pass is recorded.

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "crcrd/config/config.hpp"
#include "crcrd/core/clock.hpp"
#include "crcrd/core/result.hpp"
#include "crcrd/core/worker_loop.hpp"
#include "crcrd/store/writer.hpp"

namespace crcrd::ingest {

/// One delivery as GitHub lists it (GET .../hooks/{id}/deliveries).
struct HookDelivery {
    std::int64_t id = 0;
    std::string guid;
    std::string delivered_at;  // RFC 3339
    int status_code = 0;       // 0: no answer (timeout, connection refused)
};

/// The guids to redeliver, each with the id of its newest delivery: none of the guid's
/// deliveries succeeded (2xx), crcrd did not accept it, and it was not redelivered before.
/// `deliveries` may be in any order. Pure: the tests feed it tables.
std::vector<std::pair<std::string, std::int64_t>> to_redeliver(
    const std::vector<HookDelivery>& deliveries,
    const std::function<bool(const std::string&)>& accepted,
    const std::function<bool(const std::string&)>& redelivered);

struct RecoverySettings {
    config::RecoveryConfig recovery;
    config::GithubReportConfig github;  // api_url and credentials
    std::chrono::milliseconds timeout{std::chrono::seconds(30)};
};

class Recovery {
  public:
    /// `clock`: the time a pass reads (its lookback, its record, the App's JWT).
    Recovery(store::Writer& writer, std::filesystem::path db_path, RecoverySettings settings,
             const core::Clock& clock = core::system_clock());
    ~Recovery();
    /// Runs a first pass at once, then every interval.
    void start();
    /// A pass now (POST /api/v1/recovery/run); returns at once.
    void run_now();
    void set_settings(RecoverySettings settings);
    void stop();

  private:
    void pass();

    store::Writer& m_writer;
    std::filesystem::path m_db_path;
    const core::Clock& m_clock;
    mutable std::mutex m_mu;
    RecoverySettings m_settings;
    core::WorkerLoop m_loop{
        "recovery", [this] {
            pass();
            std::lock_guard lk(m_mu);
            return std::optional<core::WorkerLoop::Duration>(m_settings.recovery.interval);
        }};
};

}  // namespace crcrd::ingest
