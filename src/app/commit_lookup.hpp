#pragma once
// App-internal: the upstream commits' subjects, authors and times for the trunk grid
// (docs/dashboard.md), read from the mirror with one git call per page and remembered (a
// commit's message never changes).

#include <nlohmann/json.hpp>

#include <functional>
#include <string>
#include <vector>

#include "crcrd/config/config.hpp"

namespace crcrd::app {

/// A lookup for admin::Api::set_trunk: {sha: {subject, author, committed_at}} for each of the
/// SHAs the mirror of `up` has (one `git log --no-walk` for those not remembered yet, at most 5
/// seconds; none without a mirror); the others, and every SHA when git fails, are left out, and
/// a SHA the mirror lacked is not asked for again for 5 minutes. Blocking; safe to call from
/// several threads. Remembers up to 20,000 commits, then starts again.
std::function<nlohmann::json(const std::vector<std::string>&)> commit_lookup(
    config::UpstreamConfig up);

}  // namespace crcrd::app
