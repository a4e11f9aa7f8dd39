// Trunk health as the API shows it (trunk.hpp).
#include "trunk.hpp"

#include <algorithm>
#include <map>
#include <set>

namespace crcrd::admin {

using nlohmann::json;

namespace {

json or_null(const std::optional<std::string>& v) {
    return v ? json(*v) : json(nullptr);
}

/// A class that says nothing of the code under test: the streak goes on across it.
bool neutral(const std::optional<std::string>& c) {
    return !c || *c == "infra_error" || *c == "device_unavailable" || *c == "timeout" ||
           *c == "cancelled";
}

bool is_failure(const std::string& shown) {
    return shown == "failed" || shown == "flaky" || shown == "pre_existing";
}

json bisection_json(const store::Bisection& b) {
    return {{"id", b.id},
            {"tier", b.tier},
            {"state", std::string(to_string(b.state))},
            {"bad_run_id", b.bad_run_id},
            {"bad_sha", b.bad_sha},
            {"culprit", or_null(b.culprit)}};
}

json cell_json(const store::TrunkCell& c) {
    return {{"job_id", c.job_id},
            {"run_id", c.run_id},
            {"attempt", c.attempt},
            {"state", c.state},
            {"conclusion", or_null(c.conclusion)},
            {"reason", or_null(c.reason)}};
}

/// The columns: each tier the cells have at its smallest position, by position then name; then
/// the configured tiers none of them has, in their order.
json columns(const std::vector<store::TrunkCell>& cells,
             const std::vector<std::string>& configured) {
    std::map<std::string, std::int64_t> position;
    for (const auto& c : cells) {
        auto [it, added] = position.try_emplace(c.tier, c.position);
        if (!added) it->second = std::min(it->second, c.position);
    }
    std::vector<std::pair<std::int64_t, std::string>> order;
    for (const auto& [tier, pos] : position) order.emplace_back(pos, tier);
    std::sort(order.begin(), order.end());
    json tiers = json::array();
    for (const auto& [pos, tier] : order) tiers.push_back(tier);
    for (const auto& t : configured)
        if (!position.count(t)) tiers.push_back(t);
    return tiers;
}

}  // namespace

std::string full_ref(const std::string& branch) {
    return branch.rfind("refs/", 0) == 0 ? branch : "refs/heads/" + branch;
}

std::optional<RedSince> red_since(const std::vector<store::TierOutcome>& newest_first) {
    std::optional<RedSince> red;
    for (const auto& o : newest_first) {
        if (o.state != "completed" || neutral(o.conclusion)) continue;
        if (*o.conclusion != "regression") break;  // passed, flaky (or a class not of trunk)
        if (!red) red.emplace();
        red->run_id = o.run_id;
        red->sha = o.sha;
        red->runs += 1;
        red->run_ids.push_back(o.run_id);
    }
    return red;
}

std::optional<std::string> streak_culprit(const RedSince& red, const std::string& tier,
                                          const std::vector<store::Bisection>& bisections) {
    const store::Bisection* newest = nullptr;
    for (const auto& b : bisections) {
        const bool of_streak =
            std::find(red.run_ids.begin(), red.run_ids.end(), b.bad_run_id) != red.run_ids.end();
        if (b.tier == tier && of_streak && b.culprit &&
            (!newest || b.bad_run_id > newest->bad_run_id))
            newest = &b;
    }
    if (!newest) return std::nullopt;
    return newest->culprit;
}

bool streak_ends(const std::vector<store::TierOutcome>& newest_first) {
    for (const auto& o : newest_first)
        if (o.state == "completed" && !neutral(o.conclusion) && *o.conclusion != "regression")
            return true;
    return false;
}

json trunk_json(const store::TrunkPage& page, const std::vector<std::string>& configured,
                const json& commits) {
    std::map<std::int64_t, std::vector<const store::TrunkCell*>> cells_of;
    for (const auto& c : page.cells) cells_of[c.run_id].push_back(&c);
    json rows = json::array();
    std::map<std::string, std::size_t> row_of;  // sha → index in rows
    for (const auto& r : page.runs) {
        auto [it, added] = row_of.try_emplace(r.sha, rows.size());
        if (added) {
            json info = commits.is_object() ? commits.value(r.sha, json::object()) : json::object();
            rows.push_back({{"sha", r.sha},
                            {"subject", info.value("subject", json(nullptr))},
                            {"author", info.value("author", json(nullptr))},
                            {"committed_at", info.value("committed_at", json(nullptr))},
                            {"runs", json::array()},
                            {"cells", json::object()},
                            {"bisections", json::array()},
                            {"culprit_of", json::array()}});
        }
        json& row = rows[it->second];
        row["runs"].push_back({{"id", r.id},
                               {"event", r.event},
                               {"state", r.state},
                               {"conclusion", or_null(r.conclusion)},
                               {"created_at", r.created_at},
                               {"finished_at", or_null(r.finished_at)}});
        // Runs come newest first: a tier's cell is the newest run's that ran it.
        for (const auto* c : cells_of[r.id])
            if (!row["cells"].contains(c->tier)) row["cells"][c->tier] = cell_json(*c);
    }
    for (const auto& b : page.bisections) {
        for (const auto& r : page.runs) {
            if (r.id == b.bad_run_id)
                rows[row_of[r.sha]]["bisections"].push_back(bisection_json(b));
        }
        if (b.culprit && row_of.count(*b.culprit))
            rows[row_of[*b.culprit]]["culprit_of"].push_back(bisection_json(b));
    }
    return {{"tiers", columns(page.cells, configured)}, {"rows", std::move(rows)}};
}

std::string test_result_shown(const store::TestHistoryRow& r) {
    if (r.outcome == "failed" && r.job_conclusion == "pre_existing") return "pre_existing";
    return r.outcome;
}

json test_history_json(const std::string& name,
                       const std::vector<store::TestHistoryRow>& newest_first, int limit) {
    json runs = json::array();
    json counts = {{"passed", 0}, {"failed", 0}, {"flaky", 0}, {"skipped", 0}, {"pre_existing", 0}};
    std::set<std::pair<std::int64_t, std::string>> seen;  // (run, tier)
    json first_failure = nullptr, last_failure = nullptr;
    for (const auto& r : newest_first) {
        if (static_cast<int>(runs.size()) >= limit) break;
        // The newest attempt of a run's tier is its result; an earlier one (a rerun's first
        // try) is not another run.
        if (!seen.insert({r.run_id, r.tier}).second) continue;
        const std::string shown = test_result_shown(r);
        json entry = {{"run_id", r.run_id},
                      {"job_id", r.job_id},
                      {"tier", r.tier},
                      {"attempt", r.attempt},
                      {"sha", r.sha},
                      {"event", r.event},
                      {"pr", r.pr ? json(*r.pr) : json(nullptr)},
                      {"at", r.at},
                      {"result", shown},
                      {"job_conclusion", or_null(r.job_conclusion)},
                      {"duration_s", r.duration_s},
                      {"message", or_null(r.message)}};
        if (counts.contains(shown)) counts[shown] = counts[shown].get<int>() + 1;
        if (is_failure(shown)) {
            const json brief = {{"run_id", r.run_id},
                                {"job_id", r.job_id},
                                {"sha", r.sha},
                                {"at", r.at},
                                {"result", shown}};
            if (last_failure.is_null()) last_failure = brief;
            first_failure = brief;
        }
        runs.push_back(std::move(entry));
    }
    const double rate =
        runs.empty() ? 0.0 : counts["flaky"].get<double>() / static_cast<double>(runs.size());
    return {{"name", name},       {"runs", std::move(runs)},        {"counts", counts},
            {"flaky_rate", rate}, {"first_failure", first_failure}, {"last_failure", last_failure}};
}

json flaky_item(const std::string& name, const store::FlakyWindow& window) {
    std::int64_t flaky = 0;
    json last = nullptr;
    for (const auto& r : window.runs) {
        if (r.outcome != "flaky") continue;
        if (last.is_null())
            last = {
                {"run_id", r.run_id}, {"job_id", r.job_id}, {"at", or_null(window.last_flaky_at)}};
        ++flaky;
    }
    const auto runs = static_cast<std::int64_t>(window.runs.size());
    return {
        {"name", name},
        {"flaky_rate", runs == 0 ? 0.0 : static_cast<double>(flaky) / static_cast<double>(runs)},
        {"flaky", flaky},
        {"runs", runs},
        {"last_flaky", last}};
}

}  // namespace crcrd::admin
