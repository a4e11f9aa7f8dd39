#pragma once
// Recording a webhook delivery and its effect (a new run, cancelled runs, or nothing) in one
// step of the writer's transaction, with idempotency on transport and CRCR delivery ids.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "crcrd/core/time.hpp"
#include "crcrd/core/vocab.hpp"
#include "crcrd/store/fwd.hpp"

namespace crcrd::store {

/// What ingest decided about a delivery: the one enum of core/vocab.hpp.
using Verdict = crcrd::Verdict;

/// The verdict's name as deliveries.verdict stores it (core/vocab.hpp's to_string, as a string).
std::string to_string(Verdict v);

/// A run to create, already pinned and trusted.
struct NewRun {
    RunEvent event = RunEvent::pull_request;
    std::string action;
    std::string sha;  // 40 lower-case hex
    std::optional<std::int64_t> pr;
    std::string ref;
    std::string base_ref;
    std::string base_sha;
    std::optional<std::string> head_repo;
    std::string labels_json = "[]";
    std::string delivery_id;
    std::string inputs_json = "{}";  // what selection needs later: changed files, push commits
    /// Runs of the same group with another SHA that are still queued or running are
    /// cancelled as "superseded by <sha>" (docs/execution.md), but only when the group has never
    /// seen this SHA: a replayed old delivery never moves a PR backwards (docs/ingest.md). Empty:
    /// no group.
    std::string concurrency_group;
};

/// One incoming request and what ingest decided about it.
struct Delivery {
    std::string delivery_id;  // X-GitHub-Delivery or webhook-id (may be empty when rejected)
    std::optional<std::string> crcr_delivery_id;
    std::string received_at;
    std::string scheme;  // github | standard-webhooks | none
    std::string event;
    std::string remote;
    Verdict intended = Verdict::rejected;  // queued, ignored, cancelled, pong or rejected
    int http_status = 400;
    std::string reason;
    std::string body;                       // zstd-compressed; stored only when not rejected
    std::size_t body_size = 0;              // size before compression
    std::optional<NewRun> run;              // with queued
    std::optional<std::int64_t> cancel_pr;  // with cancelled
    /// The closed PR's head SHA: when a run of the PR has it, only runs up to the newest of
    /// those are cancelled (a replayed `closed` does not cancel work on newer pushes).
    std::optional<std::string> cancel_sha;
};

/// What was stored; `verdict` is duplicate when a key was seen before.
struct Outcome {
    Verdict verdict = Verdict::rejected;
    int http_status = 400;
    std::optional<std::int64_t> run_id;
    std::vector<std::int64_t> run_ids;     // cancelled by a PR close
    std::vector<std::int64_t> superseded;  // cancelled by the new run
};

/// Inserts a queued run (for triggers other than a delivery: schedule, manual) and returns
/// its id. Throws SqlError.
std::int64_t insert_run(Db& db, const NewRun& r, SystemTime now);

/// Applies `d` on `db` (inside the caller's transaction). Throws SqlError on storage failure,
/// leaving the caller to roll back. Rejected deliveries leave one row without a body and no
/// keys; accepted ones store their body and claim their idempotency keys.
Outcome record_delivery(Db& db, const Delivery& d);

}  // namespace crcrd::store
