#pragma once
// Wall-clock helpers. All stored and served times are RFC 3339 UTC strings.

#include <chrono>
#include <optional>
#include <string>

namespace crcrd {

using SystemTime = std::chrono::system_clock::time_point;

/// "2026-11-29T17:40:06.123Z" (millisecond precision, always UTC, always 24 characters).
std::string rfc3339(SystemTime t);

/// rfc3339(now).
std::string now_rfc3339();
/// Parses "YYYY-MM-DDTHH:MM:SS[.fff]Z" (what rfc3339() writes, and GitHub's `expires_at`);
/// nullopt for anything else.
std::optional<SystemTime> parse_rfc3339(const std::string& text);

}  // namespace crcrd
