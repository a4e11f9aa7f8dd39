#pragma once
// Log lines for rejected requests (docs/ingest.md, docs/operations.md): the first rejection from an
// address in a minute is logged in full, the rest are counted and logged as one summary line when
// the minute ends, so a flood from one client cannot become a flood of log lines. The webhook's
// rejections and the admin API's failed authentications each keep one.

#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace crcrd::http {

class RejectLog {
  public:
    using Clock = std::chrono::steady_clock;
    /// `what` names the rejections in the summary lines ("rejected requests").
    explicit RejectLog(std::chrono::seconds window = std::chrono::seconds(60),
                       std::size_t max_addresses = 10'000, std::string what = "rejected requests")
        : m_window(window), m_max_addresses(max_addresses), m_what(std::move(what)) {}

    /// Counts a rejection from `address` (an IP, without port) answered with `status`.
    /// True when it is to be logged in full now; false when it only counts toward the summary.
    bool admit(const std::string& address, int status, Clock::time_point now = Clock::now());

    /// The summary lines of windows that ended before `now` (and forgets them): one per
    /// address that had rejections beyond the first, e.g. "rejected requests from 10.0.0.7:
    /// 1532 more in the last minute not logged one by one (401 x1530, 413 x2)".
    std::vector<std::string> flush(Clock::time_point now = Clock::now());

  private:
    struct Window {
        Clock::time_point start;
        std::uint64_t suppressed = 0;
        std::map<int, std::uint64_t> by_status;
    };
    std::string summary(const std::string& address, const Window& w) const;

    std::chrono::seconds m_window;
    std::size_t m_max_addresses;
    std::string m_what;
    std::mutex m_mu;
    std::map<std::string, Window> m_windows;
};

/// The address part of "ip:port" or "[v6]:port" (as the server reports a peer).
std::string address_of(const std::string& remote);

}  // namespace crcrd::http
