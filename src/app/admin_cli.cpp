#include "crcrd/app/admin_cli.hpp"

#include <nlohmann/json.hpp>

#include <cctype>
#include <chrono>
#include <cstdint>
#include <ostream>
#include <thread>

#include "app/admin_tables.hpp"
#include "crcrd/core/files.hpp"
#include "crcrd/core/vocab.hpp"
#include "crcrd/http/client.hpp"

namespace crcrd::app {

using nlohmann::json;

namespace {

/// "one of a, b, c" from a vocabulary of core/vocab.hpp.
template <class E>
std::string one_of() {
    return "one of " + joined_names<E>(", ");
}

std::string url_encode(const std::string& s) {
    static const char* hex = "0123456789ABCDEF";
    std::string out;
    for (unsigned char c : s) {
        if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~' || c == ':') {
            out.push_back(static_cast<char>(c));
        } else {
            out += '%';
            out += hex[c >> 4];
            out += hex[c & 15];
        }
    }
    return out;
}

/// "?a=1&b=2" from the request's query parameters.
std::string query_string(const AdminRequest& req) {
    std::string q;
    for (const auto& [param, value] : req.query)
        q += (q.empty() ? "?" : "&") + param + "=" + url_encode(value);
    return q;
}

/// The admin API as crcrctl calls it: one request per call, the answer's failures printed and
/// turned into an exit code.
class Client {
  public:
    Client(const AdminCliOptions& o, std::ostream& err) : m_opts(o), m_err(err) {}

    /// The answer's body when it is a 2xx; prints why and sets exit_code() otherwise.
    std::optional<std::string> call(const std::string& method, const std::string& route,
                                    const std::string& body = "") {
        http::Headers headers;
        if (!body.empty()) headers.emplace_back("Content-Type", "application/json");
        if (m_opts.token_file) {
            auto token = read_file(*m_opts.token_file, 64 * 1024);
            if (!token) {
                m_err << "crcrctl: " << token.error().message << "\n";
                m_exit = k_exit_usage;
                return std::nullopt;
            }
            headers.emplace_back("Authorization", "Bearer " + trim(*token));
        }
        http::ClientOptions co;
        co.ca_file = m_opts.cacert;
        auto r = http::send(method, endpoint(m_opts.url, route), headers, body, co);
        if (!r) {
            m_err << "crcrctl: " << r.error().message << "\n";
            m_exit = exit_code_of_error(r.error().code);
            return std::nullopt;
        }
        if (r->status < 200 || r->status >= 300) {
            auto j = json::parse(r->body, nullptr, false);
            // The admin API answers {"error": code, "detail": why}.
            std::string msg = r->body;
            if (j.is_object())
                msg = text(j, "error") + (j.contains("detail") ? ": " + text(j, "detail") : "");
            m_err << "crcrctl: HTTP " << r->status << ": " << msg << "\n";
            if (r->status == 401 && !m_opts.token_file)
                m_err << "crcrctl: the admin API needs --token-file\n";
            // Every argument crcrctl passes on is the user's: the API refusing one is a usage
            // error.
            m_exit = r->status == 400 ? k_exit_usage : exit_code_of_status(r->status);
            return std::nullopt;
        }
        return r->body;
    }
    /// Why the last call() failed, as crcrctl's exit code.
    int exit_code() const { return m_exit; }

