#include "crcrd/core/time.hpp"

#include <ctime>
#include <fmt/format.h>

namespace crcrd {

std::string rfc3339(SystemTime t) {
    auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
    std::time_t secs = static_cast<std::time_t>(ms / 1000);
    std::tm tm{};
    gmtime_r(&secs, &tm);
    return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z", tm.tm_year + 1900,
                       tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ms % 1000);
}

std::string now_rfc3339() { return rfc3339(std::chrono::system_clock::now()); }

}  // namespace crcrd
