#include "crcrd/select/rules.hpp"

#include <yaml-cpp/yaml.h>

#include <set>

#include "crcrd/config/yaml_map.hpp"
#include "crcrd/core/files.hpp"

namespace crcrd::select {

const Tier* Rules::tier(const std::string& name) const {
    for (const auto& t : tiers)
        if (t.name == name) return &t;
    return nullptr;
}

namespace {

void parse_tier(config::YamlMap& m, Tier& t) {
    m.get("name", t.name, true);
    if (t.name == k_build_stage)
        m.error("name", "'" + t.name + "' is the build stage's name (docs/build.md), not a tier's");
    bool always = false, from_rules = false, scheduled = false;
    m.get("always", always);
    m.get("from_rules", from_rules);
    m.get("scheduled", scheduled);
    m.get("tests", t.tests);
    m.get("timeout", t.timeout);
    m.get("labels", t.labels);
    int kinds = int(always) + int(from_rules) + int(scheduled);
    if (kinds != 1) {
        m.error("name",
                "a tier is exactly one of always: true, from_rules: true or scheduled: true");
    }
    t.kind = from_rules ? TierKind::from_rules : scheduled ? TierKind::scheduled : TierKind::always;
    if (t.kind != TierKind::from_rules && t.tests.empty() && kinds == 1) {
        m.error("tests", "required: an always or scheduled tier lists its tests");
    }
    if (t.kind == TierKind::from_rules && !t.tests.empty()) {
        m.error("tests", "a from_rules tier takes its tests from the rules");
    }
    if (t.timeout.count() <= 0) m.error("timeout", "must be positive");
}

void parse_rule(config::YamlMap& m, Rule& r) {
    m.get("name", r.name, true);
    m.get("paths", r.paths, true);
    m.get("tests", r.tests);
    m.get("skip", r.skip);
    for (const auto& p : r.paths) {
        if (p.empty() || p.front() == '/') {
            m.error("paths", "'" + p + "' must be a repo-relative pattern (no leading /)");
        }
    }
    if (r.paths.empty() && m.has("paths")) m.error("paths", "must not be empty");
    if (r.skip && !r.tests.empty()) m.error("tests", "a skip rule selects no tests");
    if (!r.skip && r.tests.empty()) m.error("tests", "required unless skip: true");
}

}  // namespace

Result<Rules> parse_rules(const std::string& yaml_text, const std::filesystem::path& source,
                          std::vector<std::string>* errors) {
    std::vector<std::string> errs;
    auto finish = [&](Rules r) -> Result<Rules> {
        if (errs.empty()) return r;
        std::string prefix = source.string() + ": ";
        for (auto& e : errs) e = prefix + e;
        if (errors) errors->insert(errors->end(), errs.begin(), errs.end());
        return make_error(Errc::rules, errs.front());
    };
    YAML::Node root;
    try {
        root = YAML::Load(yaml_text);
    } catch (const YAML::Exception& e) {
        errs.push_back("(yaml): " + e.msg + " (line " + std::to_string(e.mark.line + 1) + ")");
        return finish({});
    }
    if (!root.IsMap()) {
        errs.push_back("(top): the rules file must be a YAML mapping");
        return finish({});
    }
    config::ParseContext ctx{&errs, source.parent_path()};
    Rules rules;
    rules.source = source;
    {
        config::YamlMap top(ctx, root, "");
        std::set<std::string> tier_names, rule_names;
        int from_rules = 0;
        top.each("tiers", [&](config::YamlMap& m) {
            Tier t;
            parse_tier(m, t);
            if (!t.name.empty() && !tier_names.insert(t.name).second)
                m.error("name", "duplicate tier '" + t.name + "'");
            if (t.kind == TierKind::from_rules) ++from_rules;
            rules.tiers.push_back(std::move(t));
        });
        if (rules.tiers.empty()) top.error("tiers", "required: at least one tier");
        if (from_rules > 1) top.error("tiers", "at most one tier may be from_rules");
        top.each("rules", [&](config::YamlMap& m) {
            Rule r;
            parse_rule(m, r);
            if (!r.name.empty() && !rule_names.insert(r.name).second)
                m.error("name", "duplicate rule '" + r.name + "'");
            rules.rules.push_back(std::move(r));
        });
        std::string unmatched = "all_rules", docs_only = "always_tiers";
        top.get("unmatched", unmatched);
        top.get("docs_only", docs_only);
        if (unmatched != "all_rules" && unmatched != "nothing")
            top.error("unmatched", "'" + unmatched + "' is not one of all_rules | nothing");
        if (docs_only != "always_tiers" && docs_only != "nothing")
            top.error("docs_only", "'" + docs_only + "' is not one of always_tiers | nothing");
        rules.unmatched_all_rules = unmatched == "all_rules";
        rules.docs_only_always = docs_only == "always_tiers";
        if (top.has("full_matrix")) {
            config::YamlMap fm = top.child("full_matrix");
            std::string schedule, ref = "main";
            fm.get("schedule", schedule, true);
            fm.get("ref", ref);
            if (!schedule.empty()) {
                auto cron = Cron::parse(schedule);
                if (!cron)
                    fm.error("schedule", cron.error().message);
                else
                    rules.full_matrix = FullMatrix{*cron, ref};
            }
        } else {
            top.raw("full_matrix");
        }
    }
    if (errs.empty()) compile_globs(rules);
    return finish(std::move(rules));
}

void compile_globs(Rules& rules) {
    std::vector<std::string> globs;
    rules.glob_rule.clear();
    for (std::size_t i = 0; i < rules.rules.size(); ++i) {
        for (const auto& p : rules.rules[i].paths) {
            globs.push_back(p);
            rules.glob_rule.push_back(i);
        }
    }
    rules.globs = GlobSet::compile(globs);
}

Result<Rules> load_rules(const std::filesystem::path& path, std::vector<std::string>* errors) {
    auto text = read_file(path, 4 * 1024 * 1024);
    if (!text) {
        if (errors) errors->push_back(path.string() + ": " + text.error().message);
        return text.error();
    }
    return parse_rules(*text, path, errors);
}

}  // namespace crcrd::select
