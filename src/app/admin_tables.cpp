// The tables crcrctl prints for people (admin_tables.hpp).
#include "app/admin_tables.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <ostream>
#include <set>

#include "crcrd/core/units.hpp"

namespace crcrd::app {

using nlohmann::json;

std::string text(const json& j, const char* key) {
    if (!j.contains(key) || j[key].is_null()) return "-";
    if (j[key].is_string()) return j[key].get<std::string>();
    return j[key].dump();
}

namespace {

/// Prints rows under a header, each column as wide as its widest cell; the last column is
/// never padded (it holds free text).
void table(std::ostream& out, const std::vector<std::string>& header,
           const std::vector<std::vector<std::string>>& rows) {
    std::vector<std::size_t> width(header.size());
    for (std::size_t c = 0; c < header.size(); ++c) width[c] = header[c].size();
    for (const auto& r : rows)
        for (std::size_t c = 0; c < r.size() && c < width.size(); ++c)
            width[c] = std::max(width[c], r[c].size());
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

void print_cursor(std::ostream& out, const json& page) {
    if (page.contains("next_cursor") && page["next_cursor"].is_string()) {
        out << "(more: --cursor " << page["next_cursor"].get<std::string>() << ")\n";
    }
}

}  // namespace

/// Runs, one a line.
void print_runs(std::ostream& out, const json& page) {
    std::vector<std::vector<std::string>> rows;
    for (const auto& r : page["items"]) {
        rows.push_back({text(r, "id"), text(r, "event"), text(r, "sha").substr(0, 12),
                        text(r, "pr"), text(r, "state"), text(r, "conclusion"),
                        text(r, "created_at"), text(r, "reason")});
    }
    table(out, {"ID", "EVENT", "SHA", "PR", "STATE", "CLASS", "CREATED", "REASON"}, rows);
    print_cursor(out, page);
}

/// One run: its selection, its jobs, its statuses and its bisection.
void print_run(std::ostream& out, const json& r) {
    out << "run " << text(r, "id") << "  " << text(r, "event") << "  sha " << text(r, "sha")
        << "  pr " << text(r, "pr") << "\n  " << text(r, "state") << " / " << text(r, "conclusion")
        << ": " << text(r, "reason") << "\n  created " << text(r, "created_at") << ", finished "
        << text(r, "finished_at") << "\n";
    if (r.contains("selection") && r["selection"].is_object()) {
        const auto& s = r["selection"];
        out << "  selection: source " << text(s, "source") << ", " << text(s, "changed_paths")
            << " changed paths";
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
        jobs.push_back({text(j, "id"), text(j, "tier"), text(j, "attempt"), text(j, "state"),
                        text(j, "conclusion"), text(j, "slot"),
                        text(t, "passed") + "/" + text(t, "failed") + "/" + text(t, "skipped") +
                            "/" + text(t, "flaky"),
                        text(j, "reason")});
    }
    table(out,
          {"JOB", "TIER", "ATTEMPT", "STATE", "CLASS", "SLOT", "PASS/FAIL/SKIP/FLAKY", "REASON"},
          jobs);
    std::vector<std::vector<std::string>> statuses;
    for (const auto& s : r.value("statuses", json::array())) {
        statuses.push_back({text(s, "sink"), text(s, "context"), text(s, "state"),
                            text(s, "delivery"), text(s, "description")});
    }
    if (!statuses.empty()) {
        out << "\n";
        table(out, {"SINK", "CONTEXT", "STATE", "DELIVERY", "DESCRIPTION"}, statuses);
    }
    if (r.contains("bisection_of") && r["bisection_of"].is_object()) {
        out << "\nbisect run of run " << text(r["bisection_of"], "run_id") << " (tier "
            << text(r["bisection_of"], "tier") << ")\n";
    }
    if (r.contains("bisect") && r["bisect"].is_object()) {
        const json& b = r["bisect"];
        out << "\nbisection of " << text(b, "tier") << " ("
            << b.value("tests", json::array()).size() << " failing tests): " << text(b, "state")
            << ": " << text(b, "reason") << "\n  good " << text(b, "good") << " (run "
            << text(b, "good_run_id") << ")\n  bad  " << text(b, "bad") << " (run "
            << text(b, "bad_run_id") << "), " << text(b, "commits") << " commits\n  culprit "
            << text(b, "culprit") << "\n";
        std::vector<std::vector<std::string>> runs;
        for (const auto& x : b.value("runs", json::array()))
            runs.push_back({text(x, "run_id"), text(x, "sha"), text(x, "state"),
                            text(x, "conclusion"), text(x, "verdict")});
        if (!runs.empty()) table(out, {"RUN", "SHA", "STATE", "CLASS", "VERDICT"}, runs);
    }
}

/// Recovery passes and the watermark.
void print_passes(std::ostream& o, const json& page) {
    std::vector<std::vector<std::string>> rows;
    for (const auto& r : page["items"]) {
        rows.push_back({text(r, "id"), text(r, "started_at"), text(r, "since"), text(r, "listed"),
                        text(r, "failed"), text(r, "redelivered"),
                        r.value("errors", json::array()).empty() ? "-" : r["errors"].dump()});
    }
    table(o, {"PASS", "STARTED", "SINCE", "LISTED", "FAILED", "REDELIVERED", "ERRORS"}, rows);
    o << "watermark: " << text(page, "watermark") << "\n";
}

/// Selection misses (docs/verdicts.md): the test, and of the commits in between how many, the
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
        rows.push_back({text(m, "id"), text(m, "run_id"), text(m, "test"), text(m, "tier"),
                        std::to_string(commits.size()), matched.empty() ? "-" : matched,
                        shas.empty() ? "-" : shas});
    }
    table(o, {"ID", "RUN", "TEST", "TIER", "COMMITS", "RULES MATCHED", "FIRST COMMITS"}, rows);
    print_cursor(o, page);
}

