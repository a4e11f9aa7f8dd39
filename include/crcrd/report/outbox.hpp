#pragma once
// The outbox (docs/reporting.md): what crcrd must tell GitHub, the report file and the relay,
// written in the same transaction as the state change that caused it. Triggers mark a run
// "dirty" whenever a run or job changes state; sync_dirty(), run by the writer before every
// commit, turns each dirty run into the statuses it should show and appends a row for every
// context whose state or description changed.

#include <cstdint>
#include <mutex>
#include <memory>
#include <optional>
#include <string>

#include "crcrd/store/sqlite.hpp"

namespace crcrd::report {

struct OutboxSettings {
    std::string context_prefix = "crcr";
    bool github = false;    // report.github is configured
    bool file = false;      // report.file is configured
    bool callback = false;  // report.crcr_callback is configured
    /// report.target_url with "{run_id}" replaced; empty: no link.
    std::string target_url;
};

/// A GitHub status state and description for a §5 class (descriptions ≤ 140 characters).
struct StatusText {
    std::string state;  // pending | success | failure | error
    std::string description;
};
StatusText final_status(const std::string& conclusion, const std::string& reason);

/// Cuts `text` to at most `max` bytes on a UTF-8 boundary, ending with "…" when cut.
std::string shorten(const std::string& text, std::size_t max = 140);

/// Drains `status_dirty` into new outbox rows. Runs inside the writer's transaction.
void sync_dirty(store::Db& db, const OutboxSettings& settings);

/// Holds the settings the writer's hook reads; replaced on SIGHUP.
class OutboxHook {
public:
    explicit OutboxHook(OutboxSettings s) : m_settings(std::make_shared<const OutboxSettings>(std::move(s))) {}
    void set(OutboxSettings s) {
        std::lock_guard lk(m_mu);
        m_settings = std::make_shared<const OutboxSettings>(std::move(s));
    }
    void operator()(store::Db& db) {
        std::shared_ptr<const OutboxSettings> s;
        {
            std::lock_guard lk(m_mu);
            s = m_settings;
        }
        sync_dirty(db, *s);
    }

private:
    std::mutex m_mu;
    std::shared_ptr<const OutboxSettings> m_settings;
};

}  // namespace crcrd::report
