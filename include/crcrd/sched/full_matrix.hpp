#pragma once
// The scheduled full matrix (rules file `full_matrix`): at each firing time of the cron
// expression, a `schedule` run of every tier on the newest SHA of the configured branch.
// The next firing time is kept in the database, so a slot missed while the daemon was down
// runs once at start-up, not once per missed slot.

#include <chrono>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>

#include "crcrd/core/result.hpp"
#include "crcrd/select/rules.hpp"
#include "crcrd/store/writer.hpp"

namespace crcrd::sched {

class FullMatrixTrigger {
  public:
    using Clock = std::function<std::chrono::system_clock::time_point()>;
    using NewestSha = std::function<Result<std::string>(const std::string& ref)>;

    FullMatrixTrigger(
        store::Writer& writer, std::filesystem::path db_path, NewestSha newest_sha,
        Clock clock = [] { return std::chrono::system_clock::now(); });

    /// Checks the schedule once. The first check ever (or after the schedule changed) only
    /// records the next firing time. When that time has passed, creates one schedule run
    /// and records the next time after now. Returns the run created, if any. Blocking.
    std::optional<std::int64_t> tick(const select::Rules& rules);

  private:
    store::Writer& m_writer;
    std::filesystem::path m_db_path;
    NewestSha m_newest_sha;
    Clock m_clock;
    std::string m_known_schedule;  // the meta rows as last read or written
    std::optional<std::int64_t> m_known_next;
};

}  // namespace crcrd::sched
