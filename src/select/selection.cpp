#include "crcrd/select/selection.hpp"

#include <algorithm>
#include <optional>
#include <set>
#include <sstream>

namespace crcrd::select {

using nlohmann::json;

std::string to_string(Source s) {
    switch (s) {
        case Source::payload: return "payload";
        case Source::push_commits: return "push_commits";
        case Source::git: return "git";
        case Source::github_api: return "github_api";
        case Source::unknown: return "unknown";
        case Source::schedule: return "schedule";
        case Source::manual: return "manual";
    }
    return "unknown";
}

namespace {

void add_tests(std::vector<std::string>& out, std::set<std::string>& seen, const std::vector<std::string>& tests) {
    for (const auto& t : tests)
        if (seen.insert(t).second) out.push_back(t);
}

std::string join(const std::vector<std::string>& v) {
    std::string out;
    for (const auto& s : v) out += (out.empty() ? "" : ", ") + s;
    return out;
}

/// `rules`, or a copy with its globs compiled when it was built without compile_globs().
const Rules& with_globs(const Rules& rules, std::optional<Rules>& copy) {
    std::size_t globs = 0;
    for (const auto& r : rules.rules) globs += r.paths.size();
    if (rules.globs.size() == globs && rules.glob_rule.size() == globs) return rules;
    copy = rules;
    if (!compile_globs(*copy)) copy->glob_rule.clear();  // matches nothing: every path unmatched
    return *copy;
}

}  // namespace

Selection decide(const Rules& rules, const ChangedPaths& changed, const std::string& event,
                 const std::vector<std::string>& requested) {
    Selection sel;
    sel.source = changed.source;
    sel.changed_paths = changed.paths.size();
    sel.note = changed.note;

    if (event == "schedule" || event == "manual" || event == "bisect") {
        std::vector<std::string> all;
        std::set<std::string> seen;
        for (const auto& r : rules.rules)
            if (!r.skip) add_tests(all, seen, r.tests);
        const bool manual = event != "schedule";  // a bisect run asks for its one tier
        for (const auto& t : rules.tiers) {
            if (manual && !requested.empty() && std::find(requested.begin(), requested.end(), t.name) == requested.end()) continue;
            const char* why = event == "bisect"   ? "bisection: only the failing tests"
                              : manual            ? "requested (manual run)"
                                                  : "full matrix (scheduled run)";
            sel.tiers.push_back({t.name, why,
                                 t.kind == TierKind::from_rules ? all : t.tests});
        }
        if (sel.tiers.empty()) sel.reason = "none of the requested tiers is in the rules file";
        return sel;
    }

    std::optional<Rules> copy;
    const Rules& compiled = with_globs(rules, copy);
    std::vector<RuleMatch> matches(rules.rules.size());
    for (std::size_t i = 0; i < rules.rules.size(); ++i) matches[i].name = rules.rules[i].name;
    std::size_t skip_only = 0;
    std::vector<int> ids;
    for (const auto& path : changed.paths) {
        compiled.globs.match(path, ids);
        bool any = false, real = false;
        std::size_t last = rules.rules.size();
        for (int id : ids) {
            const std::size_t i = compiled.glob_rule[static_cast<std::size_t>(id)];
            if (i == last) continue;  // ids ascend and a rule's globs are adjacent: once per rule
            last = i;
            any = true;
            real = real || !rules.rules[i].skip;
            if (matches[i].matched++ < k_listed) matches[i].paths.push_back(path);
        }
        if (!any) {
            if (sel.unmatched++ < k_listed) sel.unmatched_paths.push_back(path);
        } else if (!real) {
            ++skip_only;
        }
    }
    std::vector<bool> matched(rules.rules.size());
    for (std::size_t i = 0; i < matches.size(); ++i) matched[i] = matches[i].matched > 0;
    for (auto& m : matches)
        if (m.matched) sel.rules.push_back(std::move(m));
    sel.docs_only = changed.source != Source::unknown && !changed.paths.empty() && skip_only == changed.paths.size();

    // The tests the from_rules tier gets, and why.
    std::vector<std::string> rule_tests;
    std::set<std::string> seen;
    std::string rule_reason;
    bool every_rule = false;
    if (changed.source == Source::unknown) {
        every_rule = true;
        rule_reason = "changed paths unknown: every rule's tests (fail safe)";
    } else if (sel.unmatched > 0 && rules.unmatched_all_rules) {
        every_rule = true;
        rule_reason = std::to_string(sel.unmatched) + " changed path(s) matched no rule: every rule's tests (unmatched: all_rules)";
    }
    if (every_rule) {
        for (const auto& r : rules.rules)
            if (!r.skip) add_tests(rule_tests, seen, r.tests);
    } else {
        std::vector<std::string> names;
        for (std::size_t i = 0; i < rules.rules.size(); ++i) {
            const Rule& r = rules.rules[i];
            if (r.skip || !matched[i]) continue;
            names.push_back(r.name);
            add_tests(rule_tests, seen, r.tests);
        }
        if (!names.empty()) rule_reason = "rules matched: " + join(names);
    }

    for (const auto& t : rules.tiers) {
        switch (t.kind) {
            case TierKind::always:
                if (sel.docs_only && !rules.docs_only_always) break;
                sel.tiers.push_back({t.name, sel.docs_only ? "always (documentation-only change)" : "always", t.tests});
                break;
            case TierKind::from_rules:
                if (!rule_tests.empty()) sel.tiers.push_back({t.name, rule_reason, rule_tests});
                break;
            case TierKind::scheduled:
                break;
        }
    }
    if (sel.tiers.empty()) {
        sel.reason = sel.docs_only ? "documentation-only change (docs_only: nothing)" : "no tier selected for these changes";
    }
    return sel;
}

json Selection::to_json() const {
    json rules_j = json::array();
    for (const auto& r : rules) rules_j.push_back({{"name", r.name}, {"paths", r.paths}, {"matched", r.matched}});
    json tiers_j = json::array();
    for (const auto& t : tiers) tiers_j.push_back({{"name", t.name}, {"reason", t.reason}, {"tests", t.tests}});
    json j = {{"source", to_string(source)},
              {"changed_paths", changed_paths},
              {"rules", rules_j},
              {"tiers", tiers_j},
              {"unmatched", unmatched},
              {"unmatched_paths", unmatched_paths},
              {"docs_only", docs_only}};
    if (!reason.empty()) j["reason"] = reason;
    if (!note.empty()) j["note"] = note;
    return j;
}

std::string explain_text(const Selection& s) {
    std::ostringstream o;
    o << "source: " << to_string(s.source) << ", " << s.changed_paths << " changed path(s)\n";
    if (!s.note.empty()) o << "note: " << s.note << "\n";
    o << "rules matched:" << (s.rules.empty() ? " none" : "") << "\n";
    for (const auto& r : s.rules) {
        o << "  " << r.name << " (" << r.matched << " path(s))\n";
        for (const auto& p : r.paths) o << "    " << p << "\n";
        if (r.matched > r.paths.size()) o << "    ... and " << (r.matched - r.paths.size()) << " more\n";
    }
    if (s.unmatched) {
        o << "matched no rule: " << s.unmatched << " path(s)\n";
        for (const auto& p : s.unmatched_paths) o << "    " << p << "\n";
        if (s.unmatched > s.unmatched_paths.size()) o << "    ... and " << (s.unmatched - s.unmatched_paths.size()) << " more\n";
    }
    if (s.docs_only) o << "documentation-only change\n";
    o << "tiers:" << (s.tiers.empty() ? " none (" + s.reason + ")" : "") << "\n";
    for (const auto& t : s.tiers) {
        o << "  " << t.name << ": " << t.reason << "\n";
        for (const auto& test : t.tests) o << "    " << test << "\n";
    }
    return o.str();
}

}  // namespace crcrd::select
