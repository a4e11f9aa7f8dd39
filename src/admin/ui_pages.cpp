#include "ui_pages.hpp"

#include <set>
#include <span>
#include <string_view>

#include "crcrd/core/units.hpp"
#include "crcrd/core/vocab.hpp"
#include "ui_parts.hpp"

namespace crcrd::admin::ui {

using html::esc;
using nlohmann::json;

std::string str(const json& j, const char* key) {
    auto it = j.find(key);
    return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

std::string run_link(const json& id) {
    if (!id.is_number_integer()) return html::text(id);
    return "<a href=\"/ui/runs/" + std::to_string(id.get<std::int64_t>()) + "\">" +
           std::to_string(id.get<std::int64_t>()) + "</a>";
}

std::string job_link(const json& id) {
    if (!id.is_number_integer()) return html::text(id);
    return "<a href=\"/ui/jobs/" + std::to_string(id.get<std::int64_t>()) + "\">" +
           std::to_string(id.get<std::int64_t>()) + "</a>";
}

std::string pr_link(const json& pr, const Links& links) {
    if (!pr.is_number_integer()) return "—";
    std::string n = std::to_string(pr.get<std::int64_t>());
    if (links.pr_url.empty()) return "#" + n;
    return "<a href=\"" + esc(links.pr_url + n) + "\">#" + n + "</a>";
}

/// A select of `names` (plus "any") with `current` chosen.
std::string select(const char* name, const char* label, std::span<const std::string_view> names,
                   const FormValues& form) {
    auto it = form.find(name);
    const std::string current = it == form.end() ? "" : it->second;
    std::string out = std::string("<label>") + label + "<select name=\"" + name +
                      "\"><option value=\"\">any</option>";
    for (auto n : names) {
        out +=
            "<option" + std::string(current == n ? " selected" : "") + ">" + esc(n) + "</option>";
    }
    return out + "</select></label>";
}

std::string input(const char* name, const char* label, const FormValues& form,
                  const char* placeholder) {
    auto it = form.find(name);
    return std::string("<label>") + label + "<input name=\"" + name + "\" value=\"" +
           esc(it == form.end() ? "" : it->second) + "\" placeholder=\"" + placeholder +
           "\"></label>";
}

/// The link to the next page: the form's values and `cursor`.
std::string pager(const std::string& base, const json& list, const FormValues& form) {
    const json& next = list.value("next_cursor", json(nullptr));
    if (!next.is_string()) return "";
    std::string q;
    for (const auto& [k, v] : form) {
        if (k != "cursor" && !v.empty()) q += html::url_encode(k) + "=" + html::url_encode(v) + "&";
    }
    q += "cursor=" + html::url_encode(next.get<std::string>());
    return "<p class=\"pager\"><a href=\"" + esc(base + "?" + q) + "\">Older →</a></p>";
}

std::string problem_box(const std::string& problem) {
    return problem.empty() ? "" : "<p class=\"problem\">" + esc(problem) + "</p>";
}

std::string notice_box(const std::string& notice) {
    return notice.empty() ? "" : "<p class=\"notice\">" + esc(notice) + "</p>";
}

namespace {

/// A lane's budget: per window "used / requests per length", then "left"; "spent" when the next
/// request waits for it, and the progress updates its reserve held back.
std::string lane_budget(const json& lane) {
    std::string out;
    for (const auto& w : lane.value("budget", json::array())) {
        const auto per = std::chrono::round<Duration>(
            std::chrono::duration<double>(w.value("per_seconds", 0.0)));
        out += "<div>" + html::text(w.value("used", json(nullptr))) + " used, " +
               html::text(w.value("left", json(nullptr))) + " left of " +
               html::text(w.value("requests", json(nullptr))) + " per " + format_seconds(per, " ") +
               "</div>";
    }
    if (out.empty()) out = "—";
    if (lane.value("budget_spent", false) == true) out += html::badge("budget_spent");
    if (const json& held = lane.value("held_back", json(0)); held.is_number() && held != 0)
        out += "<div class=\"muted\">" + html::text(held) + " held back by their share</div>";
    return out;
}

/// The reporting lanes (GET /api/v1/outbox's "lanes"), one row per sink.
std::string lanes_table(const json& lanes) {
    std::string out = "<h2>Reporting lanes</h2>";
    if (!lanes.is_array() || lanes.empty()) return out + "<p class=\"muted\">No lanes.</p>";
    out +=
        "<table class=\"lanes\"><tr><th>sink</th><th>waiting</th><th>dead</th><th>budget</th>"
        "<th>paused until</th><th>next send</th><th>oldest waiting final</th><th>last "
        "error</th></tr>";
    for (const auto& l : lanes) {
        const bool configured = l.value("configured", false) == true;
        const json& waiting = l.value("waiting", json(nullptr));
        const bool waits = waiting.is_number() && waiting != 0;
        const json& paused = l.value("paused_until", json(nullptr));
        out += "<tr><td>" + html::text(l.value("sink", json(nullptr))) +
               (configured ? "" : " <span class=\"muted\">(not configured)</span>") + "</td><td>" +
               html::text(waiting) + "</td><td>" + html::text(l.value("dead", json(nullptr))) +
               "</td><td>" + (configured ? lane_budget(l) : "—") + "</td><td>" +
               (paused.is_string() ? html::badge("paused") + " " + html::when(paused) : "—") +
               "</td><td>" + (waits ? html::when(l.value("next_send_at", json(nullptr))) : "—") +
               "</td><td>" + html::when(l.value("oldest_final_waiting_at", json(nullptr))) +
               "</td><td class=\"reason\">" + html::text(l.value("last_error", json(nullptr))) +
               "</td></tr>";
    }
    return out + "</table>";
}

/// Any JSON value readably: objects as definition lists, arrays of objects as tables, run ids
/// and SHAs as links. `depth` bounds the nesting.
std::string value_html(const std::string& key, const json& v, const Links& links, int depth = 0) {
    if (depth > 4) return html::pre(v.dump());
    if (v.is_object()) {
        if (v.empty()) return "—";
        std::string out = "<dl class=\"facts\">";
        for (auto it = v.begin(); it != v.end(); ++it) {
            out += "<dt>" + esc(it.key()) + "</dt><dd>" +
                   value_html(it.key(), it.value(), links, depth + 1) + "</dd>";
        }
        return out + "</dl>";
    }
    if (v.is_array()) {
        if (v.empty()) return "—";
        bool objects = true;
        std::vector<std::string> cols;
        std::set<std::string> seen;
        for (const auto& e : v) {
            if (!e.is_object()) {
                objects = false;
                break;
            }
            for (auto it = e.begin(); it != e.end(); ++it)
                if (seen.insert(it.key()).second) cols.push_back(it.key());
        }
        if (!objects) {
            std::string out = "<ul>";
            for (const auto& e : v) out += "<li>" + value_html(key, e, links, depth + 1) + "</li>";
            return out + "</ul>";
        }
        std::string out = "<table><tr>";
        for (const auto& c : cols) out += "<th>" + esc(c) + "</th>";
        out += "</tr>";
        for (const auto& e : v) {
            out += "<tr>";
            for (const auto& c : cols)
                out +=
                    "<td>" + (e.contains(c) ? value_html(c, e[c], links, depth + 1) : "") + "</td>";
            out += "</tr>";
        }
        return out + "</table>";
    }
    if ((key == "run_id" || key.ends_with("_run_id")) && v.is_number_integer()) return run_link(v);
    if (key == "job_id" && v.is_number_integer()) return job_link(v);
    if ((key == "sha" || key.ends_with("_sha") || key == "good" || key == "bad" ||
         key == "culprit") &&
        v.is_string() && v.get<std::string>().size() == 40) {
        return html::sha_link(v, links.commit_url);
    }
    return html::text(v);
}

std::string counts(const json& tests) {
    auto n = [&](const char* k) { return std::to_string(tests.value(k, 0)); };
    return n("passed") + " / " + n("failed") + " / " + n("skipped") + " / " + n("flaky");
}

std::string selection_html(const json& sel) {
    if (!sel.is_object()) return "<p class=\"muted\">No selection was recorded.</p>";
    std::string out = "<dl class=\"facts\"><dt>source</dt><dd>" +
                      html::text(sel.value("source", json(nullptr))) +
                      "</dd><dt>changed paths</dt><dd>" +
                      html::text(sel.value("changed_paths", json(nullptr))) + "</dd>";
    out += "<dt>rules matched</dt><dd>";
    const json rules = sel.value("rules", json::array());
    if (rules.empty()) out += "none";
    for (const auto& r : rules) {
        out += "<div><strong>" + html::text(r.value("name", json(""))) + "</strong>";
        const json paths = r.value("paths", json::array());
        std::size_t shown = 0;
        for (const auto& p : paths) {
            if (shown++ == 10) {
                out += " <span class=\"muted\">and " + std::to_string(paths.size() - 10) +
                       " more</span>";
                break;
            }
            out += " <code>" + html::text(p) + "</code>";
        }
        out += "</div>";
    }
    out += "</dd><dt>tiers</dt><dd>";
    const json tiers = sel.value("tiers", json::array());
    if (tiers.empty()) out += "none";
    for (const auto& t : tiers) {
        out += "<div><strong>" + html::text(t.value("name", json(""))) +
               "</strong>: " + html::text(t.value("reason", json(""))) + "</div>";
    }
    return out + "</dd></dl>";
}

std::string bisection_html(const json& b, const Links& links) {
    std::string out = "<h2>Bisection</h2><dl class=\"facts\"><dt>state</dt><dd>" +
                      html::badge(b.value("state", json(nullptr))) + " " +
                      html::text(b.value("reason", json(""))) + "</dd><dt>tier</dt><dd>" +
                      html::text(b.value("tier", json(""))) + "</dd><dt>culprit</dt><dd>" +
                      html::sha_link(b.value("culprit", json(nullptr)), links.commit_url) +
                      "</dd><dt>good</dt><dd>" +
                      html::sha_link(b.value("good", json(nullptr)), links.commit_url) + " (run " +
                      run_link(b.value("good_run_id", json(nullptr))) + ")</dd><dt>bad</dt><dd>" +
                      html::sha_link(b.value("bad", json(nullptr)), links.commit_url) + " (run " +
                      run_link(b.value("bad_run_id", json(nullptr))) +
                      ")</dd><dt>commits</dt><dd>" + html::text(b.value("commits", json(nullptr))) +
                      "</dd><dt>tests</dt><dd>" +
                      value_html("tests", b.value("tests", json::array()), links) + "</dd></dl>";
    out +=
        "<table><tr><th>run</th><th>commit</th><th>state</th><th>class</th><th>verdict</th></tr>";
    for (const auto& r : b.value("runs", json::array())) {
        out += "<tr><td>" + run_link(r.value("run_id", json(nullptr))) + "</td><td>" +
               html::sha_link(r.value("sha", json(nullptr)), links.commit_url) + "</td><td>" +
               html::badge(r.value("state", json(nullptr))) + "</td><td>" +
               html::badge(r.value("conclusion", json(nullptr))) + "</td><td>" +
               html::text(r.value("verdict", json(nullptr))) + "</td></tr>";
    }
    return out + "</table>";
}

/// The tests of a job's page or of a run's failing-tests section.
std::string tests_table(const json& items, bool with_outcome) {
    std::string out = "<table><tr><th>test</th>" +
                      std::string(with_outcome ? "<th>outcome</th>" : "") +
                      "<th>duration</th><th>message</th></tr>";
    for (const auto& t : items) {
        std::string message = str(t, "message");
        if (message.size() > 600) message = message.substr(0, 600) + "…";
        out += "<tr><td>" + test_link(t.value("name", json(""))) + "</td>" +
               (with_outcome ? "<td>" + html::badge(t.value("outcome", json(nullptr))) + "</td>"
                             : "") +
               "<td>" + html::text(t.value("duration_s", json(nullptr))) +
               " s</td><td class=\"reason\">" + esc(message) + "</td></tr>";
    }
    return out + "</table>";
}

}  // namespace

std::string runs_page(const json& list, const FormValues& form, const std::string& problem,
                      const html::Viewer& v, const Links& links) {
    std::string body =
        "<h1>Runs</h1><form class=\"filters\" method=\"get\" action=\"/ui/runs\">" +
        select("state", "state", names<RunState>(), form) +
        select("conclusion", "class", names<Conclusion>(), form) +
        select("event", "event", names<RunEvent>(), form) + input("sha", "SHA", form, "40 hex") +
        input("pr", "PR", form) + input("since", "since", form, "2026-12-01T00:00:00Z") +
        input("until", "until", form) +
        "<button type=\"submit\">Filter</button> <a href=\"/ui/runs\">clear</a></form>";
    body += problem_box(problem);
    const json items = list.value("items", json::array());
    if (items.empty()) {
        body += "<p class=\"muted\">No runs.</p>";
    } else {
        body +=
            "<table "
            "class=\"runs\"><tr><th>run</th><th>event</th><th>ref</th><th>PR</th><th>SHA</"
            "th><th>state</th>"
            "<th>class</th><th>reason</th><th>created</th><th>finished</th></tr>";
        for (const auto& r : items) {
            body += "<tr><td>" + run_link(r.value("id", json(nullptr))) + "</td><td>" +
                    html::text(r.value("event", json(""))) + "</td><td>" +
                    html::text(r.value("ref", json(nullptr))) + "</td><td>" +
                    pr_link(r.value("pr", json(nullptr)), links) + "</td><td>" +
                    html::sha_link(r.value("sha", json(nullptr)), links.commit_url) + "</td><td>" +
                    html::badge(r.value("state", json(nullptr))) + "</td><td>" +
                    html::badge(r.value("conclusion", json(nullptr))) +
                    "</td><td class=\"reason\">" + html::text(r.value("reason", json(nullptr))) +
                    "</td><td>" + html::when(r.value("created_at", json(nullptr))) + "</td><td>" +
                    html::when(r.value("finished_at", json(nullptr))) + "</td></tr>";
        }
        body += "</table>";
    }
    body += pager("/ui/runs", list, form);
    return html::page("Runs", "Runs", body, v);
}

std::string run_page(const json& run, const RunExtras& extras, const html::Viewer& v,
                     const Links& links) {
    const std::string id = std::to_string(run.value("id", std::int64_t{0}));
    const std::string state = str(run, "state");
    std::string body = "<h1>Run " + id + " " + html::badge(run.value("state", json(nullptr))) +
                       " " + html::badge(run.value("conclusion", json(nullptr))) + "</h1>" +
                       notice_box(extras.notice);
    body += "<dl class=\"facts\"><dt>reason</dt><dd>" +
            html::text(run.value("reason", json(nullptr))) + "</dd><dt>event</dt><dd>" +
            html::text(run.value("event", json(nullptr))) + "</dd><dt>commit</dt><dd>" +
            html::sha_link(run.value("sha", json(nullptr)), links.commit_url) + " <code>" +
            html::text(run.value("sha", json(nullptr))) + "</code></dd><dt>ref</dt><dd>" +
            html::text(run.value("ref", json(nullptr))) + "</dd><dt>PR</dt><dd>" +
            pr_link(run.value("pr", json(nullptr)), links) + "</dd><dt>base</dt><dd>" +
            html::sha_link(run.value("base_sha", json(nullptr)), links.commit_url) + " " +
            html::text(run.value("base_ref", json(nullptr))) + "</dd><dt>delivery</dt><dd>" +
            html::text(run.value("delivery_id", json(nullptr))) + "</dd><dt>created</dt><dd>" +
            html::when(run.value("created_at", json(nullptr))) + "</dd><dt>finished</dt><dd>" +
            html::when(run.value("finished_at", json(nullptr))) + "</dd>";
    if (run.contains("bisection_of")) {
        const json& of = run["bisection_of"];
        body += "<dt>bisecting</dt><dd>tier " + html::text(of.value("tier", json(""))) +
                " of run " + run_link(of.value("run_id", json(nullptr))) + "</dd>";
    }
    body += "</dl>";
    if (v.admin) {
        body += "<p>";
        if (state == "queued" || state == "running")
            body += html::action_form("/ui/runs/" + id + "/cancel", "Cancel run", v, "danger");
        if (state == "completed" || state == "cancelled")
            body += html::action_form("/ui/runs/" + id + "/retry", "Retry run", v);
        body += "</p>";
    }
    body += "<h2>Selection</h2>" + selection_html(run.value("selection", json(nullptr)));

    const json jobs = run.value("jobs", json::array());
    body += "<h2>Tiers</h2>";
    if (jobs.empty())
        body += "<p class=\"muted\">No jobs.</p>";
    else {
        body +=
            "<table><tr><th>tier</th><th>attempt</th><th>job</th><th>state</th><th>class</"
            "th><th>reason</th><th>slot</th>"
            "<th>passed / failed / skipped / flaky</th><th>started</th><th>finished</th></tr>";
        for (const auto& j : jobs) {
            body += "<tr><td>" + html::text(j.value("tier", json(""))) + "</td><td>" +
                    html::text(j.value("attempt", json(nullptr))) + "</td><td>" +
                    job_link(j.value("id", json(nullptr))) + "</td><td>" +
                    html::badge(j.value("state", json(nullptr))) + "</td><td>" +
                    html::badge(j.value("conclusion", json(nullptr))) +
                    "</td><td class=\"reason\">" + html::text(j.value("reason", json(nullptr))) +
                    "</td><td>" + html::text(j.value("slot", json(nullptr))) + "</td><td>" +
                    counts(j.value("tests", json::object())) + "</td><td>" +
                    html::when(j.value("started_at", json(nullptr))) + "</td><td>" +
                    html::when(j.value("finished_at", json(nullptr))) + "</td></tr>";
        }
        body += "</table>";
    }
    for (const auto& j : jobs) {
        const std::int64_t jid = j.value("id", std::int64_t{0});
        auto ft = extras.failed_tests.find(jid);
        if (ft != extras.failed_tests.end() && !ft->second.value("items", json::array()).empty()) {
            body += "<h2>Failing tests: " + html::text(j.value("tier", json(""))) + ", attempt " +
                    html::text(j.value("attempt", json(nullptr))) + " (job " + job_link(j["id"]) +
                    ")</h2>" + tests_table(ft->second["items"], false);
        }
        // What the classifier kept (pre-existing lookups, reruns, device lines), for the
        // attempts that did not pass; unset and false fields left out.
        json evidence = j.value("evidence", json(nullptr));
        if (evidence.is_object()) {
            for (auto it = evidence.begin(); it != evidence.end();) {
                it = it->is_null() || *it == false || (it->is_array() && it->empty())
                         ? evidence.erase(it)
                         : std::next(it);
            }
        }
        if (evidence.is_object() && !evidence.empty() && str(j, "conclusion") != "passed") {
            body += "<h2>Evidence: " + html::text(j.value("tier", json(""))) + ", attempt " +
                    html::text(j.value("attempt", json(nullptr))) + "</h2>" +
                    value_html("evidence", evidence, links);
        }
    }
    if (run.contains("bisect")) body += bisection_html(run["bisect"], links);
    for (const auto& [jid, tail] : extras.log_tails) {
        body += "<h2>Log tail: job " + job_link(jid) + "</h2>" + html::pre(tail);
    }
    body += "<h2>Statuses</h2>";
    const json statuses = run.value("statuses", json::array());
    if (statuses.empty())
        body += "<p class=\"muted\">No statuses.</p>";
    else {
        body +=
            "<table><tr><th>context</th><th>state</th><th>description</th><th>delivery</th></tr>";
        for (const auto& s : statuses) {
            body += "<tr><td><code>" + html::text(s.value("context", json(""))) +
                    "</code></td><td>" + html::badge(s.value("state", json(nullptr))) +
                    "</td><td class=\"reason\">" +
                    html::text(s.value("description", json(nullptr))) + "</td><td>" +
                    html::badge(s.value("delivery", json(nullptr))) + "</td></tr>";
        }
        body += "</table>";
    }
    return html::page("Run " + id, "Runs", body, v);
}

std::string job_page(const json& job, const json& tests, const std::string& log,
                     const std::string& log_problem, std::int64_t tail, const html::Viewer& v,
                     const Links& links) {
    const std::string id = std::to_string(job.value("id", std::int64_t{0}));
    std::string body = "<h1>Job " + id + ": " + html::text(job.value("tier", json(""))) +
                       ", attempt " + html::text(job.value("attempt", json(nullptr))) + " " +
                       html::badge(job.value("state", json(nullptr))) + " " +
                       html::badge(job.value("conclusion", json(nullptr))) + "</h1>";
    body += "<dl class=\"facts\"><dt>run</dt><dd>" + run_link(job.value("run_id", json(nullptr))) +
            "</dd><dt>reason</dt><dd>" + html::text(job.value("reason", json(nullptr))) +
            "</dd><dt>slot</dt><dd>" + html::text(job.value("slot", json(nullptr))) +
            "</dd><dt>exit status</dt><dd>" + html::text(job.value("exit_status", json(nullptr))) +
            "</dd><dt>timeout</dt><dd>" + html::text(job.value("timeout_s", json(nullptr))) +
            " s</dd><dt>started</dt><dd>" + html::when(job.value("started_at", json(nullptr))) +
            "</dd><dt>finished</dt><dd>" + html::when(job.value("finished_at", json(nullptr))) +
            "</dd><dt>tests</dt><dd>" + counts(job.value("tests", json::object())) +
            " (passed / failed / skipped / flaky)</dd></dl>";
    json meta = job.value("metadata", json::object());
    body += "<h2>Metadata</h2>" + value_html("metadata", meta, links);
    const json& evidence = job.value("evidence", json(nullptr));
    if (evidence.is_object() && !evidence.empty())
        body += "<h2>Evidence</h2>" + value_html("evidence", evidence, links);
    const json items = tests.value("items", json::array());
    body += "<h2>Tests</h2>";
    body += items.empty() ? "<p class=\"muted\">No test results.</p>" : tests_table(items, true);
    if (tests.value("next_cursor", json(nullptr)).is_string()) {
        body += "<p class=\"muted\">The first " + std::to_string(items.size()) +
                " results; the rest through the API.</p>";
    }
    body += "<h2>Log (last " + std::to_string(tail) + " bytes)</h2>";
    body +=
        log_problem.empty() ? html::pre(log) : "<p class=\"muted\">" + esc(log_problem) + "</p>";
    return html::page("Job " + id, "Runs", body, v);
}

std::string runners_page(const json& runners, const std::string& notice, const html::Viewer& v) {
    std::string body = "<h1>Runners</h1>" + notice_box(notice);
    const json items = runners.value("items", json::array());
    if (items.empty())
        body += "<p class=\"muted\">No runner slots.</p>";
    else {
        body +=
            "<table><tr><th>slot</th><th>labels</th><th>state</th><th>job</th><th>last "
            "health</th>" +
            std::string(v.admin ? "<th></th>" : "") + "</tr>";
        for (const auto& s : items) {
            const std::string name = str(s, "name");
            std::string labels;
            for (const auto& l : s.value("labels", json::array()))
                labels += "<code>" + html::text(l) + "</code> ";
            body += "<tr><td>" + esc(name) + "</td><td>" + labels + "</td><td>" +
                    html::badge(s.value("state", json(nullptr))) + "</td><td>" +
                    job_link(s.value("job_id", json(nullptr))) + "</td><td>" +
                    value_html("last_health", s.value("last_health", json(nullptr)), Links{}) +
                    "</td>";
            if (v.admin) {
                const bool drained = str(s, "state") == "drained" || s.value("drained", false);
                body += "<td>" +
                        html::action_form("/ui/runners/" + html::url_encode(name) +
                                              (drained ? "/undrain" : "/drain"),
                                          drained ? "Undrain" : "Drain", v) +
                        "</td>";
            }
            body += "</tr>";
        }
        body += "</table>";
    }
    if (runners.contains("cluster"))
        body += "<h2>Cluster</h2>" + value_html("cluster", runners["cluster"], Links{});
    return html::page("Runners", "Runners", body, v);
}

std::string deliveries_page(const json& lanes, const json& list, const FormValues& form,
                            const std::string& problem, const html::Viewer& v) {
    std::string body =
        "<h1>Deliveries</h1>" + lanes_table(lanes) +
        "<h2>Webhook deliveries</h2>"
        "<form class=\"filters\" method=\"get\" action=\"/ui/deliveries\">" +
        select("verdict", "verdict", names<Verdict>(), form) +
        "<button type=\"submit\">Filter</button> <a href=\"/ui/deliveries\">clear</a></form>" +
        problem_box(problem);
    const json items = list.value("items", json::array());
    if (items.empty())
        body += "<p class=\"muted\">No deliveries.</p>";
    else {
        body +=
            "<table><tr><th>id</th><th>delivery</th><th>received</th><th>scheme</th><th>event</"
            "th><th>verdict</th>"
            "<th>HTTP</th><th>reason</th><th>run</th></tr>";
        for (const auto& d : items) {
            body += "<tr><td>" + html::text(d.value("id", json(nullptr))) + "</td><td><code>" +
                    html::text(d.value("delivery_id", json(nullptr))) + "</code></td><td>" +
                    html::when(d.value("received_at", json(nullptr))) + "</td><td>" +
                    html::text(d.value("scheme", json(nullptr))) + "</td><td>" +
                    html::text(d.value("event", json(nullptr))) + "</td><td>" +
                    html::badge(d.value("verdict", json(nullptr))) + "</td><td>" +
                    html::text(d.value("http_status", json(nullptr))) +
                    "</td><td class=\"reason\">" + html::text(d.value("reason", json(nullptr))) +
                    "</td><td>" + run_link(d.value("run_id", json(nullptr))) + "</td></tr>";
        }
        body += "</table>";
    }
    body += pager("/ui/deliveries", list, form);
    return html::page("Deliveries", "Deliveries", body, v);
}

std::string login_page(const std::string& next, const std::string& problem, bool ui_public) {
    std::string body =
        "<div class=\"login\"><h1>Sign in</h1>" + problem_box(problem) +
        "<p>Paste an admin-API token (a read token shows the pages; an admin token also allows "
        "cancel, retry and drain).</p>"
        "<form method=\"post\" action=\"/ui/login\"><input type=\"hidden\" name=\"next\" value=\"" +
        esc(next) +
        "\"><label for=\"token\">Token</label><input id=\"token\" name=\"token\" type=\"password\" "
        "autocomplete=\"current-password\" required autofocus><button type=\"submit\">Sign "
        "in</button></form>";
    if (ui_public)
        body +=
            "<p class=\"muted\">The pages are readable without signing in (admin.ui_public).</p>";
    return html::page("Sign in", "", body + "</div>", html::Viewer{});
}

std::string error_page(int status, const std::string& message, const html::Viewer& v) {
    const char* name = status == 400   ? "Bad request"
                       : status == 403 ? "Forbidden"
                       : status == 404 ? "Not found"
                       : status == 409 ? "Conflict"
                       : status == 405 ? "Method not allowed"
                       : status == 401 ? "Sign-in needed"
                                       : "Unavailable";
    return html::page(name, "",
                      "<h1>" + std::string(name) + "</h1><p class=\"problem\">" + esc(message) +
                          "</p><p><a href=\"/ui/\">Runs</a></p>",
                      v);
}

}  // namespace crcrd::admin::ui
