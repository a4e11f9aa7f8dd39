#include "crcrd/core/units.hpp"

#include <charconv>
#include <iterator>
#include <limits>

namespace crcrd {

namespace {

Result<std::uint64_t> leading_number(std::string_view text, std::string_view& rest) {
    std::uint64_t n = 0;
    auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
    if (ec != std::errc() || ptr == text.data()) {
        return make_error(Errc::bad_unit, "expected a number followed by a unit");
    }
    rest = text.substr(static_cast<std::size_t>(ptr - text.data()));
    return n;
}

}  // namespace

Result<Duration> parse_duration(std::string_view text) {
    std::string_view unit;
    auto n = leading_number(text, unit);
    if (!n)
        return make_error(Errc::bad_duration,
                          "'" + std::string(text) + "' is not a duration like 90s, 10m or 2h");
    std::uint64_t factor = 0;
    if (unit == "ms")
        factor = 1;
    else if (unit == "s")
        factor = 1000;
    else if (unit == "m")
        factor = 60'000;
    else if (unit == "h")
        factor = 3'600'000;
    else if (unit == "d")
        factor = 86'400'000;
    else
        return make_error(Errc::bad_duration,
                          "'" + std::string(text) + "' is not a duration like 90s, 10m or 2h");
    if (*n > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()) / factor) {
        return make_error(Errc::bad_duration, "'" + std::string(text) + "' is too long");
    }
    return Duration(static_cast<std::int64_t>(*n * factor));
}

std::string format_duration(Duration d) {
    auto ms = d.count();
    if (ms != 0 && ms % 86'400'000 == 0) return std::to_string(ms / 86'400'000) + "d";
    if (ms != 0 && ms % 3'600'000 == 0) return std::to_string(ms / 3'600'000) + "h";
    if (ms != 0 && ms % 60'000 == 0) return std::to_string(ms / 60'000) + "m";
    if (ms % 1000 == 0) return std::to_string(ms / 1000) + "s";
    return std::to_string(ms) + "ms";
}

std::string format_seconds(Duration d, std::string_view gap) {
    const auto ms = d.count();
    return ms % 1000 == 0 ? std::to_string(ms / 1000) + std::string(gap) + "s"
                          : std::to_string(ms) + std::string(gap) + "ms";
}

Result<std::uint64_t> parse_size(std::string_view text) {
    std::string_view unit;
    auto n = leading_number(text, unit);
    auto bad = [&] {
        return make_error(Errc::bad_size, "'" + std::string(text) +
                                              "' is not a size like 1048576, 512KiB or 64MiB");
    };
    if (!n) return bad();
    std::uint64_t factor = 0;
    if (unit.empty() || unit == "B")
        factor = 1;
    else if (unit == "KiB")
        factor = 1ULL << 10;
    else if (unit == "MiB")
        factor = 1ULL << 20;
    else if (unit == "GiB")
        factor = 1ULL << 30;
    else if (unit == "KB")
        factor = 1000;
    else if (unit == "MB")
        factor = 1000 * 1000;
    else if (unit == "GB")
        factor = 1000 * 1000 * 1000;
    else
        return bad();
    if (*n > std::numeric_limits<std::uint64_t>::max() / factor) return bad();
    return *n * factor;
}

std::string format_size(std::uint64_t bytes) {
    static constexpr const char* k_units[] = {"KiB", "MiB", "GiB", "TiB"};
    if (bytes < 1024) return std::to_string(bytes) + " B";
    std::size_t unit = 0;
    std::uint64_t scale = 1024;
    while (unit + 1 < std::size(k_units) && bytes / scale >= 1024) {
        scale *= 1024;
        ++unit;
    }
    // Tenths, rounded down, in integers (a double would round 1023.96 up to "1024.0").
    const std::uint64_t tenths = bytes % scale * 10 / scale;
    return std::to_string(bytes / scale) + "." + std::to_string(tenths) + " " + k_units[unit];
}

}  // namespace crcrd
