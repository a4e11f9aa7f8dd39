#pragma once
// Parsing of the human units used in the configuration: durations and byte sizes.

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "crcrd/core/result.hpp"

namespace crcrd {

using Duration = std::chrono::milliseconds;

/// Parses "250ms", "90s", "10m", "2h", "1d" (one number, one unit, no spaces) into
/// milliseconds. A bare number is an error: the unit is always written.
Result<Duration> parse_duration(std::string_view text);

/// Formats a duration back in the largest unit that divides it ("90s", "10m").
std::string format_duration(Duration d);

/// Formats a duration in whole seconds when it is whole, else in milliseconds ("60s", "3600s",
/// "1500ms"); `gap` goes between the number and the unit ("60 s").
std::string format_seconds(Duration d, std::string_view gap = "");

/// Parses "1048576", "512KiB", "64MiB", "1GiB" (also KB/MB/GB as powers of 1000) into bytes.
Result<std::uint64_t> parse_size(std::string_view text);

/// A byte count for people, in the largest binary unit under which it is at least 1: "512 B",
/// "1.5 KiB", "683.5 KiB", "2.0 GiB" (one decimal, rounded down; up to TiB).
std::string format_size(std::uint64_t bytes);

}  // namespace crcrd
