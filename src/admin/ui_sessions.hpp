#pragma once
// Admin-internal: the dashboard's sign-in sessions (docs/dashboard.md). A session is made by
// the login form from a valid admin-API token and lives in memory only: a restart signs
// everybody out. The cookie carries a random 256-bit id; the table keeps its SHA-256, the
// token's name and a CSRF token for the write forms.

#include <chrono>
#include <cstddef>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

namespace crcrd::admin {

struct UiSession {
    std::string token_name;  // whose token signed in; its role is looked up on every request
    std::string csrf;        // the value every write form must carry
    std::chrono::steady_clock::time_point expires;
};

class UiSessions {
  public:
    /// `ttl`: how long a session lasts after sign-in; `capacity`: at most this many at once
    /// (the oldest goes first when a new one would exceed it).
    explicit UiSessions(std::chrono::seconds ttl = std::chrono::hours(12),
                        std::size_t capacity = 4096)
        : m_ttl(ttl), m_capacity(capacity) {}

    /// A new session for the token named `token_name`: the cookie value to hand out.
    std::string create(const std::string& token_name);
    /// The live session whose cookie value is `id`; nullopt for an unknown or expired one.
    std::optional<UiSession> find(std::string_view id);
    /// Ends the session `id` (sign-out); unknown ids are ignored.
    void remove(std::string_view id);
    /// The lifetime given to new sessions (the cookie's Max-Age).
    std::chrono::seconds ttl() const { return m_ttl; }

  private:
    std::chrono::seconds m_ttl;
    std::size_t m_capacity;
    std::mutex m_mu;
    std::map<std::string, UiSession> m_by_digest;
};

}  // namespace crcrd::admin
