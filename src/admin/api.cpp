#include "crcrd/admin/api.hpp"

#include <spdlog/spdlog.h>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <nlohmann/json.hpp>

#include <map>
#include <regex>

#include "crcrd/admin/metrics.hpp"
#include "crcrd/http/reject_log.hpp"
#include "openapi.hpp"
#include "routes.hpp"
#include "ui.hpp"

namespace crcrd::admin {

namespace asio = boost::asio;
using nlohmann::json;

int status_of(const Error& e) {
    switch (e.code) {
        case Errc::bad_request:
            return 400;
        case Errc::unauthorized:
            return 401;
        case Errc::forbidden:
            return 403;
        case Errc::not_found:
            return 404;
        case Errc::method_not_allowed:
            return 405;
        case Errc::conflict:
            return 409;
        default:
            return 503;
    }
}

namespace {

/// The one error mapper of the admin API: a handler's error code to its status and JSON body.
/// Codes without a status of their own (storage, overloaded, ...) are 503 "unavailable".
http::Response error_response(const Error& e) {
    const int status = status_of(e);
    auto r = status == 503
                 ? http::Response::error(503, "unavailable", e.message)
                 : http::Response::error(status, std::string(to_string(e.code)), e.message);
    if (r.status == 401) r.headers.emplace_back("WWW-Authenticate", "Bearer");
    return r;
}

struct Route {
    const char* method;
    std::regex path;
    bool admin_only;
    Handler handler;
    std::vector<std::string_view> query;  // the query parameters it takes; any other is a 400
};

/// Every route under /api/v1 but /metrics: method, path, who may call it, its handler, and the
/// query parameters it takes.
const std::vector<Route>& routes() {
    static const std::vector<Route> k = {
        {"GET",
         std::regex(R"(^/api/v1/runs$)"),
         false,
         list_runs_route,
         {"state", "conclusion", "sha", "pr", "event", "since", "until", "limit", "cursor"}},
        {"POST", std::regex(R"(^/api/v1/runs$)"), true, create_run_route, {}},
        {"GET", std::regex(R"(^/api/v1/runs/([0-9]{1,18})$)"), false, get_run_route, {}},
        {"POST", std::regex(R"(^/api/v1/runs/([0-9]{1,18})/retry$)"), true, retry_run_route, {}},
        {"POST", std::regex(R"(^/api/v1/runs/([0-9]{1,18})/cancel$)"), true, cancel_run_route, {}},
        {"GET", std::regex(R"(^/api/v1/jobs/([0-9]{1,18})$)"), false, get_job_route, {}},
        {"GET",
         std::regex(R"(^/api/v1/jobs/([0-9]{1,18})/tests$)"),
         false,
         job_tests_route,
         {"outcome", "limit", "cursor"}},
        {"GET", std::regex(R"(^/api/v1/jobs/([0-9]{1,18})/log$)"), false, job_log_route, {"tail"}},
        {"GET", std::regex(R"(^/api/v1/runners$)"), false, list_runners_route, {}},
        {"POST",
         std::regex(R"(^/api/v1/runners/([A-Za-z0-9._-]{1,100})/(drain|undrain)$)"),
         true,
         drain_runner_route,
         {}},
        {"GET",
         std::regex(R"(^/api/v1/deliveries$)"),
         false,
         list_deliveries_route,
         {"verdict", "limit", "cursor"}},
        {"GET",
         std::regex(R"(^/api/v1/outbox$)"),
         false,
         list_outbox_route,
         {"state", "sink", "run_id", "limit", "cursor"}},
        {"POST",
         std::regex(R"(^/api/v1/outbox/([0-9]{1,18})/retry$)"),
         true,
         retry_outbox_route,
         {}},
        {"GET", std::regex(R"(^/api/v1/recovery$)"), false, list_recovery_route, {}},
        {"POST", std::regex(R"(^/api/v1/recovery/run$)"), true, run_recovery_route, {}},
        {"GET",
         std::regex(R"(^/api/v1/selection-misses$)"),
         false,
         list_selection_misses_route,
         {"run_id", "test", "limit", "cursor"}},
        {"GET",
         std::regex(R"(^/api/v1/builds$)"),
         false,
         list_builds_route,
         {"state", "sha", "limit", "cursor"}},
        {"GET", std::regex(R"(^/api/v1/builds/([0-9]{1,18})$)"), false, get_build_route, {}},
        {"POST",
         std::regex(R"(^/api/v1/builds/([0-9]{1,18})/evict$)"),
         true,
         evict_build_route,
         {}},
        {"GET", std::regex(R"(^/api/v1/trunk$)"), false, trunk_route, {"ref", "limit", "cursor"}},
        {"GET",
         std::regex(R"(^/api/v1/tests/([^/]{1,1000})/history$)"),
         false,
         test_history_route,
         {"limit"}},
        {"GET", std::regex(R"(^/api/v1/tests$)"), false, list_tests_route, {"flaky", "limit"}},
        {"GET", std::regex(R"(^/api/v1/stats/daily$)"), false, stats_daily_route, {"days"}},
        {"POST", std::regex(R"(^/api/v1/stats/rebuild$)"), true, stats_rebuild_route, {}},
    };
    return k;
}

}  // namespace

Api::Api(std::filesystem::path db_path, std::vector<config::AdminToken> tokens,
         asio::any_io_executor workers, store::Writer& writer)
    : m_db_path(std::move(db_path)),
      m_tokens(std::make_shared<const std::vector<config::AdminToken>>(std::move(tokens))),
      m_workers(std::move(workers)),
      m_writer(writer),
      m_ui(std::make_unique<Dashboard>()) {}

Api::~Api() = default;

void Api::set_ui(bool ui_public, const std::string& upstream_repo) {
    Dashboard::Settings s;
    s.ui_public = ui_public;
    if (!upstream_repo.empty()) {
        s.links.commit_url = "https://github.com/" + upstream_repo + "/commit/";
        s.links.pr_url = "https://github.com/" + upstream_repo + "/pull/";
    }
    m_ui->configure(std::move(s));
}

bool Api::owns(const std::string& path) {
    return path.rfind("/api/", 0) == 0 || path == "/metrics" || Dashboard::owns(path);
}

Context Api::context() {
    Context ctx{m_db_path, m_workers,      m_writer, nullptr, nullptr, m_on_recovery_run,
                m_cluster, m_outbox_lanes, nullptr,  nullptr, nullptr};
    std::lock_guard lk(m_mu);
    ctx.tiers = m_tiers;
    ctx.runners = m_runners;
    ctx.remove_build = m_remove_build;
    ctx.trunk_refs = m_trunk_refs;
    ctx.commits = m_commits;
    return ctx;
}

void Api::set_tokens(std::vector<config::AdminToken> tokens) {
    auto next = std::make_shared<const std::vector<config::AdminToken>>(std::move(tokens));
    std::lock_guard lk(m_mu);
    m_tokens = std::move(next);
}

void Api::set_runners(std::vector<config::RunnerConfig> runners) {
    auto next = std::make_shared<const std::vector<config::RunnerConfig>>(std::move(runners));
    std::lock_guard lk(m_mu);
    m_runners = std::move(next);
}

void Api::set_metrics_public(bool open) {
    std::lock_guard lk(m_mu);
    m_metrics_public = open;
}

void Api::set_tiers(std::vector<std::string> tiers) {
    auto next = std::make_shared<const std::vector<std::string>>(std::move(tiers));
    std::lock_guard lk(m_mu);
    m_tiers = std::move(next);
}

void Api::set_trunk(std::vector<std::string> refs,
                    std::function<nlohmann::json(const std::vector<std::string>&)> commits) {
    auto next = std::make_shared<const std::vector<std::string>>(std::move(refs));
    std::lock_guard lk(m_mu);
    m_trunk_refs = std::move(next);
    m_commits = std::move(commits);
}

void Api::set_build_cache(std::function<void(const std::string& key)> remove) {
    std::lock_guard lk(m_mu);
    m_remove_build = std::move(remove);
}

std::shared_ptr<const std::vector<config::AdminToken>> Api::tokens() const {
    std::lock_guard lk(m_mu);
    return m_tokens;
}

std::string Api::route_label(const std::string& path) {
    if (path == "/metrics" || path == "/api/v1/openapi.yaml") return path;
    if (Dashboard::owns(path)) {
        // The dashboard's page patterns; anything else under /ui is one label.
        static const std::regex k_ui(
            R"(^/ui(/|/style\.css|/login|/logout|/runners|/deliveries|/builds|/runs|/trunk|/trends|/tests|/tests/[^/]+|/runs/[0-9]+(/cancel|/retry)?|/jobs/[0-9]+|/builds/[0-9]+(/evict)?|/runners/[^/]+/(drain|undrain))$)");
        if (!std::regex_match(path, k_ui)) return "/ui/*";
        static const std::regex k_runner(R"(/runners/[^/]+/)"), k_number(R"(/[0-9]+)");
        if (path.rfind("/ui/tests/", 0) == 0) return "/ui/tests/{name}";
        return std::regex_replace(std::regex_replace(path, k_runner, "/runners/{name}/"), k_number,
                                  "/{id}");
    }
    bool matched = false;
    for (const auto& r : routes()) matched = matched || std::regex_match(path, r.path);
    if (!matched) return "other";
    // The pattern: numeric segments are ids, the segment after /runners/ a runner's name and
    // the one after /tests/ a test's.
    std::string out, prev;
    std::size_t i = 0;
    while (i < path.size()) {
        const std::size_t next = path.find('/', i + 1);
        std::string seg = path.substr(i, next == std::string::npos ? std::string::npos : next - i);
        if (prev == "/runners" || prev == "/tests") {
            seg = "/{name}";
        } else if (seg.size() > 1 && seg.find_first_not_of("0123456789", 1) == std::string::npos) {
            seg = "/{id}";
        }
        out += seg;
        prev = seg;
        i = next == std::string::npos ? path.size() : next;
    }
    return out;
}

asio::awaitable<http::Response> Api::metrics(bool authenticated, const std::string& method) {
    bool open;
    {
        std::lock_guard lk(m_mu);
        open = m_metrics_public;
    }
    if (!authenticated && !open) {
        co_return error_response(make_error(
            Errc::unauthorized, "a valid bearer token is required (or admin.metrics_public)"));
    }
    if (method != "GET" && method != "HEAD")
        co_return error_response(make_error(Errc::method_not_allowed, ""));
    const std::size_t pending = m_writer.pending();
    // The lanes' states from the sender's memory (quick), never a count per scrape.
    json lanes = m_outbox_lanes ? m_outbox_lanes() : json::array();
    // A named awaitable, as everywhere here: g++ 12 destroys a lambda temporary inside a
    // co_await expression twice.
    auto query = on_workers(m_workers, [this, pending, lanes = std::move(lanes)]() -> Result<json> {
        auto t = m_metrics.text(m_db_path, pending, lanes);
        if (!t) return t.error();
        return json(*t);
    });
    auto text = co_await std::move(query);
    if (!text) co_return error_response(text.error());
    http::Response r;
    r.status = 200;
    r.content_type = "text/plain; version=0.0.4; charset=utf-8";
    r.body = text->get<std::string>();
    co_return r;
}

asio::awaitable<http::Response> Api::handle(http::Request& req) {
    if (req.path == "/api/v1/openapi.yaml") co_return openapi_response(req.method);
    if (Dashboard::owns(req.path)) {
        auto ctx = context();
        auto page = m_ui->handle(ctx, req, *tokens());
        co_return co_await std::move(page);
    }
    auto caller = authenticate(req.header("Authorization"), *tokens());
    if (req.path == "/metrics") {
        auto r = co_await metrics(caller.has_value(), req.method);
        if (r.status == 401) log_refused(req, r.status);
        co_return r;
    }
    if (!caller) {
        log_refused(req, 401);
        co_return error_response(
            make_error(Errc::unauthorized, "a valid bearer token is required"));
    }
    const Route* found = nullptr;
    bool path_known = false;
    std::smatch m;
    for (const auto& r : routes()) {
        if (!std::regex_match(req.path, m, r.path)) continue;
        path_known = true;
        if (req.method == r.method) {
            found = &r;
            break;
        }
    }
    if (!found) {
        co_return error_response(
            path_known ? make_error(Errc::method_not_allowed, "")
                       : make_error(Errc::not_found, "no route for " + req.path.substr(0, 200)));
    }
    if (found->admin_only && caller->role != Role::admin) {
        log_refused(req, 403, caller->name);
        co_return error_response(make_error(Errc::forbidden, "this route needs an admin token"));
    }
    // A filter this route does not know is refused, never ignored (docs/operations.md).
    if (auto s = known_params(req, found->query); !s) co_return error_response(s.error());
    Context ctx = context();
    Call call{req, *caller, {}};
    for (std::size_t i = 1; i < m.size(); ++i) call.params.push_back(m[i].str());
    auto reply = co_await found->handler(ctx, call);
    co_return reply ? std::move(reply.value()) : error_response(reply.error());
}

void Api::log_refused(const http::Request& req, int status, const std::string& token_name) {
    // The address, the route and why; never the token or the Authorization header.
    const std::string address = http::address_of(req.remote);
    if (!m_refused.admit(address, status)) return;
    std::string reason;
    if (status == 403) {
        reason = "token " + token_name + " has the read role; the route needs admin";
    } else {
        auto authorization = req.header("Authorization");
        reason = !authorization ? "no Authorization header"
                 : authorization->substr(0, 7) != "Bearer "
                     ? "not a Bearer token"
                     : "the bearer token matches no admin token";
    }
    std::string route = req.path.substr(0, 200);
    for (char& c : route)
        if (static_cast<unsigned char>(c) < 0x21 || static_cast<unsigned char>(c) > 0x7e) c = '?';
    spdlog::warn("admin authentication failed client={} method={} path={} status={} reason=\"{}\"",
                 address, req.method.substr(0, 16), route, status, reason);
}

void Api::flush_refused_log() {
    for (const auto& line : m_refused.flush()) spdlog::warn("{}", line);
}

}  // namespace crcrd::admin
