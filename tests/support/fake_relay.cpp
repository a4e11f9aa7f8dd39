#include "support/fake_relay.hpp"

namespace crcrd {

using nlohmann::json;

namespace {

/// int(value) as Python does it for the relay's run_id / run_attempt: an int, or a string of
/// digits; anything else fails (the real relay then answers 500 or 400).
std::optional<long long> as_int(const json& v) {
    if (v.is_number_integer()) return v.get<long long>();
    if (v.is_string()) {
        const auto& s = v.get_ref<const std::string&>();
        if (s.empty() || s.size() > 18 || s.find_first_not_of("0123456789") != std::string::npos)
            return std::nullopt;
        return std::stoll(s);
    }
    return std::nullopt;
}

}  // namespace

FakeRelay::FakeRelay(std::string repo)
    : m_repo(std::move(repo)),
      m_server(std::make_unique<FakeGithub>(
          [this](const http::Request& req) { return handle(req); }, 2ULL << 20)) {}

std::string FakeRelay::url() const {
    return m_server->url() + "/github/callback";
}

void FakeRelay::dispatched(const std::string& delivery_id) {
    std::lock_guard lk(m_mu);
    m_dispatched.insert(delivery_id);
}

void FakeRelay::accept_tokens(std::set<std::string> tokens) {
    std::lock_guard lk(m_mu);
    m_tokens = std::move(tokens);
}

void FakeRelay::rate_limit(int n, std::optional<int> retry_after, std::chrono::seconds window) {
    std::lock_guard lk(m_mu);
    m_rate_limit = n;
    m_retry_after = retry_after;
    m_window_length = window;
}

void FakeRelay::fail_after_storing(int n) {
    std::lock_guard lk(m_mu);
    m_fail_after_storing = n;
}

void FakeRelay::lose_answers(int n) {
    std::lock_guard lk(m_mu);
    m_lose_answers = n;
}

void FakeRelay::on_accepted(std::function<void()> fn) {
    std::lock_guard lk(m_mu);
    m_on_accepted = std::move(fn);
}

std::vector<FakeRelay::Exchange> FakeRelay::exchanges() const {
    std::lock_guard lk(m_mu);
    return m_exchanges;
}

std::vector<json> FakeRelay::accepted() const {
    std::lock_guard lk(m_mu);
    return m_accepted;
}

http::Response FakeRelay::answer(int status, const std::string& detail) {
    return http::Response::json(status, {{"detail", detail}});
}

http::Response FakeRelay::handle(const http::Request& req) {
    std::lock_guard lk(m_mu);
    Exchange ex;
    ex.body = json::parse(req.body, nullptr, false);
    ex.authorization = std::string(req.header("Authorization").value_or(""));
    auto done = [&](http::Response r) {
        ex.status = r.status;
        auto b = json::parse(r.body, nullptr, false);
        ex.detail = b.is_object() && b.contains("detail") ? b["detail"].dump() : r.body;
        m_exchanges.push_back(ex);
        return r;
    };
    // lambda_function.py: the route, then the body, then the token.
    if (req.path != "/github/callback") return done(answer(404, "Not found"));
    if (req.method != "POST") return done(answer(405, "Method not allowed"));
    if (req.refused_status == 413)
        return done(answer(413, "HUD rejected callback: HTTP 413: Payload Too Large"));
    json body = req.body.empty() ? json::object() : json::parse(req.body, nullptr, false);
    if (body.is_discarded()) return done(answer(400, "Invalid JSON body"));
    std::string auth = ex.authorization;
    if (auth.rfind("Bearer ", 0) == 0) auth = auth.substr(7);
    if (auth.empty()) return done(answer(401, "Missing authorization token"));
    const bool known =
        m_tokens.empty() ? auth.rfind("relay-oidc-token-", 0) == 0 : m_tokens.count(auth) > 0;
    if (!known) return done(answer(401, "Invalid authorization token"));
    // Rate limit per repository over 60 s; the request is counted before the check.
    const auto now = std::chrono::steady_clock::now();
    m_window.push_back(now);
    while (!m_window.empty() && now - m_window.front() > m_window_length)
        m_window.erase(m_window.begin());
    if (m_rate_limit > 0 && static_cast<int>(m_window.size()) > m_rate_limit) {
        auto r = answer(429, "rate limit exceeded for " + m_repo);
        if (m_retry_after) r.headers.emplace_back("Retry-After", std::to_string(*m_retry_after));
        return done(r);
    }
    if (!body.is_object()) return done(answer(500, "Internal server error"));
    // _parse_callback_body
    if (!body.contains("delivery_id"))
        return done(answer(400, "callback body missing required field: 'delivery_id'"));
    if (!body.contains("workflow") || !body["workflow"].is_object()) {
        return done(answer(400, "callback body missing required field: 'workflow'"));
    }
    const json& wf = body["workflow"];
    const std::string event_type = body.value("event_type", "");
    const bool nightly = event_type == "nightly" || event_type == "periodic";
    for (const char* k : {"status", "run_id", "name"}) {
        if (!wf.contains(k))
            return done(
                answer(400, std::string("callback body missing required field: '") + k + "'"));
    }
    if (wf["run_id"].is_null())
        return done(answer(400, "callback body missing required field: int() of None"));
    auto run_id = as_int(wf["run_id"]);
    if (!run_id) return done(answer(500, "Internal server error"));
    if (*run_id == 0) return done(answer(400, "run_id 0 is reserved"));
    auto run_attempt =
        wf.contains("run_attempt") ? as_int(wf["run_attempt"]) : std::optional<long long>(1);
    if (!run_attempt) return done(answer(400, "callback body missing required field: run_attempt"));
    const std::string status = wf["status"].is_string() ? wf["status"].get<std::string>() : "";
    if (nightly && status != "completed") {
        return done(answer(
            400, "nightly/periodic callbacks must have status 'completed', got '" + status + "'"));
    }
    const std::string delivery = body["delivery_id"].is_string()
                                     ? body["delivery_id"].get<std::string>()
                                     : body["delivery_id"].dump();
    if (!nightly) {
        if (!m_dispatched.count(delivery))
            return done(answer(400, "callback rejected: no matching dispatch record"));
        if (status != "in_progress" && status != "completed")
            return done(answer(400, "unknown callback status: '" + status + "'"));
        const std::string job = wf.contains("job_name") && wf["job_name"].is_string()
                                    ? wf["job_name"].get<std::string>()
                                    : "";
        const std::string key = delivery + ":" + m_repo + ":" + std::to_string(*run_id) + ":" +
                                std::to_string(*run_attempt) + (job.empty() ? "" : ":" + job);
        auto it = m_state.find(key);
        const bool ok = status == "in_progress"
                            ? it == m_state.end()
                            : (it != m_state.end() && it->second == "IN_PROGRESS");
        if (!ok) {
            return done(answer(400, "callback rejected: invalid state transition delivery_id=" +
                                        delivery + " repo=" + m_repo + " status=" + status));
        }
    }
    // HUD (crcrUtils.ts extractDynamoRecord), after the relay stored its state.
    auto hud_fail = [&]() -> std::optional<http::Response> {
        if (!wf.contains("job_name") || !wf["job_name"].is_string() ||
            wf["job_name"].get<std::string>().empty()) {
            return answer(400,
                          "HUD rejected callback: HTTP 400: Bad Request (Missing required field: "
                          "workflow.job_name)");
        }
        if (!wf.contains("check_run_id") || wf["check_run_id"].is_null()) {
            return answer(400,
                          "HUD rejected callback: HTTP 400: Bad Request (Missing required field: "
                          "workflow.check_run_id)");
        }
        static const std::set<std::string> k_conclusions = {"success",   "failure",   "neutral",
                                                            "cancelled", "timed_out", "skipped"};
        if (status == "completed" && (!wf.contains("conclusion") || !wf["conclusion"].is_string() ||
                                      !k_conclusions.count(wf["conclusion"].get<std::string>()))) {
            return answer(400, "HUD rejected callback: HTTP 400: Bad Request (conclusion " +
                                   (wf.contains("conclusion") ? wf["conclusion"].dump()
                                                              : std::string("missing")) +
                                   " is not GitHub's)");
        }
        if (status == "in_progress" &&
            (!wf.contains("started_at") || !wf["started_at"].is_string())) {
            return answer(400,
                          "HUD rejected callback: HTTP 400: Bad Request (no started_at: invisible "
                          "on the dashboards)");
        }
        return std::nullopt;
    };
    if (!nightly) {
        const std::string job = wf["job_name"].is_string() ? wf["job_name"].get<std::string>() : "";
        const std::string key = delivery + ":" + m_repo + ":" + std::to_string(*run_id) + ":" +
                                std::to_string(*run_attempt) + (job.empty() ? "" : ":" + job);
        m_state[key] = status == "in_progress" ? "IN_PROGRESS" : "COMPLETED";
    }
    if (auto bad = hud_fail()) return done(*bad);
    m_accepted.push_back(body);
    if (auto fn = std::exchange(m_on_accepted, nullptr)) fn();
    if (m_lose_answers > 0) {
        --m_lose_answers;
        ex.detail = "no answer: connection closed";
        m_exchanges.push_back(ex);
        http::Response lost;
        lost.drop = true;
        return lost;
    }
    if (m_fail_after_storing > 0) {
        --m_fail_after_storing;
        return done(
            answer(500,
                   "An internal failure occurred. Your update was not saved, but the CI run is "
                   "still valid. "
                   "You can attempt progressive retries after 1 seconds or ignore this failure."));
    }
    return done(http::Response::json(200, {{"ok", true}, {"status", status}}));
}

}  // namespace crcrd
