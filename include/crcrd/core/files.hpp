#pragma once
// Reading small files (secrets, certificates, payloads) with errors as values.

#include <filesystem>
#include <string>

#include "crcrd/core/result.hpp"

namespace crcrd {

/// The whole content of `path`. Fails with code "io" naming the path (never its content)
/// when it cannot be opened or read, or is larger than `max_bytes`.
Result<std::string> read_file(const std::filesystem::path& path,
                              std::size_t max_bytes = 16 * 1024 * 1024);

/// Reads a file that an untrusted process may have placed (a test's JUnit, docs/security.md):
/// only a regular file, never through a symbolic link, never blocking on a fifo or device,
/// refused when larger than `max_bytes`. Never throws.
Result<std::string> read_untrusted_file(const std::filesystem::path& path, std::size_t max_bytes);

/// Writes `text` to `path` whole or not at all: a temporary file beside it, flushed to disk,
/// renamed over it. Fails with code "io" naming the path.
Status write_file_atomic(const std::filesystem::path& path, const std::string& text);

/// `text` without leading and trailing ASCII whitespace (secret files end with a newline).
std::string trim(std::string text);

/// The path of this process's executable (/proc/self/exe), also after a package upgrade has
/// replaced it (the new file at the same path). Read once per process; empty when /proc was
/// unreadable.
std::string self_executable();

}  // namespace crcrd
