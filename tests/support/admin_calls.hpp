#pragma once
// What a test of the admin API does with a daemon's answers and with crcrctl: remember each
// answer, have docs/openapi.yaml judge them all at once (tests/support/openapi_check.py), and
// run crcrctl against the daemon with a token file.

#include <filesystem>
#include <string>
#include <vector>

#include "crcrd/http/client.hpp"
#include "support/daemon.hpp"

namespace crcrd {

/// One answer as the OpenAPI checker takes it (a JSON line).
std::string answer_line(const std::string& method, const std::string& path,
                        const http::ClientResponse& r);

/// docs/openapi.yaml's verdict on `lines` (answer_line()s): "ok", or the first answer that does
/// not match its schema with the checker's reason.
std::string openapi_verdict(const std::vector<std::string>& lines);

/// crcrctl against `daemon` (its URL and the test CA) with `token_file` and `args`; its exit
/// code, and what it printed (stdout and stderr) in `out`.
int run_crcrctl(const TestDaemon& daemon, const std::filesystem::path& token_file,
                const std::vector<std::string>& args, std::string& out);

}  // namespace crcrd
