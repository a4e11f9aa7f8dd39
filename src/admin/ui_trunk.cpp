// The dashboard's trunk health pages (docs/dashboard.md): the trunk grid, a test's history and
// the flaky tests, rendered from GET /api/v1/trunk, /api/v1/tests/{name}/history and
// /api/v1/tests?flaky=1.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>

#include "ui_pages.hpp"
#include "ui_parts.hpp"

namespace crcrd::admin::ui {

using html::esc;
using nlohmann::json;

namespace {

/// A rate in [0, 1] as "12.5 %".
std::string percent(const json& rate) {
    if (!rate.is_number()) return "—";
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f %%", 100.0 * rate.get<double>());
    return buf;
}

/// A grid cell: the attempt's class (its state while it has none) as a badge linked to its job,
/// the reason as its title; "not run" when the commit's runs did not run the tier.
std::string grid_cell(const json& cell) {
    if (!cell.is_object())
        return "<td class=\"cell none\"><span class=\"muted\">not run</span></td>";
    const json& c = cell.value("conclusion", json(nullptr));
    const json shown = c.is_string() ? c : cell.value("state", json(nullptr));
    const std::string job = std::to_string(cell.value("job_id", std::int64_t{0}));
    std::string title =
        "job " + job + ", attempt " + html::text(cell.value("attempt", json(nullptr)));
    if (cell.value("reason", json(nullptr)).is_string()) title += ": " + str(cell, "reason");
    return "<td class=\"cell\"><a href=\"/ui/jobs/" + job + "\" title=\"" + esc(title) + "\">" +
           html::badge(shown) + "</a></td>";
}

/// What a row says of bisections: the culprit a bisection of its runs found (or its state), and
/// the regressions it is the culprit of.
std::string bisection_marks(const json& row, const Links& links) {
    std::string out;
    for (const auto& b : row.value("bisections", json::array())) {
        out += "<div class=\"mark\">bisection of " + html::text(b.value("tier", json(""))) + ": " +
               html::badge(b.value("state", json(nullptr)));
        if (b.value("culprit", json(nullptr)).is_string())
            out += " culprit " + html::sha_link(b["culprit"], links.commit_url);
        out += "</div>";
    }
    for (const auto& b : row.value("culprit_of", json::array())) {
        out += "<div class=\"mark\"><span class=\"badge b-culprit\">culprit</span> of the " +
               html::text(b.value("tier", json(""))) + " regression of run " +
               run_link(b.value("bad_run_id", json(nullptr))) + "</div>";
    }
    return out;
}

/// The banner at the top: each tier that is red and since which commit, or that none is.
std::string red_banner(const json& grid, const Links& links) {
    const json red = grid.value("red_since", json::array());
    if (red.empty()) {
        return grid.value("rows", json::array()).empty() ? ""
                                                         : "<p class=\"green\">No tier is red: the "
                                                           "newest telling run of each passed.</p>";
    }
    std::string out;
    for (const auto& r : red) {
        out += "<p class=\"red\"><strong>" + html::text(r.value("tier", json(""))) +
               "</strong> red since " +
               html::sha_link(r.value("sha", json(nullptr)), links.commit_url) + " (run " +
               run_link(r.value("run_id", json(nullptr))) + ", " +
               html::text(r.value("runs", json(nullptr))) + " regression runs)";
        if (r.value("culprit", json(nullptr)).is_string())
            out += "; bisected to " + html::sha_link(r["culprit"], links.commit_url);
        out += "</p>";
    }
    return out;
}

/// Links to the other configured branches.
std::string ref_links(const json& grid) {
    const json refs = grid.value("refs", json::array());
    if (refs.size() < 2) return "";
    std::string out = "<p class=\"refs\">Branches:";
    for (const auto& r : refs) {
        const std::string ref = r.is_string() ? r.get<std::string>() : "";
        out += ref == str(grid, "ref") ? " <strong>" + esc(ref) + "</strong>"
                                       : " <a href=\"/ui/trunk?ref=" + html::url_encode(ref) +
                                             "\">" + esc(ref) + "</a>";
    }
    return out + "</p>";
}

std::string row_html(const json& row, const json& tiers, const Links& links) {
    const json runs = row.value("runs", json::array());
    const bool culprit = !row.value("culprit_of", json::array()).empty();
    std::string run_cells;
    for (const auto& r : runs) {
        run_cells += "<div>" + run_link(r.value("id", json(nullptr))) + " " +
                     html::text(r.value("event", json(""))) + "</div>";
    }
    const json& time =
        row.value("committed_at", json(nullptr)).is_string()
            ? row["committed_at"]
            : (runs.empty() ? json(nullptr) : runs[0].value("created_at", json(nullptr)));
    std::string out =
        std::string("<tr") + (culprit ? " class=\"culprit\"" : "") + "><td>" +
        html::sha_link(row.value("sha", json(nullptr)), links.commit_url) +
        "</td><td class=\"subject\">" + html::text(row.value("subject", json(nullptr))) +
        bisection_marks(row, links) + "</td><td>" + html::text(row.value("author", json(nullptr))) +
        "</td><td>" + html::when(time) + "</td><td>" + run_cells + "</td>";
    const json cells = row.value("cells", json::object());
    for (const auto& t : tiers) {
        const std::string tier = t.is_string() ? t.get<std::string>() : "";
        out += grid_cell(cells.contains(tier) ? cells[tier] : json(nullptr));
    }
    return out + "</tr>";
}

/// One result of a test's strip: a short label in its colour, linked to the job.
std::string strip_cell(const json& r) {
    const std::string result = str(r, "result");
    const std::string label = result == "passed"         ? "P"
                              : result == "failed"       ? "F"
                              : result == "flaky"        ? "K"
                              : result == "skipped"      ? "S"
                              : result == "pre_existing" ? "E"
                                                         : "?";
    const std::string title = result + " in run " + std::to_string(r.value("run_id", 0)) + " (" +
                              str(r, "tier") + ", " + str(r, "sha").substr(0, 7) + ")";
    return "<a class=\"strip-cell badge b-" + esc(result) + "\" href=\"/ui/jobs/" +
           std::to_string(r.value("job_id", std::int64_t{0})) + "\" title=\"" + esc(title) + "\">" +
           label + "</a>";
}

std::string failure_fact(const json& f) {
    if (!f.is_object()) return "none in these runs";
    return html::badge(f.value("result", json(nullptr))) + " run " +
           run_link(f.value("run_id", json(nullptr))) + ", " +
           html::when(f.value("at", json(nullptr)));
}

}  // namespace

std::string test_link(const json& name) {
    if (!name.is_string()) return html::text(name);
    const std::string n = name.get<std::string>();
    return "<a href=\"/ui/tests/" + html::url_encode(n) + "\"><code>" + esc(n) + "</code></a>";
}

std::string trunk_page(const json& grid, const std::string& problem, const html::Viewer& v,
                       const Links& links) {
    std::string body = "<h1>Trunk: " + html::text(grid.value("ref", json(""))) + "</h1>" +
                       ref_links(grid) + problem_box(problem) + red_banner(grid, links);
    const json rows = grid.value("rows", json::array());
    const json tiers = grid.value("tiers", json::array());
    if (rows.empty()) {
        body += "<p class=\"muted\">No push or scheduled runs of this branch yet.</p>";
    } else {
        body +=
            "<table class=\"trunk\"><tr><th>commit</th><th>subject</th><th>author</th>"
            "<th>time</th><th>runs</th>";
        for (const auto& t : tiers) body += "<th class=\"tier\">" + html::text(t) + "</th>";
        body += "</tr>";
        for (const auto& row : rows) body += row_html(row, tiers, links);
        body += "</table>";
    }
    FormValues form;
    if (grid.value("ref", json(nullptr)).is_string()) form["ref"] = grid["ref"].get<std::string>();
    body += pager("/ui/trunk", grid, form);
    return html::page("Trunk", "Trunk", body, v);
}

std::string test_page(const json& history, const html::Viewer& v, const Links& links) {
    const json runs = history.value("runs", json::array());
    const json counts = history.value("counts", json::object());
    std::string body =
        "<h1>Test <code>" + html::text(history.value("name", json(""))) + "</code></h1>";
    body += "<dl class=\"facts\"><dt>flaky rate</dt><dd>" +
            percent(history.value("flaky_rate", json(nullptr))) + " (" +
            html::text(counts.value("flaky", json(0))) + " flaky of " +
            std::to_string(runs.size()) + " runs)</dd><dt>results</dt><dd>";
    for (const char* k : {"passed", "failed", "flaky", "skipped", "pre_existing"})
        body += html::badge(k) + " " + html::text(counts.value(k, json(0))) + " ";
    body += "</dd><dt>last failure</dt><dd>" +
            failure_fact(history.value("last_failure", json(nullptr))) +
            "</dd><dt>first failure</dt><dd>" +
            failure_fact(history.value("first_failure", json(nullptr))) + "</dd></dl>";
    body += "<h2>The last " + std::to_string(runs.size()) +
            " runs that ran it, newest first</h2><p class=\"strip\">";
    for (const auto& r : runs) body += strip_cell(r);
    body += "</p><p class=\"muted\">P passed · F failed · K flaky · S skipped · E pre-existing</p>";
    body +=
        "<table class=\"history\"><tr><th>run</th><th>job</th><th>tier</th><th>attempt</th>"
        "<th>SHA</th><th>event</th><th>result</th><th>duration</th><th>when</th>"
        "<th>message</th></tr>";
    for (const auto& r : runs) {
        std::string message = str(r, "message");
        if (message.size() > 300) message = message.substr(0, 300) + "…";
        body += "<tr><td>" + run_link(r.value("run_id", json(nullptr))) + "</td><td>" +
                job_link(r.value("job_id", json(nullptr))) + "</td><td>" +
                html::text(r.value("tier", json(""))) + "</td><td>" +
                html::text(r.value("attempt", json(nullptr))) + "</td><td>" +
                html::sha_link(r.value("sha", json(nullptr)), links.commit_url) + "</td><td>" +
                html::text(r.value("event", json(""))) + "</td><td>" +
                html::badge(r.value("result", json(nullptr))) + "</td><td>" +
                html::text(r.value("duration_s", json(nullptr))) + " s</td><td>" +
                html::when(r.value("at", json(nullptr))) + "</td><td class=\"reason\">" +
                esc(message) + "</td></tr>";
    }
    body += "</table>";
    return html::page("Test " + str(history, "name"), "Flaky tests", body, v);
}

std::string flaky_page(const json& list, const html::Viewer& v) {
    std::string body =
        "<h1>Flaky tests</h1><form class=\"filters\" method=\"get\" action=\"/ui/tests\">"
        "<label>a test's history<input name=\"name\" placeholder=\"ci::test_add\"></label>"
        "<button type=\"submit\">Show</button></form>";
    const json items = list.value("items", json::array());
    body +=
        "<p class=\"muted\">Tests with a flaky result lately (it failed, then passed on a "
        "rerun), by their flaky rate over their last " +
        html::text(list.value("window", json(nullptr))) + " runs.</p>";
    if (items.empty())
        return html::page("Flaky tests", "Flaky tests",
                          body + "<p class=\"muted\">No flaky tests.</p>", v);
    body +=
        "<table class=\"flaky\"><tr><th>test</th><th>flaky rate</th><th>flaky</th>"
        "<th>runs</th><th>last flaky</th></tr>";
    for (const auto& t : items) {
        const json last = t.value("last_flaky", json(nullptr));
        body += "<tr><td>" + test_link(t.value("name", json(nullptr))) + "</td><td>" +
                percent(t.value("flaky_rate", json(nullptr))) + "</td><td>" +
                html::text(t.value("flaky", json(nullptr))) + "</td><td>" +
                html::text(t.value("runs", json(nullptr))) + "</td><td>" +
                (last.is_object() ? html::when(last.value("at", json(nullptr))) + " run " +
                                        run_link(last.value("run_id", json(nullptr)))
                                  : std::string("—")) +
                "</td></tr>";
    }
    body += "</table>";
    return html::page("Flaky tests", "Flaky tests", body, v);
}

}  // namespace crcrd::admin::ui
