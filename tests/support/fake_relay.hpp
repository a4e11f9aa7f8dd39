#pragma once
// A stand-in for PyTorch's Cross-Repository CI Relay callback endpoint and the HUD behind it,
// enforcing what the real ones enforce (pytorch/test-infra aws/lambda/cross_repo_ci_relay/
// callback/callback_handler.py, utils/redis_helper.py set_callback_state, torchci/lib/crcr/
// crcrUtils.ts): the exact path, a bearer token, the 2 MB body limit, the required fields of
// the relay and of HUD, a dispatch record per delivery, the state machine keyed by delivery,
// repository, run, attempt and job name (in_progress once, then completed once), the same
// generic 400 for every refused transition, GitHub's conclusion vocabulary, and a rate limit
// per 60 s that counts refused requests too and answers 429 without Retry-After.

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "support/fake_github.hpp"

namespace crcrd {

class FakeRelay {
  public:
    explicit FakeRelay(std::string repo = "torch-spyre/torch-spyre");

    /// https://127.0.0.1:PORT/github/callback
    std::string url() const;
    /// The relay dispatched this delivery (its DISPATCHED record exists).
    void dispatched(const std::string& delivery_id);
    /// Tokens accepted from now on (the others are "Invalid authorization token"). By default
    /// any token made by the tests' minting helper ("relay-oidc-token-<n>") is accepted.
    void accept_tokens(std::set<std::string> tokens);
    /// At most `n` requests per `window` (the relay's is 60 s; default: no limit), refused
    /// requests counted too; `retry_after` adds that header (the real relay sends none).
    void rate_limit(int n, std::optional<int> retry_after = std::nullopt,
                    std::chrono::seconds window = std::chrono::seconds(60));
    /// The next `n` callbacks that the relay accepts are stored and then answered 500, as
    /// the real relay does when HUD fails after the state was written.
    void fail_after_storing(int n);
    /// The next `n` callbacks that the relay accepts are stored and then not answered at all:
    /// the connection is closed, as when the answer is lost on its way back. Before
    /// fail_after_storing's failures when both are set.
    void lose_answers(int n);
    /// `fn` runs once, on the relay's thread, right after the next callback is stored and before
    /// it is answered (a test kills crcrd there: a crash between a request and its answer).
    void on_accepted(std::function<void()> fn);

    struct Exchange {
        nlohmann::json body;  // as received (null when not JSON)
        std::string authorization;
        int status = 0;      // the answer; 0 for none (lose_answers)
        std::string detail;  // the answer's detail, or its status for a 200
    };
    std::vector<Exchange> exchanges() const;
    /// The callbacks the relay accepted (stored in its state), in order.
    std::vector<nlohmann::json> accepted() const;

  private:
    http::Response handle(const http::Request& req);
    http::Response answer(int status, const std::string& detail);

    std::string m_repo;
    mutable std::mutex m_mu;
    std::set<std::string> m_dispatched;
    std::set<std::string> m_tokens;              // empty: any "relay-oidc-token-<n>"
    std::map<std::string, std::string> m_state;  // key -> IN_PROGRESS | COMPLETED
    std::vector<std::chrono::steady_clock::time_point> m_window;
    int m_rate_limit = 0;
    std::chrono::seconds m_window_length{60};
    std::optional<int> m_retry_after;
    int m_fail_after_storing = 0;
    int m_lose_answers = 0;
    std::function<void()> m_on_accepted;
    std::vector<Exchange> m_exchanges;
    std::vector<nlohmann::json> m_accepted;
    std::unique_ptr<FakeGithub> m_server;  // last: it calls handle() until destroyed
};

}  // namespace crcrd