/// Slots, and the cluster's table when the executor has one (its title, columns and rows).
void print_runners(std::ostream& o, const json& page) {
    std::vector<std::vector<std::string>> rows;
    for (const auto& r : page["items"]) {
        const json& h = r.value("last_health", json(nullptr));
        std::string health =
            h.is_object() ? (h.value("ok", false) ? "ok " : "FAILED ") + text(h, "at") : "-";
        rows.push_back({text(r, "name"), text(r, "state"), r.value("labels", json::array()).dump(),
                        text(r, "job_id"), health});
    }
    table(o, {"NAME", "STATE", "LABELS", "JOB", "LAST HEALTH"}, rows);
    // The executor's cluster (Slurm's nodes), as the executor describes its columns.
    if (const auto& c = page.value("cluster", json(nullptr)); c.is_object()) {
        o << "\n" << text(c, "title") << ":\n";
        if (c.contains("error") && !c["error"].is_null())
            o << "  cannot ask the cluster: " << text(c, "error") << "\n";
        std::vector<std::string> headers;
        for (const auto& col : c.value("columns", json::array()))
            headers.push_back(text(col, "header"));
        std::vector<std::vector<std::string>> rows;
        for (const auto& r : c.value("rows", json::array())) {
            std::vector<std::string> row;
            for (const auto& col : c.value("columns", json::array()))
                row.push_back(text(r, text(col, "field").c_str()));
            rows.push_back(std::move(row));
        }
        table(o, headers, rows);
    }
}

/// Deliveries and their verdicts.
void print_deliveries(std::ostream& o, const json& page) {
    std::vector<std::vector<std::string>> rows;
    for (const auto& d : page["items"]) {
        rows.push_back({text(d, "id"), text(d, "received_at"), text(d, "delivery_id"),
                        text(d, "event"), text(d, "verdict"), text(d, "http_status"),
                        text(d, "run_id"), text(d, "reason")});
    }
    table(o, {"ID", "RECEIVED", "DELIVERY", "EVENT", "VERDICT", "HTTP", "RUN", "REASON"}, rows);
    print_cursor(o, page);
}

