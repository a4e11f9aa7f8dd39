#pragma once
// The `slots` table: one row per configured runner slot, its state (idle, busy, offline), the
// job holding its lease, its drain flag and its last health check. Every function runs on the
// writer's connection, inside a writer item (a failure fails the item).

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "crcrd/core/time.hpp"
#include "crcrd/store/fwd.hpp"
#include "crcrd/store/json_text.hpp"

namespace crcrd::store {

/// A busy slot whose lease ran out.
struct LapsedLease {
    std::string slot;
    std::optional<std::int64_t> job_id;
};

class SlotsRepo {
  public:
    explicit SlotsRepo(Db& db) noexcept : m_db(db) {}

    /// Makes the table match `configured`: new names become idle slots; rows of names no longer
    /// configured are deleted unless busy (a busy one goes when its job ends and it is synced
    /// again).
    void sync(const std::vector<std::string>& configured);
    /// Idle slots that are not drained, by name.
    std::vector<std::string> free_undrained();
    /// Leases idle slot `name` to `job_id` until `expires_at`; false when it was no longer idle.
    bool take(const std::string& name, std::int64_t job_id, SystemTime expires_at);
    /// The slot failed its health check: offline, free, `health_json` kept, next check at
    /// `next_check_at`.
    void take_offline(const std::string& name, const JsonText& health, SystemTime next_check_at);
    /// Gives slot `name` back from `job_id` (idle again); `health_json`, when given, becomes its
    /// last health.
    void give_back(const std::string& name, std::int64_t job_id,
                   const std::optional<JsonText>& health);
    /// Frees every busy slot (at start-up, when no job of this daemon runs).
    void free_all_busy();
    /// Moves the lease of the slot that `job_id` holds to `expires_at`.
    void renew_lease(std::int64_t job_id, SystemTime expires_at);
    /// Busy slots whose lease ended before `now`.
    std::vector<LapsedLease> lapsed(SystemTime now);
    /// Frees busy slot `name` (its lease lapsed).
    void free_busy(const std::string& name);
    /// Offline slots whose next health check is due at `now`.
    std::vector<std::string> due_for_recheck(SystemTime now);
    /// The earliest next health check after `now` of an offline slot, if any.
    std::optional<std::string> next_recheck_at(SystemTime now);
    /// Records a recheck of offline slot `name`: idle when `ok`, else offline until
    /// `next_check_at`.
    void record_recheck(const std::string& name, bool ok, const JsonText& health,
                        SystemTime next_check_at);
    /// Sets the drain flag of `name`; false when there is no such slot.
    bool set_drained(const std::string& name, bool drained);

  private:
    Db& m_db;
};

}  // namespace crcrd::store
