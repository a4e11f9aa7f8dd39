#pragma once
// App-internal: the upstream commits' subjects, authors and times for the trunk grid
// (docs/dashboard.md), read from the mirror with one git call per page and remembered (a
// commit's message never changes) across configuration reloads.

#include <nlohmann/json.hpp>

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "crcrd/config/config.hpp"

namespace crcrd::app {

/// One daemon's commit lookup for admin::Api::set_trunk. Safe to call from several threads.
class CommitLookup {
  public:
    /// Reads {sha: {subject, author, committed_at}} of those of `shas` the mirror of `up` has;
    /// an empty object when git fails. Blocking.
    using Reader = std::function<nlohmann::json(const config::UpstreamConfig&,
                                                const std::vector<std::string>&)>;

    /// `read` is `git log --no-walk` in the mirror (at most 5 seconds) unless a test gives one.
    explicit CommitLookup(Reader read = nullptr);

    /// The mirror to ask from now on (at start and at every reload). What is remembered stays
    /// (a SHA names the same commit in any mirror); the SHAs a former mirror lacked are asked
    /// again.
    void set_upstream(config::UpstreamConfig up);

    /// {sha: {subject, author, committed_at}} for each of `shas` known: remembered, or read by
    /// one call of the reader for those not remembered yet (none without a mirror). A SHA
    /// another caller is reading now is not read again: this call waits for that read at most
    /// 250 ms, then answers without it, so a slow mirror holds one admin reader thread, not
    /// every one. A SHA the mirror lacked is not asked for again for 5 minutes. Text that is not
    /// UTF-8 has its invalid bytes replaced by U+FFFD. Remembers up to 20,000 commits, then
    /// starts again. Blocking.
    nlohmann::json lookup(const std::vector<std::string>& shas);

  private:
    Reader m_read;
    std::mutex m_mu;
    std::condition_variable m_read_done;
    config::UpstreamConfig m_up;
    std::map<std::string, nlohmann::json> m_commits;
    std::map<std::string, std::chrono::steady_clock::time_point> m_missed;  // sha → when
    std::set<std::string> m_in_flight;  // SHAs a caller is reading now
};

}  // namespace crcrd::app
