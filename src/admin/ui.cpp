#include "ui.hpp"

#include <spdlog/spdlog.h>

#include <regex>

#include "crcrd/admin/auth.hpp"
#include "crcrd/core/crypto.hpp"

namespace crcrd::admin {

namespace asio = boost::asio;
using nlohmann::json;

namespace {

constexpr std::string_view k_cookie = "crcrd_session";
constexpr std::int64_t k_run_log_tail = 8192;
constexpr std::int64_t k_job_log_tail = 65536;
constexpr std::int64_t k_max_log_tail = std::int64_t{1} << 20;

/// Every dashboard answer carries these: no caching of pages that hold run data, no framing,
/// no script, no inline style, forms only to ourselves.
http::Response html_response(int status, std::string body) {
    http::Response r;
    r.status = status;
    r.content_type = "text/html; charset=utf-8";
    r.body = std::move(body);
    r.headers = {{"Cache-Control", "no-store"},
                 {"Content-Security-Policy",
                  "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; "
                  "frame-ancestors 'none'; "
                  "base-uri 'none'"},
                 {"X-Content-Type-Options", "nosniff"},
                 {"X-Frame-Options", "DENY"},
                 {"Referrer-Policy", "same-origin"}};
    return r;
}

http::Response redirect(const std::string& to) {
    auto r = html_response(303, "");
    r.headers.emplace_back("Location", to);
    return r;
}

/// The value of cookie `name` in the request's Cookie header.
std::string cookie(const http::Request& req, std::string_view name) {
    auto h = req.header("Cookie");
    if (!h) return {};
    std::string_view rest = *h;
    while (!rest.empty()) {
        auto semi = rest.find(';');
        std::string_view pair = rest.substr(0, semi);
        rest = semi == std::string_view::npos ? std::string_view() : rest.substr(semi + 1);
        while (!pair.empty() && pair.front() == ' ') pair.remove_prefix(1);
        auto eq = pair.find('=');
        if (eq != std::string_view::npos && pair.substr(0, eq) == name)
            return std::string(pair.substr(eq + 1));
    }
    return {};
}

/// A url-encoded form field of a POST body.
std::optional<std::string> form_field(const http::Request& req, std::string_view name) {
    http::Request as_query;
    as_query.query = req.body;
    return as_query.query_param(name);
}

/// Where to go after signing in: only a dashboard path of ours, never another site.
std::string safe_next(const std::optional<std::string>& next) {
    if (!next || next->rfind("/ui/", 0) != 0 || next->find("//") != std::string::npos ||
        next->find('\\') != std::string::npos || next->size() > 2000) {
        return "/ui/";
    }
    return *next;
}

/// Asks an API handler, as `caller`, for what a JSON client would get: the parsed body (a
/// string for a text answer) or the handler's error.
asio::awaitable<Result<json>> ask(Context& ctx, Handler handler, const Caller& caller,
                                  std::vector<std::string> params, std::string query = {},
                                  std::string method = "GET") {
    http::Request r;
    r.method = std::move(method);
    r.query = std::move(query);
    Call call{r, caller, std::move(params)};
    auto reply = co_await handler(ctx, call);
    if (!reply) co_return reply.error();
    if (reply->content_type.rfind("application/json", 0) != 0) co_return json(reply->body);
    json body = json::parse(reply->body, nullptr, false);
    if (body.is_discarded())
        co_return make_error(Errc::unavailable, "the API answered with a broken body");
    co_return body;
}

/// The query string of `names` as the request has them, empty ones left out (a form sends
/// every field), and the same values for the form to show again.
std::string filters(const http::Request& req, std::initializer_list<const char*> names,
                    ui::FormValues& form) {
    std::string q;
    for (const char* n : names) {
        auto v = req.query_param(n);
        if (!v || v->empty()) continue;
        form[n] = *v;
        q += std::string(q.empty() ? "" : "&") + n + "=" + html::url_encode(*v);
    }
    return q;
}

/// Who is asking: a session, a bearer token or (with ui_public) anybody; nullopt for nobody.
struct Visitor {
    Caller caller;
    html::Viewer viewer;
    std::string session_id;
};

std::optional<Visitor> visitor(const http::Request& req, UiSessions& sessions,
                               const std::vector<config::AdminToken>& tokens, bool ui_public) {
    const std::string sid = cookie(req, k_cookie);
    if (auto s = sessions.find(sid)) {
        for (const auto& t : tokens) {
            if (t.name != s->token_name) continue;
            Visitor v{Caller{t.name, t.role == "admin" ? Role::admin : Role::read}, {}, sid};
            v.viewer = html::Viewer{true, t.name, t.role == "admin", s->csrf};
            return v;
        }
        sessions.remove(sid);  // its token was removed by a reload
    }
    if (auto c = authenticate(req.header("Authorization"), tokens))
        return Visitor{*c, html::Viewer{false, c->name, false, {}}, {}};
    if (ui_public) return Visitor{Caller{"ui_public", Role::read}, {}, {}};
    return std::nullopt;
}

http::Response error_html(const Error& e, const html::Viewer& v) {
    const int status = status_of(e);
    return html_response(
        status,
        ui::error_page(status, e.message.empty() ? std::string(to_string(e.code)) : e.message, v));
}

std::int64_t id_of(const std::smatch& m) {
    return std::stoll(m[1].str());
}

/// The trunk health pages: /ui/trunk, /ui/tests (the flaky tests; ?name= opens a test's
/// history) and /ui/tests/{name}.
asio::awaitable<http::Response> trunk_pages(Context& ctx, const http::Request& req,
                                            const Caller& caller, const html::Viewer& v,
                                            const ui::Links& links) {
    if (req.path == "/ui/trunk") {
        ui::FormValues form;
        std::string q = filters(req, {"ref", "limit", "cursor"}, form);
        auto grid_op = ask(ctx, trunk_route, caller, {}, q);
        auto grid = co_await std::move(grid_op);
        if (!grid) {
            if (grid.error().code != Errc::bad_request) co_return error_html(grid.error(), v);
            co_return html_response(400,
                                    ui::trunk_page(json::object(), grid.error().message, v, links));
        }
        co_return html_response(200, ui::trunk_page(*grid, "", v, links));
    }
    if (req.path == "/ui/tests") {
        if (auto name = req.query_param("name"); name && !name->empty())
            co_return redirect("/ui/tests/" + html::url_encode(*name));
        auto list_op = ask(ctx, list_tests_route, caller, {}, "flaky=1");
        auto list = co_await std::move(list_op);
        if (!list) co_return error_html(list.error(), v);
        co_return html_response(200, ui::flaky_page(*list, v));
    }
    // The name as the path has it (percent-encoded): the route decodes it.
    const std::string name = req.path.substr(std::string_view("/ui/tests/").size());
    ui::FormValues form;
    auto history_op = ask(ctx, test_history_route, caller, {name}, filters(req, {"limit"}, form));
    auto history = co_await std::move(history_op);
    if (!history) co_return error_html(history.error(), v);
    co_return html_response(200, ui::test_page(*history, v, links));
}

}  // namespace

void Dashboard::configure(Settings s) {
    std::lock_guard lk(m_mu);
    m_settings = std::move(s);
}

Dashboard::Settings Dashboard::settings() const {
    std::lock_guard lk(m_mu);
    return m_settings;
}

asio::awaitable<http::Response> Dashboard::handle(Context& ctx, http::Request& req,
                                                  const std::vector<config::AdminToken>& tokens) {
    const Settings cfg = settings();
    const bool get = req.method == "GET" || req.method == "HEAD";
    const bool post = req.method == "POST";
    if (req.path == "/ui") co_return redirect("/ui/");
    if (req.path == "/ui/style.css") {
        http::Response r;
        r.content_type = "text/css; charset=utf-8";
        r.body = std::string(html::stylesheet());
        r.headers = {{"Cache-Control", "max-age=3600"}, {"X-Content-Type-Options", "nosniff"}};
        co_return r;
    }
    if (req.path == "/ui/login") {
        if (get)
            co_return html_response(
                200, ui::login_page(safe_next(req.query_param("next")), "", cfg.ui_public));
        if (!post) co_return html_response(405, ui::error_page(405, "GET or POST", {}));
        const std::string token = form_field(req, "token").value_or("");
        const std::string next = safe_next(form_field(req, "next"));
        auto caller = authenticate("Bearer " + token, tokens);
        if (!caller) {
            spdlog::warn("dashboard sign-in refused from {}: not a configured token", req.remote);
            co_return html_response(
                401, ui::login_page(next, "That token is not valid.", cfg.ui_public));
        }
        const std::string sid = m_sessions.create(caller->name);
        spdlog::info("dashboard sign-in of token {} from {}", caller->name, req.remote);
        auto r = redirect(next);
        r.headers.emplace_back(
            "Set-Cookie", std::string(k_cookie) + "=" + sid +
                              "; Path=/ui; Max-Age=" + std::to_string(m_sessions.ttl().count()) +
                              "; HttpOnly; Secure; SameSite=Strict");
        co_return r;
    }

    auto who = visitor(req, m_sessions, tokens, cfg.ui_public);
    if (!who) {
        if (get)
            co_return redirect("/ui/login?next=" + html::url_encode(req.target.substr(0, 2000)));
        co_return html_response(401, ui::error_page(401, "sign in first", {}));
    }
    const html::Viewer& v = who->viewer;
    std::smatch m;

    if (post) {
        // Every write needs a session of an admin token and the session's CSRF token.
        const std::string csrf = form_field(req, "csrf").value_or("");
        if (!v.signed_in || v.csrf.empty() || !crypto::constant_time_equal(csrf, v.csrf)) {
            spdlog::warn("dashboard {} {} refused from {}: no session or a wrong CSRF token",
                         req.method, req.path, req.remote);
            co_return html_response(
                403,
                ui::error_page(403, "this form needs a signed-in session and its CSRF token", v));
        }
        if (req.path == "/ui/logout") {
            m_sessions.remove(who->session_id);
            auto r = redirect("/ui/login");
            r.headers.emplace_back("Set-Cookie",
                                   std::string(k_cookie) +
                                       "=; Path=/ui; Max-Age=0; HttpOnly; Secure; SameSite=Strict");
            co_return r;
        }
        if (!v.admin)
            co_return html_response(403,
                                    ui::error_page(403, "this action needs an admin token", v));
        static const std::regex k_run_action(R"(^/ui/runs/([0-9]{1,18})/(cancel|retry)$)");
        static const std::regex k_slot_action(
            R"(^/ui/runners/([A-Za-z0-9._-]{1,100})/(drain|undrain)$)");
        if (std::regex_match(req.path, m, k_run_action)) {
            const bool cancel = m[2] == "cancel";
            auto done_op = ask(ctx, cancel ? cancel_run_route : retry_run_route, who->caller,
                               {m[1].str()}, {}, "POST");
            auto done = co_await std::move(done_op);
            if (!done) co_return error_html(done.error(), v);
            spdlog::info("run_id={} {} from the dashboard by {}", m[1].str(),
                         cancel ? "cancel" : "retry", v.name);
            const std::int64_t to = cancel ? id_of(m) : (*done).value("run_id", id_of(m));
            co_return redirect("/ui/runs/" + std::to_string(to) +
                               "?done=" + (cancel ? "cancel" : "retry&of=" + m[1].str()));
        }
        static const std::regex k_build_action(R"(^/ui/builds/([0-9]{1,18})/evict$)");
        if (std::regex_match(req.path, m, k_build_action)) {
            auto done_op = ask(ctx, evict_build_route, who->caller, {m[1].str()}, {}, "POST");
            auto done = co_await std::move(done_op);
            if (!done) co_return error_html(done.error(), v);
            co_return redirect("/ui/builds/" + m[1].str() + "?done=evict");
        }
        if (std::regex_match(req.path, m, k_slot_action)) {
            auto done_op =
                ask(ctx, drain_runner_route, who->caller, {m[1].str(), m[2].str()}, {}, "POST");
            auto done = co_await std::move(done_op);
            if (!done) co_return error_html(done.error(), v);
            co_return redirect("/ui/runners?done=" + m[2].str() +
                               "&slot=" + html::url_encode(m[1].str()));
        }
        co_return html_response(
            404, ui::error_page(404, "no form posts to " + req.path.substr(0, 200), v));
    }
    if (!get) co_return html_response(405, ui::error_page(405, "this page only answers GET", v));

    static const std::regex k_run(R"(^/ui/runs/([0-9]{1,18})$)");
    static const std::regex k_job(R"(^/ui/jobs/([0-9]{1,18})$)");
    // The default page is the trunk grid; "/ui/" with a filter is the runs list of before.
    if (req.path == "/ui/" && req.query.empty()) co_return redirect("/ui/trunk");
    if (req.path == "/ui/trends") {
        ui::FormValues form;
        auto stats_op = ask(ctx, stats_daily_route, who->caller, {}, filters(req, {"days"}, form));
        auto stats = co_await std::move(stats_op);
        if (!stats) {
            if (stats.error().code != Errc::bad_request) co_return error_html(stats.error(), v);
            co_return html_response(400, ui::trends_page(json::object(), stats.error().message, v));
        }
        co_return html_response(200, ui::trends_page(*stats, "", v));
    }
    if (req.path == "/ui/trunk" || req.path == "/ui/tests" || req.path.rfind("/ui/tests/", 0) == 0)
        co_return co_await trunk_pages(ctx, req, who->caller, v, cfg.links);
    if (req.path == "/ui/" || req.path == "/ui/runs") {
        ui::FormValues form;
        std::string q = filters(
            req, {"state", "conclusion", "event", "sha", "pr", "since", "until", "limit", "cursor"},
            form);
        auto list_op = ask(ctx, list_runs_route, who->caller, {}, q);
        auto list = co_await std::move(list_op);
        if (!list) {
            if (list.error().code != Errc::bad_request) co_return error_html(list.error(), v);
            co_return html_response(
                400, ui::runs_page(json::object(), form, list.error().message, v, cfg.links));
        }
        co_return html_response(200, ui::runs_page(*list, form, "", v, cfg.links));
    }
    if (std::regex_match(req.path, m, k_run)) {
        auto run_op = ask(ctx, get_run_route, who->caller, {m[1].str()});
        auto run = co_await std::move(run_op);
        if (!run) co_return error_html(run.error(), v);
        ui::RunExtras extras;
        const auto done = req.query_param("done");
        if (done == "cancel") extras.notice = "Cancellation requested.";
        if (done == "retry")
            extras.notice = "Queued as a retry of run " + req.query_param("of").value_or("?") + ".";
        // The failing tests of every attempt that has some, and the log tail of each tier's
        // latest attempt that is running or did not pass.
        std::map<std::string, const json*> latest;
        for (const auto& j : (*run)["jobs"]) {
            const std::string tier = j.value("tier", "");
            if (!latest.count(tier) || latest[tier]->value("attempt", 0) < j.value("attempt", 0))
                latest[tier] = &j;
            if (j["tests"].value("failed", 0) > 0 && extras.failed_tests.size() < 8) {
                const std::string jid = std::to_string(j.value("id", std::int64_t{0}));
                auto tests_op =
                    ask(ctx, job_tests_route, who->caller, {jid}, "outcome=failed&limit=50");
                auto tests = co_await std::move(tests_op);
                if (tests) extras.failed_tests[j.value("id", std::int64_t{0})] = std::move(*tests);
            }
        }
        for (const auto& [tier, j] : latest) {
            const std::string conclusion = j->value("conclusion", json(nullptr)).is_string()
                                               ? (*j)["conclusion"].get<std::string>()
                                               : "";
            const bool show =
                j->value("state", "") == "running" ||
                (!conclusion.empty() && conclusion != "passed" && conclusion != "cancelled");
            if (!show || extras.log_tails.size() >= 4) continue;
            const std::int64_t jid = j->value("id", std::int64_t{0});
            auto tail_op = ask(ctx, job_log_route, who->caller, {std::to_string(jid)},
                               "tail=" + std::to_string(k_run_log_tail));
            auto tail = co_await std::move(tail_op);
            if (tail && tail->is_string()) extras.log_tails[jid] = tail->get<std::string>();
        }
        co_return html_response(200, ui::run_page(*run, extras, v, cfg.links));
    }
    if (std::regex_match(req.path, m, k_job)) {
        auto job_op = ask(ctx, get_job_route, who->caller, {m[1].str()});
        auto job = co_await std::move(job_op);
        if (!job) co_return error_html(job.error(), v);
        auto tests_op = ask(ctx, job_tests_route, who->caller, {m[1].str()}, "limit=200");
        auto tests = co_await std::move(tests_op);
        std::int64_t tail = k_job_log_tail;
        if (auto t = req.query_param("tail")) {
            try {
                tail = std::clamp<std::int64_t>(std::stoll(*t), 1, k_max_log_tail);
            } catch (const std::exception&) {
                tail = k_job_log_tail;
            }
        }
        auto log_op =
            ask(ctx, job_log_route, who->caller, {m[1].str()}, "tail=" + std::to_string(tail));
        auto log = co_await std::move(log_op);
        std::string log_text, log_problem;
        if (log && log->is_string())
            log_text = log->get<std::string>();
        else
            log_problem = log ? "no log" : log.error().message;
        co_return html_response(200, ui::job_page(*job, tests ? *tests : json::object(), log_text,
                                                  log_problem, tail, v, cfg.links));
    }
    if (req.path == "/ui/runners") {
        auto runners_op = ask(ctx, list_runners_route, who->caller, {});
        auto runners = co_await std::move(runners_op);
        if (!runners) co_return error_html(runners.error(), v);
        std::string notice;
        if (auto done = req.query_param("done"); done == "drain" || done == "undrain") {
            notice = "Slot " + req.query_param("slot").value_or("?") +
                     (*done == "drain" ? " drained." : " undrained.");
        }
        co_return html_response(200, ui::runners_page(*runners, notice, v));
    }
    static const std::regex k_build(R"(^/ui/builds/([0-9]{1,18})$)");
    if (req.path == "/ui/builds") {
        ui::FormValues form;
        std::string q = filters(req, {"state", "sha", "limit", "cursor"}, form);
        auto list_op = ask(ctx, list_builds_route, who->caller, {}, q);
        auto list = co_await std::move(list_op);
        if (!list) {
            if (list.error().code != Errc::bad_request) co_return error_html(list.error(), v);
            co_return html_response(
                400, ui::builds_page(json::object(), form, list.error().message, v, cfg.links));
        }
        co_return html_response(200, ui::builds_page(*list, form, "", v, cfg.links));
    }
    if (std::regex_match(req.path, m, k_build)) {
        auto build_op = ask(ctx, get_build_route, who->caller, {m[1].str()});
        auto build = co_await std::move(build_op);
        if (!build) co_return error_html(build.error(), v);
        const std::string notice =
            req.query_param("done") == "evict"
                ? "Evicted: its folder was removed; a run that needs it builds it again."
                : "";
        co_return html_response(200, ui::build_page(*build, notice, v, cfg.links));
    }
    if (req.path == "/ui/deliveries") {
        ui::FormValues form;
        std::string q = filters(req, {"verdict", "limit", "cursor"}, form);
        // The reporting lanes as GET /api/v1/outbox shows them (one row of the outbox read).
        auto outbox_op = ask(ctx, list_outbox_route, who->caller, {}, "limit=1");
        auto outbox = co_await std::move(outbox_op);
        if (!outbox) co_return error_html(outbox.error(), v);
        const json lanes = outbox->value("lanes", json::array());
        auto list_op = ask(ctx, list_deliveries_route, who->caller, {}, q);
        auto list = co_await std::move(list_op);
        if (!list) {
            if (list.error().code != Errc::bad_request) co_return error_html(list.error(), v);
            co_return html_response(
                400, ui::deliveries_page(lanes, json::object(), form, list.error().message, v));
        }
        co_return html_response(200, ui::deliveries_page(lanes, *list, form, "", v));
    }
    co_return html_response(404, ui::error_page(404, "no page " + req.path.substr(0, 200), v));
}

}  // namespace crcrd::admin
