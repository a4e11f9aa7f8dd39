#pragma once
// Credentials for GitHub's API: a token file (read at every use, so a rotation applies at
// once) or a GitHub App (an RS256 JWT, exchanged for an installation token that is cached
// until shortly before it expires). Used by the status sender (report), the changed-paths
// look-up (select), missed-delivery recovery (ingest) and the start-up key check (app).

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

namespace crcrd::github {

/// A GitHub App JWT: {"alg":"RS256","typ":"JWT"}.{"iat": now-60, "exp": now+540, "iss": app_id},
/// signed with the PEM private key. Errors name the key file.
Result<std::string> make_app_jwt(std::int64_t app_id, const std::string& private_key_pem,
                                 SystemTime now);

/// The headers every request to GitHub's REST API carries besides Authorization (the client
/// adds `User-Agent: crcrd/<version>`).
http::Headers api_headers();

/// The credentials of one `report.github` section. Thread-safe; never logs or returns a
/// token in an error message.
class Auth {
  public:
    Auth(config::GithubReportConfig cfg, std::chrono::milliseconds timeout);
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

}  // namespace crcrd::github
