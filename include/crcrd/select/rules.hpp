#pragma once
// The rules file (docs/selection.md): ordered tiers, path rules, policies, the full matrix.

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "crcrd/core/result.hpp"
#include "crcrd/core/units.hpp"
#include "crcrd/select/cron.hpp"
#include "crcrd/select/glob.hpp"

namespace crcrd::select {

enum class TierKind { always, from_rules, scheduled };

struct Tier {
    std::string name;
    TierKind kind = TierKind::always;
    std::vector<std::string> tests;  // as written; ${PYTORCH_DIR} is expanded at execution
    Duration timeout = std::chrono::minutes(60);
    std::vector<std::string> labels;  // runner labels a job of this tier needs
};

struct Rule {
    std::string name;
    std::vector<std::string> paths;  // globs (glob.hpp)
    std::vector<std::string> tests;
    bool skip = false;
};

struct FullMatrix {
    Cron schedule;
    std::string ref = "main";
};

struct Rules {
    std::filesystem::path source;
    std::vector<Tier> tiers;
    std::vector<Rule> rules;
    bool unmatched_all_rules = true;  // unmatched: all_rules | nothing
    bool docs_only_always = true;     // docs_only: always_tiers | nothing
    std::optional<FullMatrix> full_matrix;
    // Every rule's paths compiled into one matcher (compile_globs()): glob id i is one of the
    // paths of rule glob_rule[i], in rules-file order.
    GlobSet globs;
    std::vector<std::size_t> glob_rule;

    const Tier* tier(const std::string& name) const;
};

/// Compiles the paths of every rule of `rules` into `rules.globs` and `rules.glob_rule`.
/// parse_rules() does it; decide() compiles a copy for a Rules built by hand without it.
void compile_globs(Rules& rules);

/// Parses and validates rules YAML. Errors are "<file>: <key path>: <message> (line N)", all
/// of them; `source` names the file in them.
Result<Rules> parse_rules(const std::string& yaml_text, const std::filesystem::path& source,
                          std::vector<std::string>* errors);

/// Reads and parses the rules file at `path`.
Result<Rules> load_rules(const std::filesystem::path& path, std::vector<std::string>* errors);

}  // namespace crcrd::select