  private:
    const AdminCliOptions& m_opts;
    std::ostream& m_err;
    int m_exit = k_exit_failure;
};

/// `crcrctl recover`: starts a pass and waits (up to 2 minutes) for it to be recorded;
/// `recover --list`: the last passes.
int recover(const AdminRequest& req, Client& client, std::ostream& out, std::ostream& err) {
    auto get = [&]() -> std::optional<json> {
        auto body = client.call("GET", "/api/v1/recovery");
        if (!body) return std::nullopt;
        return json::parse(*body, nullptr, false);
    };
    auto show = [&](const json& page) {
        if (req.json)
            out << page.dump(2) << "\n";
        else
            print_passes(out, page);
    };
    auto before = get();
    if (!before) return client.exit_code();
    if (req.command == AdminCommand::recover_list) {
        show(*before);
        return k_exit_ok;
    }
    const std::int64_t last =
        (*before)["items"].empty() ? 0 : (*before)["items"][0].value("id", std::int64_t{0});
    if (!client.call("POST", "/api/v1/recovery/run")) return client.exit_code();
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(2);
    while (std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(
            std::chrono::milliseconds(250));  // polling the daemon, not a test
        auto now = get();
        if (!now) return client.exit_code();
        if (!(*now)["items"].empty() && (*now)["items"][0].value("id", std::int64_t{0}) > last) {
            json one = *now;
            one["items"] = json::array({(*now)["items"][0]});
            show(one);
            return (*now)["items"][0].value("errors", json::array()).empty() ? k_exit_ok
                                                                             : k_exit_failure;
        }
    }
    err << "crcrctl recover: the pass did not end within 2 minutes (see crcrctl recover --list)\n";
    return k_exit_failure;
}

const std::vector<QueryOption>& paging() {
    static const std::vector<QueryOption> k = {
        {"--limit", "limit", "N", "at most this many items (1-200, default 50)"},
        {"--cursor", "cursor", "CURSOR", "the next page: the cursor a previous page printed"},
    };
    return k;
}

std::vector<QueryOption> with_paging(std::vector<QueryOption> options) {
    options.insert(options.end(), paging().begin(), paging().end());
    return options;
}

}  // namespace

std::string endpoint(std::string base, const std::string& route) {
    while (!base.empty() && base.back() == '/') base.pop_back();
    // Only a path: "https://webhook" is a host of that name.
    const std::string webhook = "/webhook";
    const auto host = base.find("://");
    if (base.ends_with(webhook) && host != std::string::npos &&
        host + 3 < base.size() - webhook.size()) {
        base.resize(base.size() - webhook.size());
    }
    while (!base.empty() && base.back() == '/') base.pop_back();
    return base + route;
}

int exit_code_of_status(int status) {
    if (status >= 200 && status < 300) return k_exit_ok;
    if (status == 401 || status == 403) return k_exit_unauthorised;
    if (status == 404) return k_exit_not_found;
    return k_exit_failure;
}

int exit_code_of_error(Errc code) {
    return code == Errc::bad_url ? k_exit_usage : k_exit_unreachable;
}

std::span<const QueryOption> query_options(AdminCommand c) {
    static const std::vector<QueryOption> runs = with_paging({
        {"--state", "state", "STATE", one_of<RunState>()},
        {"--conclusion", "conclusion", "CLASS", "the run's class: " + one_of<Conclusion>()},
        {"--sha", "sha", "SHA", "the commit (40 hex digits)"},
        {"--pr", "pr", "N", "the pull request number"},
        {"--event", "event", "EVENT", one_of<RunEvent>()},
        {"--since", "since", "TIME",
         "created at or after this RFC 3339 time (or a UTC day, 2026-01-31)"},
        {"--until", "until", "TIME", "created before this RFC 3339 time"},
    });
    static const std::vector<QueryOption> deliveries =
        with_paging({{"--verdict", "verdict", "VERDICT", one_of<Verdict>()}});
    static const std::vector<QueryOption> outbox = with_paging({
        {"--state", "state", "STATE", "delivery state: " + one_of<OutboxDelivery>()},
        {"--sink", "sink", "SINK", one_of<Sink>()},
        {"--run,--run-id", "run_id", "ID", "rows of this run"},
    });
    static const std::vector<QueryOption> misses = with_paging({
        {"--run,--run-id", "run_id", "ID", "misses found by this scheduled run"},
        {"--test", "test", "TEST", "misses of this test id"},
    });
    static const std::vector<QueryOption> builds = with_paging({
        {"--state", "state", "STATE", one_of<BuildState>()},
        {"--sha", "sha", "SHA", "builds of this upstream commit (40 hex digits)"},
    });
    static const std::vector<QueryOption> trunk = with_paging({
        {"--ref", "ref", "BRANCH", "one of bisect.refs (default: the first)"},
    });
    static const std::vector<QueryOption> limit = {
        {"--limit", "limit", "N", "at most this many (1-200, default 50)"}};
    static const std::vector<QueryOption> days = {
        {"--days", "days", "N", "the last N UTC days, today included (1-366, default 30)"}};
    static const std::vector<QueryOption> log = {
        {"--tail", "tail", "BYTES", "only the last BYTES of the log"}};
    switch (c) {
        case AdminCommand::runs_list:
            return runs;
        case AdminCommand::deliveries_list:
            return deliveries;
        case AdminCommand::outbox_list:
            return outbox;
        case AdminCommand::misses:
            return misses;
        case AdminCommand::jobs_log:
            return log;
        case AdminCommand::builds_list:
            return builds;
        case AdminCommand::trunk:
            return trunk;
        case AdminCommand::tests_history:
        case AdminCommand::tests_flaky:
            return limit;
        case AdminCommand::stats:
            return days;
        default:
            return {};
    }
}

