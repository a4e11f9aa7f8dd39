#include "crcrd/admin/api.hpp"

#include <limits>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <charconv>
#include <fstream>
#include <regex>

#include "crcrd/admin/auth.hpp"
#include "crcrd/admin/metrics.hpp"
#include "crcrd/admin/queries.hpp"
#include "crcrd/admin/run_actions.hpp"
#include "crcrd/core/sha.hpp"
#include "crcrd/core/time.hpp"
#include "crcrd/store/async.hpp"
#include "crcrd/store/outbox.hpp"
#include "crcrd/store/runs.hpp"
#include "crcrd/store/slots.hpp"

namespace crcrd::admin {

namespace asio = boost::asio;
using nlohmann::json;

namespace {

http::Response error(int status, const std::string& code, const std::string& detail = {}) {
    json body = {{"error", code}};
    if (!detail.empty()) body["detail"] = detail;
    return http::Response::json(status, body);
}

/// 401 with the challenge a bearer-token client expects.
http::Response unauthorized(const std::string& detail) {
    auto r = error(401, "unauthorized", detail);
    r.headers.emplace_back("WWW-Authenticate", "Bearer");
    return r;
}

/// A query parameter as an integer in [lo, hi]; an error names the parameter.
Result<std::optional<std::int64_t>> int_param(const http::Request& req, const char* name, std::int64_t lo, std::int64_t hi) {
    auto v = req.query_param(name);
    if (!v) return std::optional<std::int64_t>();
    std::int64_t n = 0;
    auto [p, ec] = std::from_chars(v->data(), v->data() + v->size(), n);
    if (ec != std::errc() || p != v->data() + v->size() || n < lo || n > hi) {
        return make_error("bad_request", std::string(name) + " must be an integer from " + std::to_string(lo) + " to " +
                                             std::to_string(hi));
    }
    return std::optional<std::int64_t>(n);
}

Status one_of(const std::optional<std::string>& v, const char* name, std::initializer_list<const char*> allowed) {
    if (!v) return Ok{};
    for (const char* a : allowed)
        if (*v == a) return Ok{};
    std::string list;
    for (const char* a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
    return make_error("bad_request", std::string(name) + " must be one of " + list);
}

Status rfc3339_like(const std::optional<std::string>& v, const char* name) {
    static const std::regex k_time(R"(^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d+)?)?Z?)?$)");
    if (v && !std::regex_match(*v, k_time)) return make_error("bad_request", std::string(name) + " must be an RFC 3339 UTC time");
    return Ok{};
}

/// `limit` (1-200, default 50) and `cursor` of a list request.
Result<Page> page_of(const http::Request& req) {
    Page page;
    auto l = int_param(req, "limit", 1, 200);
    if (!l) return l.error();
    page.limit = static_cast<int>(l->value_or(50));
    if (auto c = req.query_param("cursor"); c && !c->empty()) {
        page.before_id = parse_cursor(*c);
        if (!page.before_id) return make_error("bad_request", "cursor is not one this server gave out");
    }
    return page;
}

http::Response from(const Result<json>& r) {
    if (r) return http::Response::json(200, *r);
    if (r.error().code == "not_found") return error(404, "not_found", r.error().message);
    if (r.error().code == "bad_request") return error(400, "bad_request", r.error().message);
    return error(503, "unavailable", r.error().message);
}

/// Runs a blocking query on the worker pool and resumes on the caller's executor.
template <class Fn>
asio::awaitable<Result<json>> on_workers(asio::any_io_executor workers, Fn fn) {
    // co_spawn needs a default-constructible value: carry the Result in an optional.
    auto op = asio::co_spawn(
        workers, [fn = std::move(fn)]() -> asio::awaitable<std::optional<Result<json>>> { co_return fn(); },
        asio::use_awaitable);
    auto r = co_await std::move(op);
    co_return std::move(*r);
}

}  // namespace

Api::Api(std::filesystem::path db_path, std::vector<config::AdminToken> tokens, asio::any_io_executor workers,
         store::Writer& writer)
    : m_db_path(std::move(db_path)),
      m_tokens(std::make_shared<const std::vector<config::AdminToken>>(std::move(tokens))),
      m_workers(std::move(workers)),
      m_writer(writer) {}

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

std::shared_ptr<const std::vector<config::AdminToken>> Api::tokens() const {
    std::lock_guard lk(m_mu);
    return m_tokens;
}

asio::awaitable<http::Response> Api::handle(http::Request& req) {
    auto caller = authenticate(req.header("Authorization"), *tokens());
    if (req.path == "/metrics") {
        bool open;
        {
            std::lock_guard lk(m_mu);
            open = m_metrics_public;
        }
        if (!caller && !open) co_return unauthorized("a valid bearer token is required (or admin.metrics_public)");
        if (req.method != "GET" && req.method != "HEAD") co_return error(405, "method_not_allowed");
        const std::size_t pending = m_writer.pending();
        // A named awaitable, as everywhere here: g++ 12 destroys a lambda temporary inside a
        // co_await expression twice.
        auto query = on_workers(m_workers, [db = m_db_path, pending]() -> Result<json> {
            auto t = metrics_text(db, pending);
            if (!t) return t.error();
            return json(*t);
        });
        auto text = co_await std::move(query);
        if (!text) co_return error(503, "unavailable", text.error().message);
        http::Response r;
        r.status = 200;
        r.content_type = "text/plain; version=0.0.4; charset=utf-8";
        r.body = text->get<std::string>();
        co_return r;
    }
    if (!caller) co_return unauthorized("a valid bearer token is required");
    static const std::regex k_run(R"(^/api/v1/runs/([0-9]{1,18})$)");
    static const std::regex k_cancel(R"(^/api/v1/runs/([0-9]{1,18})/cancel$)");
    std::smatch m;
    const std::string path = req.path;
    const bool get = req.method == "GET";

    static const std::regex k_retry(R"(^/api/v1/runs/([0-9]{1,18})/retry$)");
    if ((path == "/api/v1/runs" && req.method == "POST") || std::regex_match(path, m, k_retry)) {
        if (req.method != "POST") co_return error(405, "method_not_allowed");
        if (caller->role != Role::admin) co_return error(403, "forbidden", "this route needs an admin token");
        std::shared_ptr<const std::vector<std::string>> tiers;
        {
            std::lock_guard lk(m_mu);
            tiers = m_tiers;
        }
        const bool retry = path != "/api/v1/runs";
        const std::int64_t id = retry ? std::stoll(m[1].str()) : 0;
        json body = retry ? json::object() : json::parse(req.body, nullptr, false);
        const std::string who = caller->name;
        auto write = store::async_write<std::optional<Result<json>>>(
            m_writer,
            [retry, id, body, tiers, who](store::Db& db) -> std::optional<Result<json>> {
                return retry ? retry_run(db, id, who) : create_manual_run(db, body, *tiers, who);
            },
            asio::use_awaitable);
        auto [err, created] = co_await std::move(write);
        if (err) co_return error(503, "unavailable", err->message);
        if (!*created) {
            const auto& e = created->error();
            if (e.code == "not_found") co_return error(404, "not_found", e.message);
            if (e.code == "conflict") co_return error(409, "conflict", e.message);
            co_return error(400, "bad_request", e.message);
        }
        const json& out = **created;
        spdlog::info("run_id={} {} by {} sha={}", out["run_id"].get<std::int64_t>(),
                     retry ? "retry of run " + std::to_string(id) : std::string("manual run"), who, out["sha"].get<std::string>());
        if (m_on_queued) m_on_queued();
        co_return http::Response::json(201, out);
    }
    if (path == "/api/v1/runs") {
        if (!get) co_return error(405, "method_not_allowed");
        RunFilter f;
        f.state = req.query_param("state");
        f.conclusion = req.query_param("conclusion");
        f.event = req.query_param("event");
        f.since = req.query_param("since");
        f.until = req.query_param("until");
        if (auto sha = req.query_param("sha")) {
            if (!valid_sha(*sha)) co_return error(400, "bad_request", "sha must be a full 40-character commit SHA");
            std::string lower = *sha;
            for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
            f.sha = lower;
        }
        for (const Status& s : {one_of(f.state, "state", {"queued", "running", "completed", "cancelled"}),
                                one_of(f.conclusion, "conclusion",
                                       {"passed", "flaky", "regression", "infra_error", "device_unavailable", "timeout", "cancelled"}),
                                one_of(f.event, "event", {"pull_request", "push", "schedule", "manual"}),
                                rfc3339_like(f.since, "since"), rfc3339_like(f.until, "until")}) {
            if (!s) co_return error(400, "bad_request", s.error().message);
        }
        auto pr = int_param(req, "pr", 1, std::numeric_limits<std::int64_t>::max());
        if (!pr) co_return error(400, "bad_request", pr.error().message);
        f.pr = *pr;
        auto page = page_of(req);
        if (!page) co_return error(400, "bad_request", page.error().message);
        f.page = *page;
        auto query = on_workers(m_workers, [db = m_db_path, f] { return list_runs(db, f); });
        co_return from(co_await std::move(query));
    }
    if (std::regex_match(path, m, k_run)) {
        if (!get) co_return error(405, "method_not_allowed");
        std::int64_t id = std::stoll(m[1].str());
        auto query = on_workers(m_workers, [db = m_db_path, id] { return get_run(db, id); });
        co_return from(co_await std::move(query));
    }
    if (std::regex_match(path, m, k_cancel)) {
        if (req.method != "POST") co_return error(405, "method_not_allowed");
        if (caller->role != Role::admin) co_return error(403, "forbidden", "this route needs an admin token");
        std::int64_t id = std::stoll(m[1].str());
        std::string reason = "cancelled by " + caller->name;
        auto write = store::async_write<int>(
            m_writer,
            [id, reason](store::Db& db) {
                switch (store::RunsRepo(db).cancel(id, reason, now_rfc3339())) {
                    case store::CancelOutcome::cancelled: return 200;
                    case store::CancelOutcome::already_finished: return 409;
                    case store::CancelOutcome::not_found: return 404;
                }
                return 404;
            },
            asio::use_awaitable);
        auto [err, status] = co_await std::move(write);
        if (err) co_return error(503, "unavailable", err->message);
        if (status == 404) co_return error(404, "not_found", "no run " + std::to_string(id));
        if (status == 409) co_return error(409, "conflict", "run " + std::to_string(id) + " has already finished");
        spdlog::info("run_id={} {}", id, reason);
        co_return http::Response::json(200, {{"status", "cancelled"}, {"run_id", id}, {"reason", reason}});
    }
    if (path == "/api/v1/deliveries") {
        if (!get) co_return error(405, "method_not_allowed");
        DeliveryFilter f;
        f.verdict = req.query_param("verdict");
        if (auto s = one_of(f.verdict, "verdict", {"queued", "duplicate", "ignored", "cancelled", "pong", "rejected"}); !s) {
            co_return error(400, "bad_request", s.error().message);
        }
        auto page = page_of(req);
        if (!page) co_return error(400, "bad_request", page.error().message);
        f.page = *page;
        auto query = on_workers(m_workers, [db = m_db_path, f] { return list_deliveries(db, f); });
        co_return from(co_await std::move(query));
    }
    static const std::regex k_outbox_retry(R"(^/api/v1/outbox/([0-9]{1,18})/retry$)");
    if (std::regex_match(path, m, k_outbox_retry)) {
        if (req.method != "POST") co_return error(405, "method_not_allowed");
        if (caller->role != Role::admin) co_return error(403, "forbidden", "this route needs an admin token");
        std::int64_t id = std::stoll(m[1].str());
        // Only a dead letter, and only while nothing newer was reported for its context: an
        // older state must never overwrite a newer one.
        auto write = store::async_write<store::RequeueOutcome>(
            m_writer, [id](store::Db& db) { return store::OutboxRepo(db).requeue_dead(id); }, asio::use_awaitable);
        auto [err, outcome] = co_await std::move(write);
        if (err) co_return error(503, "unavailable", err->message);
        using Requeue = store::RequeueOutcome::Kind;
        if (outcome.kind == Requeue::not_found) co_return error(404, "not_found", "no outbox row " + std::to_string(id));
        if (outcome.kind == Requeue::not_dead) co_return error(409, "conflict", "not dead: " + outcome.delivery);
        if (outcome.kind == Requeue::newer_reported) {
            co_return error(409, "conflict", "a newer status of " + outcome.context + " was reported since");
        }
        spdlog::info("outbox id={} requeued by {}", id, caller->name);
        co_return http::Response::json(200, {{"status", "waiting"}, {"id", id}});
    }
    if (path == "/api/v1/outbox") {
        if (!get) co_return error(405, "method_not_allowed");
        OutboxFilter f;
        f.state = req.query_param("state");
        if (auto s = one_of(f.state, "state", {"waiting", "sent", "dead", "coalesced"}); !s) {
            co_return error(400, "bad_request", s.error().message);
        }
        f.sink = req.query_param("sink");
        if (auto s = one_of(f.sink, "sink", {"github", "file", "callback"}); !s) co_return error(400, "bad_request", s.error().message);
        auto run_id = int_param(req, "run_id", 1, std::numeric_limits<std::int64_t>::max());
        if (!run_id) co_return error(400, "bad_request", run_id.error().message);
        f.run_id = *run_id;
        auto page = page_of(req);
        if (!page) co_return error(400, "bad_request", page.error().message);
        f.page = *page;
        auto query = on_workers(m_workers, [db = m_db_path, f] { return list_outbox(db, f); });
        co_return from(co_await std::move(query));
    }
    if (path == "/api/v1/recovery") {
        if (!get) co_return error(405, "method_not_allowed");
        auto query = on_workers(m_workers, [db = m_db_path] { return list_recovery(db); });
        auto listed = co_await std::move(query);
        if (listed) (*listed)["enabled"] = static_cast<bool>(m_on_recovery_run);
        co_return from(listed);
    }
    if (path == "/api/v1/recovery/run") {
        if (req.method != "POST") co_return error(405, "method_not_allowed");
        if (caller->role != Role::admin) co_return error(403, "forbidden", "an admin token is required");
        if (!m_on_recovery_run) co_return error(409, "conflict", "recovery.github_hook is not configured");
        m_on_recovery_run();
        spdlog::info("recovery pass requested by {}", caller->name);
        co_return http::Response::json(202, {{"status", "started"}});
    }
    co_return co_await jobs_and_runners(req, caller->role == Role::admin);
}

asio::awaitable<http::Response> Api::jobs_and_runners(http::Request& req, bool admin) {
    static const std::regex k_job(R"(^/api/v1/jobs/([0-9]{1,18})(/log|/tests)?$)");
    static const std::regex k_slot(R"(^/api/v1/runners/([A-Za-z0-9._-]{1,100})/(drain|undrain)$)");
    std::smatch m;
    const std::string path = req.path;
    if (std::regex_match(path, m, k_job)) {
        if (req.method != "GET") co_return error(405, "method_not_allowed");
        std::int64_t id = std::stoll(m[1].str());
        const std::string what = m[2].str();
        if (what.empty()) {
            auto query = on_workers(m_workers, [db = m_db_path, id] { return get_job(db, id); });
            co_return from(co_await std::move(query));
        }
        if (what == "/tests") {
            auto page = page_of(req);
            if (!page) co_return error(400, "bad_request", page.error().message);
            auto outcome = req.query_param("outcome");
            if (auto s = one_of(outcome, "outcome", {"passed", "failed", "skipped", "flaky"}); !s) {
                co_return error(400, "bad_request", s.error().message);
            }
            auto query = on_workers(m_workers, [db = m_db_path, id, outcome, p = *page] { return list_tests(db, id, outcome, p); });
            co_return from(co_await std::move(query));
        }
        auto tail = int_param(req, "tail", 1, std::int64_t{1} << 40);
        if (!tail) co_return error(400, "bad_request", tail.error().message);
        auto query = on_workers(m_workers, [db = m_db_path, id, n = *tail]() -> Result<json> {
            auto where = job_log_path(db, id);
            if (!where) return where.error();
            std::ifstream in(*where, std::ios::binary | std::ios::ate);
            if (!in) return make_error("not_found", "the log of job " + std::to_string(id) + " is gone");
            std::int64_t size = in.tellg();
            std::int64_t from = n ? std::max<std::int64_t>(0, size - *n) : 0;
            in.seekg(from);
            std::string text(static_cast<std::size_t>(size - from), '\0');
            in.read(text.data(), static_cast<std::streamsize>(text.size()));
            return json(text);
        });
        auto r = co_await std::move(query);
        if (!r) co_return from(r);
        http::Response res;
        res.content_type = "text/plain; charset=utf-8";
        res.body = r->get<std::string>();
        co_return res;
    }
    if (path == "/api/v1/runners") {
        if (req.method != "GET") co_return error(405, "method_not_allowed");
        std::shared_ptr<const std::vector<config::RunnerConfig>> runners;
        {
            std::lock_guard lk(m_mu);
            runners = m_runners;
        }
        auto query = on_workers(m_workers, [db = m_db_path] { return list_slots(db); });
        auto r = co_await std::move(query);
        if (!r) co_return from(r);
        json items = json::array();
        for (auto slot : *r) {
            json labels = json::array();
            for (const auto& rc : *runners)
                if (rc.name == slot["name"]) labels = rc.labels;
            slot["labels"] = labels;
            items.push_back(std::move(slot));
        }
        co_return http::Response::json(200, {{"items", items}, {"next_cursor", nullptr}});
    }
    if (std::regex_match(path, m, k_slot)) {
        if (req.method != "POST") co_return error(405, "method_not_allowed");
        if (!admin) co_return error(403, "forbidden", "this route needs an admin token");
        const std::string name = m[1].str();
        const bool drain = m[2].str() == "drain";
        auto write = store::async_write<int>(
            m_writer,
            [name, drain](store::Db& db) { return store::SlotsRepo(db).set_drained(name, drain) ? 1 : 0; },
            asio::use_awaitable);
        auto [err, changed] = co_await std::move(write);
        if (err) co_return error(503, "unavailable", err->message);
        if (changed == 0) co_return error(404, "not_found", "no runner " + name);
        spdlog::info("slot={} {}", name, drain ? "drained" : "undrained");
        co_return http::Response::json(200, {{"name", name}, {"drained", drain}});
    }
    co_return error(404, "not_found", "no route for " + path.substr(0, 200));
}

}  // namespace crcrd::admin
