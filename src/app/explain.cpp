#include "crcrd/app/explain.hpp"

#include <istream>
#include <ostream>
#include <sstream>

#include "crcrd/core/files.hpp"
#include "crcrd/select/selection.hpp"

namespace crcrd::app {

int explain(const ExplainOptions& opts, std::istream& in, std::ostream& out, std::ostream& err) {
    std::vector<std::string> errors;
    auto rules = select::load_rules(opts.rules, &errors);
    if (!rules) {
        for (const auto& e : errors) err << e << "\n";
        return 2;
    }
    std::string text;
    if (opts.changed_files == "-") {
        std::ostringstream buf;
        buf << in.rdbuf();
        text = buf.str();
    } else {
        auto t = read_file(opts.changed_files, 256 * 1024 * 1024);
        if (!t) {
            err << "crcrctl explain: " << t.error().message << "\n";
            return 2;
        }
        text = std::move(*t);
    }
    select::ChangedPaths changed{select::Source::payload, {}, ""};
    std::istringstream lines(text);
    for (std::string line; std::getline(lines, line);) {
        line = trim(std::move(line));
        if (!line.empty()) changed.paths.push_back(line);
    }
    const auto event = from_string<RunEvent>(opts.event);
    if (!event) {
        err << "crcrctl explain: --event '" << opts.event << "' is not one of "
            << joined_names<RunEvent>(", ") << "\n";
        return 2;
    }
    auto sel = select::decide(*rules, changed, *event);
    if (opts.json)
        out << sel.to_json().dump(2) << "\n";
    else
        out << select::explain_text(sel);
    return 0;
}

}  // namespace crcrd::app