namespace {

/// A lane's budget as "WINDOW:USED/LEFT" per window ("60s:3/77 3600s:3/497"), "spent" when the
/// next request waits for it, and the progress updates its reserve held back; "-" without one.
std::string lane_budget(const json& lane) {
    std::string out;
    for (const auto& w : lane.value("budget", json::array())) {
        const auto per = std::chrono::round<Duration>(
            std::chrono::duration<double>(w.value("per_seconds", 0.0)));
        out += (out.empty() ? "" : " ") + format_seconds(per) + ":" + text(w, "used") + "/" +
               text(w, "left");
    }
    if (out.empty()) out = "-";
    if (lane.value("budget_spent", false)) out += " spent";
    if (const auto held = lane.value("held_back", std::int64_t{0}); held > 0)
        out += " (" + std::to_string(held) + " held back)";
    return out;
}

}  // namespace

/// Outbox rows: first each sink's lane (its backlog, budget, pause and next send), then each
/// status or callback and where it went.
void print_outbox(std::ostream& o, const json& page) {
    if (page.contains("lanes") && page["lanes"].is_array()) {
        std::vector<std::vector<std::string>> lanes;
        for (const auto& l : page["lanes"]) {
            const bool configured = l.value("configured", false);
            // The next send matters only while something waits.
            const bool waits = l.value("waiting", std::int64_t{0}) > 0;
            lanes.push_back({text(l, "sink"), text(l, "waiting"), text(l, "dead"),
                             configured ? lane_budget(l) : "not configured",
                             text(l, "paused_until"), waits ? text(l, "next_send_at") : "-",
                             text(l, "oldest_final_waiting_at"), text(l, "last_error")});
        }
        table(o,
              {"LANE", "WAITING", "DEAD", "BUDGET WINDOW:USED/LEFT", "PAUSED UNTIL", "NEXT SEND",
               "OLDEST WAITING FINAL", "LAST ERROR"},
              lanes);
        o << "\n";
    }
    std::vector<std::vector<std::string>> rows;
    for (const auto& r : page["items"]) {
        std::string note = text(r, "last_error");
        if (note == "-") note = text(r, "description");
        rows.push_back({text(r, "id"), text(r, "run_id"), text(r, "sink"), text(r, "context"),
                        text(r, "state"), text(r, "delivery"), text(r, "attempts"), note});
    }
    table(o,
          {"ID", "RUN", "SINK", "CONTEXT", "STATE", "DELIVERY", "ATTEMPTS",
           "DESCRIPTION / LAST ERROR"},
          rows);
    print_cursor(o, page);
}

namespace {

/// A build's size_bytes for people ("683.5 KiB"), "-" while it has none.
std::string size_cell(const json& b) {
    const json& n = b.value("size_bytes", json(nullptr));
    return n.is_number_integer() && n.get<std::int64_t>() >= 0 ? format_size(n.get<std::uint64_t>())
                                                               : "-";
}

}  // namespace

/// Builds, one a line.
void print_builds(std::ostream& o, const json& page) {
    std::vector<std::vector<std::string>> rows;
    for (const auto& b : page["items"]) {
        rows.push_back({text(b, "id"), text(b, "key").substr(0, 12), text(b, "state"),
                        text(b, "upstream_sha").substr(0, 12), size_cell(b), text(b, "attempts"),
                        text(b, "runs"), text(b, "finished_at"), text(b, "reason")});
    }
    table(o, {"ID", "KEY", "STATE", "SHA", "SIZE", "ATTEMPTS", "RUNS", "FINISHED", "REASON"}, rows);
    print_cursor(o, page);
}

