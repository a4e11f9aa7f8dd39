#pragma once
// Credentials for GitHub's API: a token file (read at every use, so a rotation applies at
// once) or a GitHub App
// (an RS256 JWT, exchanged for an installation token that is cached until shortly before it
// expires). Used by the status sender and by the changed-paths look-up.

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <mutex>
#include <optional>
#include <string>

#include "crcrd/config/config.hpp"
#include "crcrd/core/result.hpp"
#include "crcrd/core/time.hpp"
#include "crcrd/http/message.hpp"

namespace crcrd::report {

/// A GitHub App JWT: {"alg":"RS256","typ":"JWT"}.{"iat": now-60, "exp": now+540, "iss": app_id},
/// signed with the PEM private key. Errors name the key file.
Result<std::string> make_app_jwt(std::int64_t app_id, const std::string& private_key_pem, SystemTime now);

/// The headers every request to GitHub's REST API carries besides Authorization (the client
/// adds `User-Agent: crcrd/<version>`).
http::Headers github_headers();

class GithubAuth {
public:
    GithubAuth(config::GithubReportConfig cfg, std::chrono::milliseconds timeout);
    /// A token for `Authorization: Bearer`: the token file's current content, or a cached
    /// installation token (a new one when the cache is within 5 minutes of `expires_at`).
    Result<std::string> token();
    /// Forgets a cached installation token (GitHub answered 401).
    void invalidate();

private:
    config::GithubReportConfig m_cfg;
    std::chrono::milliseconds m_timeout;
    std::mutex m_mu;
    // installation token
    std::string m_app_token;
    SystemTime m_app_expires{};
};

/// The relay's bearer token (CONTRACT.md §6.2): `token_file` read at every use, or the stdout
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
