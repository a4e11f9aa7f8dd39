#pragma once
// The daemon's life: load and check the config, open storage, serve, reload on SIGHUP,
// drain on SIGTERM/SIGINT, talk to systemd.

#include <filesystem>
#include <iosfwd>

namespace crcrd::app {

/// Validates the config at `path` (including that every secret file can be read) and prints
/// every error to `err`. Returns 0 when valid, 2 otherwise (docs/operations.md).
int check_config(const std::filesystem::path& path, std::ostream& err);

/// Runs the daemon until SIGTERM/SIGINT. Returns 0 after a clean stop, 1 on a runtime
/// failure, 2 on a configuration error.
int run(const std::filesystem::path& config_path);

}  // namespace crcrd::app
