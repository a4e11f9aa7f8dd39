#include "crcrd/core/time.hpp"

#include "crcrd/core/clock.hpp"

#include <fmt/format.h>
#include <cctype>
#include <cstdio>
#include <ctime>

namespace crcrd {

std::string rfc3339(SystemTime t) {
    auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
    std::time_t secs = static_cast<std::time_t>(ms / 1000);
    std::tm tm{};
    gmtime_r(&secs, &tm);
    return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z", tm.tm_year + 1900,
                       tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ms % 1000);
}

std::string now_rfc3339() {
    return rfc3339(std::chrono::system_clock::now());
}

std::optional<SystemTime> parse_rfc3339(const std::string& text) {
    std::tm tm{};
    int ms = 0;
    int n = 0;
    if (std::sscanf(text.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
                    &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &n) != 6) {
        return std::nullopt;
    }
    std::string rest = text.substr(static_cast<std::size_t>(n));
    if (rest.size() > 1 && rest[0] == '.') {
        std::size_t i = 1;
        int digits = 0;
        while (i < rest.size() && std::isdigit(static_cast<unsigned char>(rest[i]))) {
            if (digits < 3) ms = ms * 10 + (rest[i] - '0');
            ++digits;
            ++i;
        }
        if (digits == 0) return std::nullopt;
        for (int d = digits; d < 3; ++d) ms *= 10;
        rest = rest.substr(i);
    }
    if (rest != "Z") return std::nullopt;
    tm.tm_year -= 1900;
    tm.tm_mon -= 1;
    return std::chrono::system_clock::from_time_t(timegm(&tm)) + std::chrono::milliseconds(ms);
}

}  // namespace crcrd

namespace crcrd::core {

namespace {
class SystemClock final : public Clock {
  public:
    SystemTime now() const override { return std::chrono::system_clock::now(); }
};
}  // namespace

const Clock& system_clock() {
    static const SystemClock clock;
    return clock;
}

}  // namespace crcrd::core
