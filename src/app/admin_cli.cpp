#include "crcrd/app/admin_cli.hpp"

#include <chrono>
#include <thread>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <map>
#include <ostream>
#include <set>

#include "crcrd/core/files.hpp"
#include "crcrd/http/client.hpp"

namespace crcrd::app {

using nlohmann::json;

namespace {

/// What one command line asked for: positional words, --name value options and flags.
struct Parsed {
    std::vector<std::string> words;
    std::map<std::string, std::string> options;
    std::vector<std::string> tiers;  // --tier, repeatable
    bool json = false;
};

/// Splits `args`; `with_value` lists the options that take a value. nullopt (and a message)
/// for anything else.
std::optional<Parsed> parse(const std::vector<std::string>& args, const std::set<std::string>& with_value, std::ostream& err) {
    Parsed p;
    for (std::size_t i = 0; i < args.size(); ++i) {
        const std::string& a = args[i];
        if (a == "--json") {
            p.json = true;
        } else if (a.rfind("--", 0) == 0) {
            std::string name = a.substr(2);
            if (name == "tier" && i + 1 < args.size()) {
                p.tiers.push_back(args[++i]);
                continue;
            }
            if (!with_value.count(name) || i + 1 >= args.size()) {
                err << "crcrctl: unexpected option '" << a << "'\n";
                return std::nullopt;
            }
            p.options[name] = args[++i];
        } else {
            p.words.push_back(a);
        }
    }
    return p;
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

/// "?a=1&b=2" from the options that are query parameters (renamed by `names`).
std::string query(const Parsed& p, const std::map<std::string, std::string>& names) {
    std::string q;
    for (const auto& [option, param] : names) {
        auto it = p.options.find(option);
        if (it == p.options.end()) continue;
        q += (q.empty() ? "?" : "&") + param + "=" + url_encode(it->second);
    }
    return q;
}

std::string text(const json& j, const char* key) {
    if (!j.contains(key) || j[key].is_null()) return "-";
    if (j[key].is_string()) return j[key].get<std::string>();
    return j[key].dump();
}

/// Prints rows under a header, each column as wide as its widest cell; the last column is
/// never padded (it holds free text).
void table(std::ostream& out, const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows) {
    std::vector<std::size_t> width(header.size());
    for (std::size_t c = 0; c < header.size(); ++c) width[c] = header[c].size();
    for (const auto& r : rows)
        for (std::size_t c = 0; c < r.size() && c < width.size(); ++c) width[c] = std::max(width[c], r[c].size());
    auto line = [&](const std::vector<std::string>& cells) {
        std::string s;
        for (std::size_t c = 0; c < cells.size(); ++c) {
            s += cells[c];
            if (c + 1 < cells.size()) s += std::string(width[c] - cells[c].size() + 2, ' ');
        }
        out << s << "\n";
    };
    line(header);
    for (const auto& r : rows) line(r);
}

class Client {
public:
    Client(const AdminCliOptions& o, std::ostream& err) : m_opts(o), m_err(err) {}

    /// The answer's body when it is a 2xx; prints the API's message and returns nullopt otherwise.
    std::optional<std::string> call(const std::string& method, const std::string& path, const std::string& body = "") {
        http::Headers headers;
        if (!body.empty()) headers.emplace_back("Content-Type", "application/json");
        if (m_opts.token_file) {
            auto token = read_file(*m_opts.token_file, 64 * 1024);
            if (!token) {
                m_err << "crcrctl: " << token.error().message << "\n";
                m_bad_args = true;
                return std::nullopt;
            }
            headers.emplace_back("Authorization", "Bearer " + trim(*token));
        }
        http::ClientOptions co;
        co.ca_file = m_opts.cacert;
        auto r = http::send(method, m_opts.url + path, headers, body, co);
        if (!r) {
            m_err << "crcrctl: " << r.error().message << "\n";
            return std::nullopt;
        }
        if (r->status < 200 || r->status >= 300) {
            auto j = json::parse(r->body, nullptr, false);
            // The admin API answers {"error": code, "detail": why}.
            std::string msg = r->body;
            if (j.is_object()) msg = text(j, "error") + (j.contains("detail") ? ": " + text(j, "detail") : "");
            m_err << "crcrctl: HTTP " << r->status << ": " << msg << "\n";
            if (r->status == 401 && !m_opts.token_file) m_err << "crcrctl: the admin API needs --token-file\n";
            return std::nullopt;
        }
        return r->body;
    }
    int failed() const { return m_bad_args ? 2 : 1; }

private:
    const AdminCliOptions& m_opts;
    std::ostream& m_err;
    bool m_bad_args = false;
};

void print_cursor(std::ostream& out, const json& page) {
    if (page.contains("next_cursor") && page["next_cursor"].is_string()) {
        out << "(more: --cursor " << page["next_cursor"].get<std::string>() << ")\n";
    }
}

void print_runs(std::ostream& out, const json& page) {
    std::vector<std::vector<std::string>> rows;
    for (const auto& r : page["items"]) {
        rows.push_back({text(r, "id"), text(r, "event"), text(r, "sha").substr(0, 12), text(r, "pr"), text(r, "state"),
                        text(r, "conclusion"), text(r, "created_at"), text(r, "reason")});
    }
    table(out, {"ID", "EVENT", "SHA", "PR", "STATE", "CLASS", "CREATED", "REASON"}, rows);
    print_cursor(out, page);
}

void print_run(std::ostream& out, const json& r) {
    out << "run " << text(r, "id") << "  " << text(r, "event") << "  sha " << text(r, "sha") << "  pr " << text(r, "pr")
        << "\n  " << text(r, "state") << " / " << text(r, "conclusion") << ": " << text(r, "reason") << "\n  created "
        << text(r, "created_at") << ", finished " << text(r, "finished_at") << "\n";
    if (r.contains("selection") && r["selection"].is_object()) {
        const auto& s = r["selection"];
        out << "  selection: source " << text(s, "source") << ", " << text(s, "changed_paths") << " changed paths";
        if (s.contains("tiers")) {
            out << ", tiers";
            for (const auto& t : s["tiers"]) out << " " << text(t, "name");
        }
        out << "\n";
    }
    out << "\n";
    std::vector<std::vector<std::string>> jobs;
    for (const auto& j : r.value("jobs", json::array())) {
        const json& t = j.value("tests", json::object());
        jobs.push_back({text(j, "id"), text(j, "tier"), text(j, "attempt"), text(j, "state"), text(j, "conclusion"),
                        text(j, "slot"),
                        text(t, "passed") + "/" + text(t, "failed") + "/" + text(t, "skipped") + "/" + text(t, "flaky"),
                        text(j, "reason")});
    }
    table(out, {"JOB", "TIER", "ATTEMPT", "STATE", "CLASS", "SLOT", "PASS/FAIL/SKIP/FLAKY", "REASON"}, jobs);
    std::vector<std::vector<std::string>> statuses;
    for (const auto& s : r.value("statuses", json::array())) {
        statuses.push_back({text(s, "sink"), text(s, "context"), text(s, "state"), text(s, "delivery"), text(s, "description")});
    }
    if (!statuses.empty()) {
        out << "\n";
        table(out, {"SINK", "CONTEXT", "STATE", "DELIVERY", "DESCRIPTION"}, statuses);
    }
    if (r.contains("bisection_of") && r["bisection_of"].is_object()) {
        out << "\nbisect run of run " << text(r["bisection_of"], "run_id") << " (tier " << text(r["bisection_of"], "tier") << ")\n";
    }
    if (r.contains("bisect") && r["bisect"].is_object()) {
        const json& b = r["bisect"];
        out << "\nbisection of " << text(b, "tier") << " (" << b.value("tests", json::array()).size() << " failing tests): "
            << text(b, "state") << ": " << text(b, "reason") << "\n  good " << text(b, "good") << " (run "
            << text(b, "good_run_id") << ")\n  bad  " << text(b, "bad") << " (run " << text(b, "bad_run_id") << "), "
            << text(b, "commits") << " commits\n  culprit " << text(b, "culprit") << "\n";
        std::vector<std::vector<std::string>> runs;
        for (const auto& x : b.value("runs", json::array()))
            runs.push_back({text(x, "run_id"), text(x, "sha"), text(x, "state"), text(x, "conclusion"), text(x, "verdict")});
        if (!runs.empty()) table(out, {"RUN", "SHA", "STATE", "CLASS", "VERDICT"}, runs);
    }
}

void print_passes(std::ostream& o, const json& page) {
    std::vector<std::vector<std::string>> rows;
    for (const auto& r : page["items"]) {
        rows.push_back({text(r, "id"), text(r, "started_at"), text(r, "since"), text(r, "listed"), text(r, "failed"),
                        text(r, "redelivered"), r.value("errors", json::array()).empty() ? "-" : r["errors"].dump()});
    }
    table(o, {"PASS", "STARTED", "SINCE", "LISTED", "FAILED", "REDELIVERED", "ERRORS"}, rows);
    o << "watermark: " << text(page, "watermark") << "\n";
}

/// Selection misses (CONTRACT.md §5.3): the test, and of the commits in between how many, the
/// rules their paths matched and the first few SHAs.
void print_misses(std::ostream& o, const json& page) {
    std::vector<std::vector<std::string>> rows;
    for (const auto& m : page["items"]) {
        const json& commits = m.value("commits", json::array());
        std::set<std::string> rules;
        std::string shas;
        std::size_t shown = 0;
        for (const auto& c : commits) {
            for (const auto& r : c.value("rules", json::array()))
                if (r.is_string()) rules.insert(r.get<std::string>());
            if (shown++ < 3) shas += (shas.empty() ? "" : " ") + text(c, "sha").substr(0, 9);
        }
        if (commits.size() > 3) shas += " ...";
        std::string matched;
        for (const auto& r : rules) matched += (matched.empty() ? "" : ",") + r;
        rows.push_back({text(m, "id"), text(m, "run_id"), text(m, "test"), text(m, "tier"), std::to_string(commits.size()),
                        matched.empty() ? "-" : matched, shas.empty() ? "-" : shas});
    }
    table(o, {"ID", "RUN", "TEST", "TIER", "COMMITS", "RULES MATCHED", "FIRST COMMITS"}, rows);
    print_cursor(o, page);
}

/// `crcrctl recover`: starts a pass and waits (up to 2 minutes) for it to be recorded.
int recover(const std::vector<std::string>& args, const AdminCliOptions& opts, std::ostream& out, std::ostream& err) {
    bool list = false, as_json = false;
    for (const auto& a : args) {
        if (a == "--list") list = true;
        else if (a == "--json") as_json = true;
        else {
            err << "crcrctl recover: unexpected argument '" << a << "'\nusage:\n" << admin_usage();
            return 2;
        }
    }
    Client client(opts, err);
    auto get = [&]() -> std::optional<json> {
        auto body = client.call("GET", "/api/v1/recovery");
        if (!body) return std::nullopt;
        return json::parse(*body, nullptr, false);
    };
    auto before = get();
    if (!before) return client.failed();
    auto show = [&](const json& page) {
        if (as_json) out << page.dump(2) << "\n";
        else print_passes(out, page);
    };
    if (list) {
        show(*before);
        return 0;
    }
    const std::int64_t last = (*before)["items"].empty() ? 0 : (*before)["items"][0].value("id", std::int64_t{0});
    if (!client.call("POST", "/api/v1/recovery/run")) return client.failed();
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(2);
    while (std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(250));  // polling the daemon, not a test
        auto now = get();
        if (!now) return client.failed();
        if (!(*now)["items"].empty() && (*now)["items"][0].value("id", std::int64_t{0}) > last) {
            json one = *now;
            one["items"] = json::array({(*now)["items"][0]});
            show(one);
            return (*now)["items"][0].value("errors", json::array()).empty() ? 0 : 1;
        }
    }
    err << "crcrctl recover: the pass did not end within 2 minutes (see crcrctl recover --list)\n";
    return 1;
}

}  // namespace

bool is_admin_command(const std::string& group) {
    return group == "runs" || group == "jobs" || group == "runners" || group == "deliveries" || group == "outbox" ||
           group == "recover" || group == "misses";
}

const char* admin_usage() {
    return "  runs list [--state S] [--conclusion C] [--sha SHA] [--pr N] [--event E] [--since T] [--until T]\n"
           "            [--limit N] [--cursor C] [--json]\n"
           "  runs show ID [--json] | runs cancel ID | runs retry ID\n"
           "  runs trigger --sha SHA [--tier NAME]...   a manual run (every tier when none is named)\n"
           "  jobs log ID [--tail BYTES]\n"
           "  runners list [--json] | runners drain NAME | runners undrain NAME\n"
           "  deliveries list [--verdict V] [--limit N] [--cursor C] [--json]\n"
           "  outbox list [--state waiting|sent|dead|coalesced] [--sink S] [--run ID] [--limit N] [--cursor C] [--json]\n"
           "  outbox retry ID\n"
           "  misses [--run ID] [--test NAME] [--limit N] [--cursor C] [--json]\n"
           "                              scheduled-run failures no PR or push run selected\n"
           "  recover [--list] [--json]   a missed-delivery recovery pass now, printed when it ended\n"
           "                              (--list: the last passes)\n"
           "       admin commands take [--url URL] [--token-file F] [--cacert F] before the command\n";
}

int admin_command(const std::string& group, const std::vector<std::string>& args, const AdminCliOptions& opts,
                  std::ostream& out, std::ostream& err) {
    const std::set<std::string> valued = {"state", "conclusion", "sha", "pr", "event", "since", "until", "limit",
                                          "cursor", "verdict", "sink", "run", "tail", "test"};
    if (group == "recover") return recover(args, opts, out, err);
    auto p = parse(args, valued, err);
    if (group == "misses" && p && p->words.empty() && p->tiers.empty()) {
        // A listing without an action word, like `recover`.
        const std::set<std::string> known = {"limit", "cursor", "run", "test"};
        for (const auto& [name, value] : p->options) {
            if (!known.count(name)) {
                err << "crcrctl misses: unexpected option '--" << name << "'\nusage:\n" << admin_usage();
                return 2;
            }
        }
        Client client(opts, err);
        auto body = client.call("GET", "/api/v1/selection-misses" +
                                           query(*p, {{"limit", "limit"}, {"cursor", "cursor"}, {"run", "run_id"}, {"test", "test"}}));
        if (!body) return client.failed();
        auto j = json::parse(*body, nullptr, false);
        if (p->json) out << j.dump(2) << "\n";
        else print_misses(out, j);
        return 0;
    }
    if (!p || p->words.empty()) {
        if (p) err << "crcrctl " << group << ": which action?\n";
        err << "usage:\n" << admin_usage();
        return 2;
    }
    const std::string action = p->words[0];
    const std::string id = p->words.size() > 1 ? p->words[1] : "";
    Client client(opts, err);
    auto listing = [&](const std::string& path, const std::map<std::string, std::string>& params,
                       void (*print)(std::ostream&, const json&)) -> int {
        auto body = client.call("GET", path + query(*p, params));
        if (!body) return client.failed();
        auto j = json::parse(*body, nullptr, false);
        if (p->json || !print) {
            out << j.dump(2) << "\n";
        } else {
            print(out, j);
        }
        return 0;
    };
    auto action_on = [&](const std::string& path, const std::string& request = "") -> int {
        auto body = client.call("POST", path, request);
        if (!body) return client.failed();
        out << json::parse(*body, nullptr, false).dump() << "\n";
        return 0;
    };
    auto need_id = [&]() {
        if (!id.empty()) return true;
        err << "crcrctl " << group << " " << action << ": which one?\n";
        return false;
    };
    const std::map<std::string, std::string> paging = {{"limit", "limit"}, {"cursor", "cursor"}};
    if (group == "runs" && action == "list") {
        auto params = paging;
        for (const char* k : {"state", "conclusion", "sha", "pr", "event", "since", "until"}) params[k] = k;
        return listing("/api/v1/runs", params, print_runs);
    }
    if (group == "runs" && action == "show") return need_id() ? listing("/api/v1/runs/" + url_encode(id), {}, print_run) : 2;
    if (group == "runs" && action == "cancel") return need_id() ? action_on("/api/v1/runs/" + url_encode(id) + "/cancel") : 2;
    if (group == "runs" && action == "retry") return need_id() ? action_on("/api/v1/runs/" + url_encode(id) + "/retry") : 2;
    if (group == "runs" && action == "trigger") {
        auto sha = p->options.find("sha");
        if (sha == p->options.end()) {
            err << "crcrctl runs trigger: --sha is required\n";
            return 2;
        }
        json request = {{"sha", sha->second}};
        if (!p->tiers.empty()) request["tiers"] = p->tiers;
        return action_on("/api/v1/runs", request.dump());
    }
    if (group == "jobs" && action == "log") {
        if (!need_id()) return 2;
        auto body = client.call("GET", "/api/v1/jobs/" + url_encode(id) + "/log" + query(*p, {{"tail", "tail"}}));
        if (!body) return client.failed();
        out << *body;
        return 0;
    }
    if (group == "runners" && action == "list") {
        return listing("/api/v1/runners", {}, [](std::ostream& o, const json& page) {
            std::vector<std::vector<std::string>> rows;
            for (const auto& r : page["items"]) {
                const json& h = r.value("last_health", json(nullptr));
                std::string health = h.is_object() ? (h.value("ok", false) ? "ok " : "FAILED ") + text(h, "at") : "-";
                rows.push_back({text(r, "name"), text(r, "state"), r.value("labels", json::array()).dump(), text(r, "job_id"), health});
            }
            table(o, {"NAME", "STATE", "LABELS", "JOB", "LAST HEALTH"}, rows);
            // The Slurm executor: the partition's nodes as Slurm sees them.
            if (const auto& c = page.value("cluster", json(nullptr)); c.is_object()) {
                o << "\nSlurm partition " << text(c, "partition") << ":\n";
                if (c.contains("error") && !c["error"].is_null()) o << "  cannot ask Slurm: " << text(c, "error") << "\n";
                std::vector<std::vector<std::string>> nodes;
                for (const auto& n : c.value("nodes", json::array()))
                    nodes.push_back({text(n, "name"), text(n, "state"), text(n, "gres"), text(n, "gres_used"), text(n, "reason")});
                table(o, {"NODE", "STATE", "GRES", "GRES USED", "REASON"}, nodes);
            }
        });
    }
    if (group == "runners" && (action == "drain" || action == "undrain")) {
        return need_id() ? action_on("/api/v1/runners/" + url_encode(id) + "/" + action) : 2;
    }
    if (group == "deliveries" && action == "list") {
        auto params = paging;
        params["verdict"] = "verdict";
        return listing("/api/v1/deliveries", params, [](std::ostream& o, const json& page) {
            std::vector<std::vector<std::string>> rows;
            for (const auto& d : page["items"]) {
                rows.push_back({text(d, "id"), text(d, "received_at"), text(d, "delivery_id"), text(d, "event"),
                                text(d, "verdict"), text(d, "http_status"), text(d, "run_id"), text(d, "reason")});
            }
            table(o, {"ID", "RECEIVED", "DELIVERY", "EVENT", "VERDICT", "HTTP", "RUN", "REASON"}, rows);
            print_cursor(o, page);
        });
    }
    if (group == "outbox" && action == "list") {
        auto params = paging;
        params["state"] = "state";
        params["sink"] = "sink";
        params["run"] = "run_id";
        return listing("/api/v1/outbox", params, [](std::ostream& o, const json& page) {
            std::vector<std::vector<std::string>> rows;
            for (const auto& r : page["items"]) {
                std::string note = text(r, "last_error");
                if (note == "-") note = text(r, "description");
                rows.push_back({text(r, "id"), text(r, "run_id"), text(r, "sink"), text(r, "context"), text(r, "state"),
                                text(r, "delivery"), text(r, "attempts"), note});
            }
            table(o, {"ID", "RUN", "SINK", "CONTEXT", "STATE", "DELIVERY", "ATTEMPTS", "DESCRIPTION / LAST ERROR"}, rows);
            print_cursor(o, page);
        });
    }
    if (group == "outbox" && action == "retry") return need_id() ? action_on("/api/v1/outbox/" + url_encode(id) + "/retry") : 2;
    err << "crcrctl: unknown command '" << group << " " << action << "'\nusage:\n" << admin_usage();
    return 2;
}

}  // namespace crcrd::app
