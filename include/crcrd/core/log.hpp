#pragma once
// Logging: one line per event on stderr (journald picks it up), UTC timestamps.
// Callers pass delivery/run/job ids as key=value fields; secrets and payloads are never logged.

#include <spdlog/spdlog.h>

#include <string_view>

namespace crcrd::log {

/// Installs the process-wide stderr logger at `level` ("trace".."critical"; unknown names
/// mean "info"). Safe to call more than once.
void init(std::string_view level = "info");

}  // namespace crcrd::log