/// One build: its facts, then the end of its builder's log.
void print_build(std::ostream& o, const json& b) {
    o << "build " << text(b, "id") << "  " << text(b, "state") << "  key " << text(b, "key")
      << "\n  upstream " << text(b, "upstream_sha") << "  backend " << text(b, "backend_sha")
      << "\n  builder job " << text(b, "job_id") << ", attempts " << text(b, "attempts")
      << ", size " << size_cell(b) << "\n  runs " << text(b, "runs") << ", open jobs "
      << text(b, "open_jobs") << "\n  created " << text(b, "created_at") << ", started "
      << text(b, "started_at") << ", finished " << text(b, "finished_at") << ", last used "
      << text(b, "last_used_at") << "\n  reason: " << text(b, "reason") << "\n";
    const json& log = b.value("log", json(nullptr));
    if (!log.is_string()) {
        o << "\nno log\n";
        return;
    }
    o << "\nlog of job " << text(b, "job_id") << " (its end):\n" << log.get<std::string>();
    if (!log.get<std::string>().empty() && log.get<std::string>().back() != '\n') o << "\n";
}

namespace {

/// A rate in [0, 1] as "12.5 %".
std::string percent_cell(const json& rate) {
    if (!rate.is_number()) return "-";
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f %%", 100.0 * rate.get<double>());
    return buf;
}

/// What a grid row says of bisections, after its subject.
std::string row_marks(const json& row) {
    std::string out;
    for (const auto& b : row.value("bisections", json::array())) {
        out += " [bisection of " + text(b, "tier") + ": " + text(b, "state");
        if (b.value("culprit", json(nullptr)).is_string())
            out += ", culprit " + b["culprit"].get<std::string>().substr(0, 12);
        out += "]";
    }
    for (const auto& b : row.value("culprit_of", json::array()))
        out += " [CULPRIT of the " + text(b, "tier") + " regression of run " +
               text(b, "bad_run_id") + "]";
    return out;
}

}  // namespace

/// The trunk grid: the red tiers, then one commit a line with a column per tier.
void print_trunk(std::ostream& o, const json& grid) {
    o << "trunk " << text(grid, "ref") << "\n";
    for (const auto& r : grid.value("red_since", json::array())) {
        o << "RED " << text(r, "tier") << " since " << text(r, "sha").substr(0, 12) << " (run "
          << text(r, "run_id") << ", " << text(r, "runs") << " regression runs)";
        if (r.value("culprit", json(nullptr)).is_string())
            o << ", bisected to " << r["culprit"].get<std::string>().substr(0, 12);
        o << "\n";
    }
    std::vector<std::string> header = {"SHA", "RUNS"};
    for (const auto& t : grid.value("tiers", json::array())) header.push_back(t.get<std::string>());
    header.push_back("SUBJECT");
    std::vector<std::vector<std::string>> rows;
    for (const auto& row : grid.value("rows", json::array())) {
        std::string runs;
        for (const auto& r : row.value("runs", json::array()))
            runs += (runs.empty() ? "" : ",") + text(r, "id");
        std::vector<std::string> line = {text(row, "sha").substr(0, 12), runs};
        const json cells = row.value("cells", json::object());
        for (const auto& t : grid.value("tiers", json::array())) {
            const json c = cells.value(t.get<std::string>(), json(nullptr));
            line.push_back(!c.is_object() ? "-"
                           : c.value("conclusion", json(nullptr)).is_string()
                               ? c["conclusion"].get<std::string>()
                               : text(c, "state"));
        }
        line.push_back(text(row, "subject") + row_marks(row));
        rows.push_back(std::move(line));
    }
    table(o, header, rows);
    print_cursor(o, grid);
}

