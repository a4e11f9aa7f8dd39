#pragma once
// The admin API's run actions that create runs (docs/operations.md): a manual run of chosen
// tiers on a SHA, and the retry of a finished run. Both run inside the writer's transaction.

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "crcrd/core/result.hpp"
#include "crcrd/store/fwd.hpp"

namespace crcrd::admin {

/// Queues a manual run on `sha` (40 hex, any case) of `tiers` (empty: every tier), asked for
/// by `who`. `known_tiers` are the rules file's tiers, in order: an unknown one is refused
/// (code "bad_request"), as is a bad SHA. Returns {"run_id", "sha", "tiers"}. Inside a writer item.
Result<nlohmann::json> create_manual_run(store::Db& db, const nlohmann::json& body,
                                         const std::vector<std::string>& known_tiers,
                                         const std::string& who);

/// Queues a new run like finished run `id` (same event, SHA, PR, refs and selection inputs),
/// asked for by `who`. Codes: "not_found"; "conflict" while `id` is still queued or running.
/// Returns {"run_id", "retry_of"}. Inside a writer item.
Result<nlohmann::json> retry_run(store::Db& db, std::int64_t id, const std::string& who);

}  // namespace crcrd::admin
