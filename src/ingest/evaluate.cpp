// The pure part of the webhook (docs/ingest.md): what a request is, decided without
// storing anything. The fuzz target fuzz/fuzz_http_request.cpp calls it with arbitrary bytes.
#include <nlohmann/json.hpp>

#include <chrono>

#include "crcrd/core/compress.hpp"
#include "crcrd/core/time.hpp"
#include "crcrd/ingest/event.hpp"
#include "crcrd/ingest/trust.hpp"
#include "crcrd/ingest/webhook.hpp"

namespace crcrd::ingest {

using nlohmann::json;
using store::Verdict;

namespace {

bool is_json_content_type(std::string_view ct) {
    auto semi = ct.find(';');
    std::string_view media = ct.substr(0, semi);
    while (!media.empty() && media.back() == ' ') media.remove_suffix(1);
    std::string lower(media);
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return lower == "application/json" ||
           (lower.rfind("application/", 0) == 0 && lower.size() > 5 &&
            lower.compare(lower.size() - 5, 5, "+json") == 0);
}

/// The run's concurrency group under the configured key for its event (docs/execution.md).
std::string group_of(const Event& e, const std::map<std::string, std::string>& keys) {
    if (!e.event) return {};
    auto it = keys.find(std::string(to_string(*e.event)));
    std::string key = it == keys.end() ? "none" : it->second;
    if (key == "pr" && e.pr) return "pr:" + std::to_string(*e.pr);
    if (key == "branch" && !e.ref.empty()) return "branch:" + e.ref;
    return {};
}

store::NewRun to_run(const Event& e, const std::string& delivery_id) {
    store::NewRun r;
    r.event = e.event.value();  // every form that queues a run names its event
    r.action = e.action;
    r.sha = e.sha;
    r.pr = e.pr;
    r.ref = e.ref;
    r.base_ref = e.base_ref;
    r.base_sha = e.base_sha;
    r.head_repo = e.head_repo;
    r.labels_json = json(e.labels).dump();
    r.delivery_id = e.crcr_delivery_id.value_or(delivery_id);
    json inputs = {{"form", e.form}};
    if (e.changed_files) inputs["changed_files"] = *e.changed_files;
    if (e.push_files) {
        inputs["push_files"] = *e.push_files;
        inputs["push_commit_count"] = e.push_commit_count;
    }
    if (e.upstream_repo) inputs["upstream_repo"] = *e.upstream_repo;
    r.inputs_json = inputs.dump();
    return r;
}

/// Header values end up in the log and the database: keep them printable and short.
std::string clean_header(std::optional<std::string_view> v) {
    std::string out(v.value_or("").substr(0, 200));
    for (char& c : out) {
        if (!std::isalnum(static_cast<unsigned char>(c)) &&
            std::string_view("-_.:").find(c) == std::string_view::npos)
            c = '?';
    }
    return out;
}

http::Response error(int status, const std::string& code, const std::string& detail = {}) {
    return http::Response::error(status, code, detail);
}

/// The signature check of the request's scheme: the matching key's id, or why not.
Result<std::string> verify_signature(const http::Request& req, bool standard, const Policy& pol,
                                     std::int64_t now_unix) {
    return standard
               ? verify_standard(
                     req.header("webhook-id").value_or(""),
                     req.header("webhook-timestamp").value_or(""),
                     req.header("webhook-signature").value_or(""), req.body, pol.keys.standard,
                     now_unix,
                     std::chrono::duration_cast<std::chrono::seconds>(pol.ingest.max_clock_skew))
               : verify_github(req.header("X-Hub-Signature-256").value_or(""), req.body,
                               pol.keys.github);
}

/// Runs the checks in order; the first that fails sets out.rejection (status 0: none did) and
/// the delivery's reason. An event that passes them is out.event.
void check_request(const http::Request& req, const Policy& pol, bool standard,
                   std::int64_t now_unix, Evaluation& out) {
    auto& d = out.delivery;
    auto& res = out.rejection;
    auto& event = out.event;
    // Each check either leaves `res` unset (status 0) or rejects: the answer and the reason
    // the delivery log keeps are set together.
    res.status = 0;
    auto reject = [&](int status, const std::string& code, const std::string& detail = {}) {
        res = error(status, code, detail);
        d->reason = detail.empty() ? code : detail;
    };
    if (req.refused_status != 0) {
        // Refused by the server before the request was complete (docs/ingest.md): 413, 431.
        reject(req.refused_status,
               req.refused_status == 413 ? "payload_too_large" : "headers_too_large");
        res.close = true;
    } else if (req.method != "POST") {
        reject(405, "method_not_allowed", "use POST");
        res.headers.emplace_back("Allow", "POST");
    } else if (!is_json_content_type(req.header("Content-Type").value_or(""))) {
        reject(415, "unsupported_media_type");
    } else {
        Result<std::string> verified = verify_signature(req, standard, pol, now_unix);
        if (!verified) {
            reject(401, "unauthorized", verified.error().message);
        } else if (d->delivery_id.empty()) {
            reject(400, "bad_request", "missing X-GitHub-Delivery");
        } else {
            if (auto ev = normalize(d->event, req.body); !ev) {
                const bool sha = ev.error().code == Errc::invalid_sha;
                reject(sha ? 422 : 400, sha ? "invalid_sha" : "bad_request", ev.error().message);
            } else {
                event = std::move(*ev);
                d->crcr_delivery_id = event->crcr_delivery_id;
                if (d->event.empty()) d->event = event_type(*event);
                auto trust = decide(*event, pol.trust);
                if (trust.action == TrustDecision::Action::forbid) {
                    reject(403, "forbidden", trust.reason);
                } else if (trust.action == TrustDecision::Action::ignore) {
                    event->intent = Intent::ignore;
                    event->reason = trust.reason;
                }
            }
        }
    }
}

/// The verdict, answer and run (or cancellation) of a delivery that passed every check.
void accept_delivery(store::Delivery& d, const Event& event, const Policy& pol,
                     const std::string& body) {
    // Compressed here, on a network thread, so the single writer only writes.
    d.body_size = body.size();
    d.body = compress(body);
    switch (event.intent) {
        case Intent::run:
            d.intended = Verdict::queued;
            d.http_status = 202;
            d.run = to_run(event, d.delivery_id);
            d.run->concurrency_group = group_of(event, pol.concurrency);
            break;
        case Intent::ignore:
            d.intended = Verdict::ignored;
            d.http_status = 200;
            d.reason = event.reason;
            break;
        case Intent::cancel_pr:
            d.intended = Verdict::cancelled;
            d.http_status = 200;
            d.cancel_pr = event.pr;
            // A form without a signed id may be a replay: it cancels nothing pushed after
            // its head (docs/ingest.md). A CRCR delivery is deduplicated by its signed id
            // instead.
            if (!event.crcr_delivery_id && !event.sha.empty()) d.cancel_sha = event.sha;
            d.reason = "PR closed";
            if (pol.post_merge && event.merge_commit_sha) {
                // selection.post_merge: the merge commit is tested on its branch, like a push.
                Event merged = event;
                merged.event = RunEvent::push;
                merged.sha = *event.merge_commit_sha;
                merged.ref = event.base_ref.empty() ? "" : "refs/heads/" + event.base_ref;
                d.run = to_run(merged, d.delivery_id);
                d.run->concurrency_group = group_of(merged, pol.concurrency);
                d.reason = "PR merged: post-merge run on " + merged.sha;
            }
            break;
        case Intent::ping:
            d.intended = Verdict::pong;
            d.http_status = 200;
            break;
    }
}

}  // namespace

Evaluation evaluate(const http::Request& req, const Policy& policy, std::int64_t now_unix) {
    Evaluation out;
    out.delivery = std::make_shared<store::Delivery>();
    auto& d = out.delivery;
    d->received_at = now_rfc3339();
    d->remote = req.remote;
    d->event = clean_header(req.header("X-GitHub-Event"));
    const bool standard =
        req.header("webhook-signature").has_value() || req.header("webhook-id").has_value();
    d->scheme = standard ? "standard-webhooks" : "github";
    d->delivery_id =
        clean_header(standard ? req.header("webhook-id") : req.header("X-GitHub-Delivery"));

    check_request(req, policy, standard, now_unix, out);

    if (out.rejection.status != 0) {
        d->intended = Verdict::rejected;
        d->http_status = out.rejection.status;
    } else {
        accept_delivery(*d, *out.event, policy, req.body);
    }
    return out;
}

}  // namespace crcrd::ingest
