#pragma once
// Admin-internal: the dashboard under /ui/ (docs/operations.md, docs/dashboard.md). Server-rendered
// HTML over the admin API's own handlers: a page asks the same handler a JSON client would,
// then renders its answer (ui_pages.cpp). Reading needs a signed-in session (the login form
// turns a valid token into an HttpOnly, Secure, SameSite=Strict cookie), a bearer token, or
// admin.ui_public; the write forms (cancel, retry, drain, evict) need a session of an admin
// token and its CSRF token.

#include <boost/asio/awaitable.hpp>

#include <mutex>
#include <string>
#include <vector>

#include "crcrd/config/config.hpp"
#include "crcrd/http/message.hpp"
#include "routes.hpp"
#include "ui_pages.hpp"
#include "ui_sessions.hpp"

namespace crcrd::admin {

class Dashboard {
  public:
    struct Settings {
        bool ui_public = false;  // admin.ui_public: pages readable without a token
        ui::Links links;         // the upstream's commit and PR pages
    };
    /// Replaces the settings for requests that start afterwards (SIGHUP).
    void configure(Settings s);

    /// True for the paths the dashboard answers: /ui and everything under /ui/.
    static bool owns(const std::string& path) {
        return path == "/ui" || path.rfind("/ui/", 0) == 0;
    }

    /// One request under /ui. `tokens` are the admin API's current tokens (a session whose
    /// token is no longer configured is signed out). Always an answer, never an exception.
    boost::asio::awaitable<http::Response> handle(Context& ctx, http::Request& req,
                                                  const std::vector<config::AdminToken>& tokens);

  private:
    Settings settings() const;

    mutable std::mutex m_mu;
    Settings m_settings;
    UiSessions m_sessions;
};

}  // namespace crcrd::admin
