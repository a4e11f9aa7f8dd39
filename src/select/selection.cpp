#include "crcrd/select/selection.hpp"

#include <algorithm>
#include <optional>
#include <set>
#include <sstream>

namespace crcrd::select {

std::string to_string(Source s) {
    switch (s) {
        case Source::payload:
            return "payload";
        case Source::push_commits:
            return "push_commits";
        case Source::git:
            return "git";
        case Source::github_api:
            return "github_api";
        case Source::unknown:
            return "unknown";
        case Source::schedule:
            return "schedule";
        case Source::manual:
            return "manual";
    }
    return "unknown";
}

namespace {

void add_tests(std::vector<std::string>& out, std::set<std::string>& seen,
               const std::vector<std::string>& tests) {
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
    compile_globs(*copy);
    return *copy;
}

}  // namespace

Selection decide(const Rules& rules, const ChangedPaths& changed, RunEvent event,
                 const std::vector<std::string>& requested) {
    Selection sel;
    sel.source = changed.source;
    sel.changed_paths = changed.paths.size();
    sel.note = changed.note;

    if (event == RunEvent::schedule || event == RunEvent::manual || event == RunEvent::bisect) {
        std::vector<std::string> all;
        std::set<std::string> seen;
        for (const auto& r : rules.rules)
            if (!r.skip) add_tests(all, seen, r.tests);
        const bool manual = event != RunEvent::schedule;  // a bisect run asks for its one tier
        for (const auto& t : rules.tiers) {
            if (manual && !requested.empty() &&
                std::find(requested.begin(), requested.end(), t.name) == requested.end())
                continue;
            const char* why = event == RunEvent::bisect ? "bisection: only the failing tests"
                              : manual                  ? "requested (manual run)"
                                                        : "full matrix (scheduled run)";
            sel.tiers.push_back({t.name, why, t.kind == TierKind::from_rules ? all : t.tests});
        }
        if (sel.tiers.empty()) sel.reason = "none of the requested tiers is in the rules file";
        return sel;
    }

    std::optional<Rules> copy;
    const Rules& compiled = with_globs(rules, copy);
    // Per path, the rules it matches; the listed paths are kept as indices and copied once.
    std::vector<std::size_t> counts(rules.rules.size());
    std::vector<std::pair<std::size_t, std::size_t>> listed;  // (rule, path), in path order
    std::vector<std::size_t> unmatched_at;
    listed.reserve(changed.paths.size());
    std::size_t skip_only = 0;
    std::vector<int> ids;
    for (std::size_t p = 0; p < changed.paths.size(); ++p) {
        compiled.globs.match(changed.paths[p], ids);
        bool any = false, real = false;
        std::size_t last = rules.rules.size();
        for (int id : ids) {
            const std::size_t i = compiled.glob_rule[static_cast<std::size_t>(id)];
            if (i == last) continue;  // ids ascend and a rule's globs are adjacent: once per rule
            last = i;
            any = true;
            real = real || !rules.rules[i].skip;
            if (counts[i]++ < k_listed) listed.emplace_back(i, p);
        }
        if (!any) {
            if (sel.unmatched++ < k_listed) unmatched_at.push_back(p);
        } else if (!real) {
            ++skip_only;
        }
    }
    std::vector<std::size_t> slot(rules.rules.size());  // rule -> its place in sel.rules
    for (std::size_t i = 0; i < counts.size(); ++i) {
        if (!counts[i]) continue;
        slot[i] = sel.rules.size();
        sel.rules.push_back({rules.rules[i].name, {}, counts[i]});
        sel.rules.back().paths.reserve(std::min(counts[i], k_listed));
    }
    for (const auto& [i, p] : listed) sel.rules[slot[i]].paths.push_back(changed.paths[p]);
    sel.unmatched_paths.reserve(unmatched_at.size());
    for (std::size_t p : unmatched_at) sel.unmatched_paths.push_back(changed.paths[p]);
    sel.docs_only = changed.source != Source::unknown && !changed.paths.empty() &&
                    skip_only == changed.paths.size();

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
        rule_reason = std::to_string(sel.unmatched) +
                      " changed path(s) matched no rule: every rule's tests (unmatched: all_rules)";
    }
    if (every_rule) {
        for (const auto& r : rules.rules)
            if (!r.skip) add_tests(rule_tests, seen, r.tests);
    } else {
        std::vector<std::string> names;
        for (std::size_t i = 0; i < rules.rules.size(); ++i) {
            const Rule& r = rules.rules[i];
            if (r.skip || !counts[i]) continue;
            names.push_back(r.name);
            add_tests(rule_tests, seen, r.tests);
        }
        if (!names.empty()) rule_reason = "rules matched: " + join(names);
    }

    for (const auto& t : rules.tiers) {
        switch (t.kind) {
            case TierKind::always:
                if (sel.docs_only && !rules.docs_only_always) break;
                sel.tiers.push_back(
                    {t.name, sel.docs_only ? "always (documentation-only change)" : "always",
                     t.tests});
                break;
            case TierKind::from_rules:
                if (!rule_tests.empty()) sel.tiers.push_back({t.name, rule_reason, rule_tests});
                break;
            case TierKind::scheduled:
                break;
        }
    }
    if (sel.tiers.empty()) {
        sel.reason = sel.docs_only ? "documentation-only change (docs_only: nothing)"
                                   : "no tier selected for these changes";
    }
    return sel;
}

std::string explain_text(const Selection& s) {
    std::ostringstream o;
    o << "source: " << to_string(s.source) << ", " << s.changed_paths << " changed path(s)\n";
    if (!s.note.empty()) o << "note: " << s.note << "\n";
    o << "rules matched:" << (s.rules.empty() ? " none" : "") << "\n";
    for (const auto& r : s.rules) {
        o << "  " << r.name << " (" << r.matched << " path(s))\n";
        for (const auto& p : r.paths) o << "    " << p << "\n";
        if (r.matched > r.paths.size())
            o << "    ... and " << (r.matched - r.paths.size()) << " more\n";
    }
    if (s.unmatched) {
        o << "matched no rule: " << s.unmatched << " path(s)\n";
        for (const auto& p : s.unmatched_paths) o << "    " << p << "\n";
        if (s.unmatched > s.unmatched_paths.size())
            o << "    ... and " << (s.unmatched - s.unmatched_paths.size()) << " more\n";
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
