#pragma once
// A GitHub stand-in that rate-limits: every status POST is answered 403 "API rate limit
// exceeded" with Retry-After: 3600, so the daemon's GitHub lane makes one request and then pauses
// for an hour with its rows waiting. What a lane shows (GET /api/v1/outbox's "lanes", /metrics,
// `crcrctl outbox list`, /ui/deliveries) is tested on it.

#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "support/certs.hpp"
#include "support/recording_github.hpp"
#include "support/temp_dir.hpp"

namespace crcrd {

class PausingGithub {
  public:
    PausingGithub() {
        m_gh.set([](const http::Request& req) {
            if (req.method != "POST") return http::Response::json(200, nlohmann::json::array());
            auto r = http::Response::json(
                403, {{"message", "API rate limit exceeded for installation ID 1."}});
            r.headers.emplace_back("Retry-After", "3600");
            return r;
        });
    }
    /// report.github's mapping (flow style) for this stand-in with the budget `budget`; writes
    /// its token to `dir`/secrets/gh.token.
    std::string report_yaml(const std::filesystem::path& dir,
                            const std::string& budget =
                                "[{requests: 80, per: 1m}, "
                                "{requests: 500, per: 1h}]") const {
        write_file(dir / "secrets" / "gh.token", "gh-token-1\n", 0600);
        return "{api_url: \"" + m_gh.url() +
               "\", repo: pytorch/pytorch, ca_file: " + test_certs().ca.string() +
               ", token_file: " + (dir / "secrets" / "gh.token").string() +
               ", context_prefix: crcr/spyre, budget: " + budget + "}";
    }
    /// The status POSTs answered so far.
    std::size_t posts() { return m_gh.statuses().size(); }

  private:
    RecordingGithub m_gh;
};

}  // namespace crcrd