int admin_command(const AdminRequest& req, const AdminCliOptions& opts, std::ostream& out,
                  std::ostream& err) {
    Client client(opts, err);
    using Print = void (*)(std::ostream&, const json&);
    auto show = [&](const std::string& target, Print print) -> int {
        auto body = client.call("GET", target);
        if (!body) return client.exit_code();
        auto j = json::parse(*body, nullptr, false);
        if (req.json)
            out << j.dump(2) << "\n";
        else
            print(out, j);
        return k_exit_ok;
    };
    auto listing = [&](const std::string& route, Print print) {
        return show(route + query_string(req), print);
    };
    auto action = [&](const std::string& route, const std::string& body = "") -> int {
        auto answer = client.call("POST", route, body);
        if (!answer) return client.exit_code();
        out << json::parse(*answer, nullptr, false).dump() << "\n";
        return k_exit_ok;
    };
    const std::string id = url_encode(req.target);
    switch (req.command) {
        case AdminCommand::runs_list:
            return listing("/api/v1/runs", print_runs);
        case AdminCommand::runs_show:
            return listing("/api/v1/runs/" + id, print_run);
        case AdminCommand::runs_cancel:
            return action("/api/v1/runs/" + id + "/cancel");
        case AdminCommand::runs_retry:
            return action("/api/v1/runs/" + id + "/retry");
        case AdminCommand::runs_trigger: {
            json body = {{"sha", req.sha}};
            if (!req.tiers.empty()) body["tiers"] = req.tiers;
            return action("/api/v1/runs", body.dump());
        }
        case AdminCommand::jobs_log: {
            auto body = client.call("GET", "/api/v1/jobs/" + id + "/log" + query_string(req));
            if (!body) return client.exit_code();
            out << *body;
            return k_exit_ok;
        }
        case AdminCommand::runners_list:
            return listing("/api/v1/runners", print_runners);
        case AdminCommand::runners_drain:
            return action("/api/v1/runners/" + id + "/drain");
        case AdminCommand::runners_undrain:
            return action("/api/v1/runners/" + id + "/undrain");
        case AdminCommand::deliveries_list:
            return listing("/api/v1/deliveries", print_deliveries);
        case AdminCommand::outbox_list:
            return listing("/api/v1/outbox", print_outbox);
        case AdminCommand::outbox_retry:
            return action("/api/v1/outbox/" + id + "/retry");
        case AdminCommand::recover:
        case AdminCommand::recover_list:
            return recover(req, client, out, err);
        case AdminCommand::misses:
            return listing("/api/v1/selection-misses", print_misses);
        case AdminCommand::builds_list:
            return listing("/api/v1/builds", print_builds);
        case AdminCommand::builds_show:
            return listing("/api/v1/builds/" + id, print_build);
        case AdminCommand::builds_evict:
            return action("/api/v1/builds/" + id + "/evict");
        case AdminCommand::trunk:
            return listing("/api/v1/trunk", print_trunk);
        case AdminCommand::tests_history:
            return listing("/api/v1/tests/" + id + "/history", print_test_history);
        case AdminCommand::stats:
            return listing("/api/v1/stats/daily", print_stats);
        case AdminCommand::stats_rebuild:
            return action("/api/v1/stats/rebuild");
        case AdminCommand::tests_flaky: {
            AdminRequest flaky = req;
            flaky.query.emplace_back("flaky", "1");
            return show("/api/v1/tests" + query_string(flaky), print_flaky);
        }
    }
    err << "crcrctl: unknown admin command\n";
    return k_exit_usage;
}

}  // namespace crcrd::app
