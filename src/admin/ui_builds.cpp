// The dashboard's build pages (docs/dashboard.md, docs/build.md): the builds list and one
// build with its builder's log tail, rendered from GET /api/v1/builds[/{id}].
#include <cstdint>
#include <string>

#include "crcrd/core/units.hpp"
#include "crcrd/core/vocab.hpp"
#include "routes.hpp"
#include "ui_pages.hpp"
#include "ui_parts.hpp"

namespace crcrd::admin::ui {

using html::esc;
using nlohmann::json;

namespace {

std::string build_link(const json& id) {
    if (!id.is_number_integer()) return html::text(id);
    const std::string n = std::to_string(id.get<std::int64_t>());
    return "<a href=\"/ui/builds/" + n + "\">" + n + "</a>";
}

/// The key's first 12 characters, the whole key as its title.
std::string short_key(const json& key) {
    if (!key.is_string()) return html::text(key);
    const std::string k = key.get<std::string>();
    return "<code title=\"" + esc(k) + "\">" + esc(k.substr(0, 12)) + "</code>";
}

std::string size_text(const json& bytes) {
    if (!bytes.is_number_integer() || bytes.get<std::int64_t>() < 0) return "—";
    return esc(format_size(bytes.get<std::uint64_t>()));
}

}  // namespace

std::string builds_page(const json& list, const FormValues& form, const std::string& problem,
                        const html::Viewer& v, const Links& links) {
    std::string body =
        "<h1>Builds</h1><form class=\"filters\" method=\"get\" action=\"/ui/builds\">" +
        select("state", "state", names<BuildState>(), form) +
        input("sha", "upstream SHA", form, "40 hex") +
        "<button type=\"submit\">Filter</button> <a href=\"/ui/builds\">clear</a></form>" +
        problem_box(problem);
    const json items = list.value("items", json::array());
    if (items.empty()) {
        body += "<p class=\"muted\">No builds.</p>";
    } else {
        body +=
            "<table class=\"builds\"><tr><th>build</th><th>key</th><th>state</th><th>SHA</th>"
            "<th>size</th><th>attempts</th><th>runs</th><th>finished</th><th>reason</th></tr>";
        for (const auto& b : items) {
            body += "<tr><td>" + build_link(b.value("id", json(nullptr))) + "</td><td>" +
                    short_key(b.value("key", json(nullptr))) + "</td><td>" +
                    html::badge(b.value("state", json(nullptr))) + "</td><td>" +
                    html::sha_link(b.value("upstream_sha", json(nullptr)), links.commit_url) +
                    "</td><td>" + size_text(b.value("size_bytes", json(nullptr))) + "</td><td>" +
                    html::text(b.value("attempts", json(nullptr))) + "</td><td>" +
                    html::text(b.value("runs", json(nullptr))) + "</td><td>" +
                    html::when(b.value("finished_at", json(nullptr))) +
                    "</td><td class=\"reason\">" + html::text(b.value("reason", json(nullptr))) +
                    "</td></tr>";
        }
        body += "</table>";
    }
    body += pager("/ui/builds", list, form);
    return html::page("Builds", "Builds", body, v);
}

std::string build_page(const json& build, const std::string& notice, const html::Viewer& v,
                       const Links& links) {
    const std::string id = std::to_string(build.value("id", std::int64_t{0}));
    const json& size = build.value("size_bytes", json(nullptr));
    std::string body = "<h1>Build " + id + " " + html::badge(build.value("state", json(nullptr))) +
                       "</h1>" + notice_box(notice);
    body += "<dl class=\"facts\"><dt>key</dt><dd><code>" +
            html::text(build.value("key", json(nullptr))) + "</code></dd><dt>reason</dt><dd>" +
            html::text(build.value("reason", json(nullptr))) + "</dd><dt>upstream</dt><dd>" +
            html::sha_link(build.value("upstream_sha", json(nullptr)), links.commit_url) +
            " <code>" + html::text(build.value("upstream_sha", json(nullptr))) +
            "</code></dd><dt>backend</dt><dd><code>" +
            html::text(build.value("backend_sha", json(nullptr))) +
            "</code></dd><dt>builder job</dt><dd>" +
            job_link(build.value("job_id", json(nullptr))) + "</dd><dt>attempts</dt><dd>" +
            html::text(build.value("attempts", json(nullptr))) + "</dd><dt>size</dt><dd>" +
            size_text(size) + (size.is_number() ? " (" + html::text(size) + " bytes)" : "") +
            "</dd><dt>runs</dt><dd>" + html::text(build.value("runs", json(nullptr))) +
            "</dd><dt>open jobs</dt><dd>" + html::text(build.value("open_jobs", json(nullptr))) +
            "</dd><dt>created</dt><dd>" + html::when(build.value("created_at", json(nullptr))) +
            "</dd><dt>started</dt><dd>" + html::when(build.value("started_at", json(nullptr))) +
            "</dd><dt>finished</dt><dd>" + html::when(build.value("finished_at", json(nullptr))) +
            "</dd><dt>last used</dt><dd>" + html::when(build.value("last_used_at", json(nullptr))) +
            "</dd></dl>";
    // The API's own rule decides; the form is offered only where it would be accepted.
    if (v.admin && str(build, "state") == "ready" && build.value("open_jobs", 0) == 0) {
        body +=
            "<p>" + html::action_form("/ui/builds/" + id + "/evict", "Evict", v, "danger") + "</p>";
    }
    const json& log = build.value("log", json(nullptr));
    body += "<h2>Builder's log (the last " + format_size(k_build_log_tail) + ")</h2>";
    body += log.is_string() ? html::pre(log.get<std::string>())
                            : "<p class=\"muted\">No log (none yet, or pruned).</p>";
    return html::page("Build " + id, "Builds", body, v);
}

}  // namespace crcrd::admin::ui
