#pragma once
// Normalisation of every accepted delivery form (docs/ingest.md) into one Event.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "crcrd/core/result.hpp"
#include "crcrd/core/vocab.hpp"

namespace crcrd::ingest {

/// What a delivery asks for.
enum class Intent {
    run,        // queue a run of `sha`
    ignore,     // valid, nothing to do (`reason` says why)
    cancel_pr,  // PR closed: cancel its queued and running work
    ping,       // GitHub's webhook ping
};

/// One delivery, whatever its form. Strings are empty and optionals unset when the form does
/// not carry the field.
struct Event {
    Intent intent = Intent::ignore;
    std::string reason;  // for ignore
    std::string form;    // "crcr-v1" | "pytorch-pr-trigger" | "pytorch-crcr" | "github" | "ping"
    std::optional<RunEvent> event;  // pull_request or push: the upstream event; unset: none
    std::string action;  // upstream action ("synchronize", "closed", ...) or dispatch action
    std::string sha;     // pinned: 40 lower-case hex, never all zeros (for run)
    std::optional<std::int64_t> pr;
    std::string ref;  // "refs/heads/main", "refs/pull/2/head", ...
    std::string base_ref;
    std::string base_sha;                         // 40 lower-case hex or empty
    std::optional<std::string> merge_commit_sha;  // a closed PR's, when it was merged
    std::optional<std::string> upstream_repo;     // the PyTorch repo named in the payload
    std::optional<std::string> head_repo;         // a PR's head repo (fork when != upstream)
    std::vector<std::string> labels;
    std::optional<std::string> downstream_repo;   // repository.full_name of a dispatch webhook
    std::optional<std::string> sender;            // sender.login of a dispatch webhook
    std::optional<std::string> crcr_delivery_id;  // client_payload.delivery_id
    std::optional<std::vector<std::string>> changed_files;  // payload-given changed paths
    std::optional<std::vector<std::string>> push_files;     // union of push commits' paths
    std::size_t push_commit_count = 0;
};

/// Parses and normalises a raw body (already authenticated). `github_event` is the
/// X-GitHub-Event header (empty for Standard Webhooks). Errors: "bad_request" (not JSON,
/// missing field, wrong type, unknown shape; the message names the field) and
/// "invalid_sha". Never trusts the payload: trust is checked separately.
Result<Event> normalize(std::string_view github_event, std::string_view body);

}  // namespace crcrd::ingest
