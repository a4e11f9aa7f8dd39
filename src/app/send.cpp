#include "crcrd/app/send.hpp"

#include <nlohmann/json.hpp>

#include <chrono>
#include <ostream>

#include "crcrd/app/admin_cli.hpp"
#include "crcrd/core/crypto.hpp"
#include "crcrd/core/files.hpp"
#include "crcrd/http/client.hpp"
#include "crcrd/ingest/signature.hpp"

namespace crcrd::app {

std::string guess_event(const std::string& body) {
    auto j = nlohmann::json::parse(body, nullptr, false);
    if (!j.is_object()) return "repository_dispatch";
    if (j.contains("zen") && j.contains("hook_id")) return "ping";
    if (j.contains("client_payload")) return "repository_dispatch";
    if (j.contains("pull_request")) return "pull_request";
    if (j.contains("ref") && j.contains("after")) return "push";
    return "repository_dispatch";
}

int send_event(const SendOptions& opts, std::ostream& out, std::ostream& err) {
    auto body = read_file(opts.event_file);
    if (!body) {
        err << "crcrctl send: " << body.error().message << "\n";
        return 2;
    }
    auto secret = read_file(opts.secret_file, 64 * 1024);
    if (!secret) {
        err << "crcrctl send: " << secret.error().message << "\n";
        return 2;
    }
    std::string key = trim(std::move(*secret));
    std::string id = opts.delivery_id.value_or(crypto::random_uuid());
    http::Headers headers = {{"Content-Type", "application/json"}};
    if (opts.scheme == "github") {
        headers.emplace_back("X-GitHub-Event", opts.event.value_or(guess_event(*body)));
        headers.emplace_back("X-GitHub-Delivery", id);
        headers.emplace_back("X-Hub-Signature-256", ingest::sign_github(key, *body));
    } else if (opts.scheme == "standard-webhooks") {
        auto raw = ingest::decode_whsec(key);
        if (!raw) {
            err << "crcrctl send: " << opts.secret_file.string() << ": " << raw.error().message
                << "\n";
            return 2;
        }
        auto now = std::chrono::duration_cast<std::chrono::seconds>(
                       std::chrono::system_clock::now().time_since_epoch())
                       .count();
        headers.emplace_back("webhook-id", id);
        headers.emplace_back("webhook-timestamp", std::to_string(now));
        headers.emplace_back("webhook-signature", ingest::sign_standard(*raw, id, now, *body));
        if (opts.event) headers.emplace_back("X-GitHub-Event", *opts.event);
    } else {
        err << "crcrctl send: --scheme must be github or standard-webhooks\n";
        return 2;
    }
    http::ClientOptions copts;
    copts.ca_file = opts.cacert;
    auto res = http::send("POST", endpoint(opts.url, "/webhook"), headers, *body, copts);
    if (!res) {
        err << "crcrctl send: " << res.error().message << "\n";
        return exit_code_of_error(res.error().code);
    }
    // The answer is printed whatever it is: crcrd's verdict is what the operator came for.
    out << "HTTP " << res->status << " (delivery " << id << ")\n" << res->body << "\n";
    return exit_code_of_status(res->status);
}

}  // namespace crcrd::app
