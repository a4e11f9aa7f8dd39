#pragma once
// The bearer token crcrd presents to the relay on the CRCR callback.

#include <chrono>
#include <mutex>
#include <string>

#include "crcrd/config/config.hpp"
#include "crcrd/core/result.hpp"

namespace crcrd::report {

/// The relay's bearer token (docs/reporting.md): `token_file` read at every use, or the stdout
/// of `token_command` (an argv run without a shell, e.g. a helper that mints an OIDC token
/// for the audience `pytorch-cross-repo-ci-relay`), cached for `token_ttl`.
class RelayToken {
  public:
    explicit RelayToken(config::CrcrCallbackConfig cfg) : m_cfg(std::move(cfg)) {}
    /// The token; errors say why the file or the command gave none (never the token).
    Result<std::string> token();
    /// Forgets a cached token (the relay answered 401: it may have expired).
    void invalidate();

  private:
    config::CrcrCallbackConfig m_cfg;
    std::mutex m_mu;
    std::string m_cached;
    std::chrono::steady_clock::time_point m_fetched{};
};

}  // namespace crcrd::report
