#pragma once
// `crcrctl send`: sign an event file like GitHub or a Standard Webhooks relay would, post
// it, and print the answer. What operators use to replay a delivery.

#include <filesystem>
#include <iosfwd>
#include <optional>
#include <string>

namespace crcrd::app {

struct SendOptions {
    std::string scheme = "github";  // github | standard-webhooks
    std::filesystem::path secret_file;
    std::string url =
        "https://127.0.0.1:8443";  // the daemon's base URL; posts to <url>/webhook (endpoint())
    std::optional<std::filesystem::path> cacert;
    std::filesystem::path event_file;
    std::optional<std::string> event;        // X-GitHub-Event; guessed from the body when absent
    std::optional<std::string> delivery_id;  // X-GitHub-Delivery / webhook-id; random when absent
};

/// The X-GitHub-Event a body most likely came with: ping, pull_request, push, or
/// repository_dispatch (anything with client_payload, and the default).
std::string guess_event(const std::string& body);

/// Signs and posts; prints "HTTP <status>" and the body to `out`, problems to `err`.
/// Returns crcrctl's exit code (admin_cli.hpp): 0 on a 2xx answer, 4 on 401/403 (a wrong
/// secret), 5 on 404, 1 on another answer (the body was refused), 3 when the daemon cannot be
/// reached or TLS fails, 2 on bad arguments or unreadable files.
int send_event(const SendOptions& opts, std::ostream& out, std::ostream& err);

}  // namespace crcrd::app
