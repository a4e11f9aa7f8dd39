#pragma once
// Logging: one line per event on stderr (journald picks it up), UTC timestamps.
// Callers pass delivery/run/job ids as key=value fields; secrets and payloads are never logged.
// Under systemd (stderr is the journal stream) every line starts with its sd-daemon priority
// ("<3>" for an error), so journald's priorities match the levels (docs/operations.md).

#include <spdlog/spdlog.h>

#include <string_view>

namespace crcrd::log {

/// Installs the process-wide stderr logger at `level` ("trace".."critical"; unknown names
/// mean "info"). Safe to call more than once.
/// When stderr is the journal stream, every line is prefixed with priority_prefix().
void init(std::string_view level = "info");

/// The sd-daemon prefix journald reads as the line's priority: critical "<2>", err "<3>",
/// warn "<4>", info "<6>", debug and trace "<7>".
std::string_view priority_prefix(spdlog::level::level_enum level);

/// True when stderr is the stream systemd connected to journald: $JOURNAL_STREAM
/// ("<device>:<inode>", as systemd sets it) names stderr's own device and inode. False when
/// unset, malformed, or naming another file (stderr redirected by a child of the service).
bool stderr_is_journal();

}  // namespace crcrd::log