/// A test's history: its rate and failures, then one run a line.
void print_test_history(std::ostream& o, const json& h) {
    const json runs = h.value("runs", json::array());
    const json counts = h.value("counts", json::object());
    o << "test " << text(h, "name") << ": " << runs.size() << " runs, flaky rate "
      << percent_cell(h.value("flaky_rate", json(nullptr))) << "; passed " << text(counts, "passed")
      << ", failed " << text(counts, "failed") << ", flaky " << text(counts, "flaky")
      << ", skipped " << text(counts, "skipped") << ", pre-existing "
      << text(counts, "pre_existing") << "\n";
    for (const char* k : {"last_failure", "first_failure"}) {
        const json f = h.value(k, json(nullptr));
        o << (k == std::string("last_failure") ? "last failure: " : "first failure: ");
        if (f.is_object())
            o << text(f, "result") << " in run " << text(f, "run_id") << " at " << text(f, "at")
              << "\n";
        else
            o << "none in these runs\n";
    }
    std::vector<std::vector<std::string>> rows;
    for (const auto& r : runs) {
        rows.push_back({text(r, "run_id"), text(r, "job_id"), text(r, "tier"), text(r, "attempt"),
                        text(r, "sha").substr(0, 12), text(r, "event"), text(r, "result"),
                        text(r, "at"), text(r, "message")});
    }
    table(o, {"RUN", "JOB", "TIER", "ATTEMPT", "SHA", "EVENT", "RESULT", "AT", "MESSAGE"}, rows);
}

/// The flaky tests, flakiest first.
void print_flaky(std::ostream& o, const json& list) {
    std::vector<std::vector<std::string>> rows;
    for (const auto& t : list.value("items", json::array())) {
        const json last = t.value("last_flaky", json(nullptr));
        rows.push_back({percent_cell(t.value("flaky_rate", json(nullptr))), text(t, "flaky"),
                        text(t, "runs"),
                        last.is_object() ? text(last, "at") + " run " + text(last, "run_id") : "-",
                        text(t, "name")});
    }
    table(o, {"RATE", "FLAKY", "RUNS", "LAST FLAKY", "TEST"}, rows);
}

/// The daily roll-ups, one day a line.
void print_stats(std::ostream& o, const json& stats) {
    auto hours = [](const json& ms) {
        if (!ms.is_number()) return std::string("-");
        char buf[32];
        std::snprintf(buf, sizeof buf, "%.2f", ms.get<double>() / 3'600'000.0);
        return std::string(buf);
    };
    auto seconds = [](const json& ms) {
        if (!ms.is_number()) return std::string("-");
        char buf[32];
        std::snprintf(buf, sizeof buf, "%.1fs", ms.get<double>() / 1000.0);
        return std::string(buf);
    };
    // A percentile beyond the last bucket is only a lower bound.
    auto wait = [&](const json& d, const std::string& p) {
        return (d.value(p + "_longer", false) ? ">" : "") +
               seconds(d.value(p + "_ms", json(nullptr)));
    };
    std::vector<std::string> header = {"DAY",      "RUNS",       "WAIT P50",    "WAIT P95",
                                       "DEVICE H", "SELECTED H", "EVERY TIER H"};
    for (const auto& t : stats.value("tiers", json::array()))
        header.push_back("PASS " + t.get<std::string>());
    for (const auto& s : stats.value("slots", json::array()))
        header.push_back("UTIL " + s.get<std::string>());
    header.push_back("CLASSES");
    std::vector<std::vector<std::string>> rows;
    for (const auto& d : stats.value("days", json::array())) {
        std::vector<std::string> line = {text(d, "day"),
                                         text(d, "runs_total"),
                                         wait(d, "wait_p50"),
                                         wait(d, "wait_p95"),
                                         hours(d.value("device_ms", json(nullptr))),
                                         hours(d.value("runs_device_ms", json(nullptr))),
                                         hours(d.value("full_ms", json(nullptr)))};
        for (const auto& t : stats.value("tiers", json::array()))
            line.push_back(percent_cell(d["pass_rate"].value(t.get<std::string>(), json(nullptr))));
        for (const auto& s : stats.value("slots", json::array()))
            line.push_back(
                percent_cell(d["utilisation"].value(s.get<std::string>(), json(nullptr))));
        std::string classes;
        const json runs = d.value("runs", json::object());
        for (const auto& [c, n] : runs.items())
            classes += (classes.empty() ? "" : " ") + c + ":" + n.dump();
        line.push_back(classes.empty() ? "-" : classes);
        rows.push_back(std::move(line));
    }
    table(o, header, rows);
}

}  // namespace crcrd::app
