#pragma once
// `crcrctl explain`: the selection a run would get, decided offline from a rules file and a
// list of changed paths.

#include <filesystem>
#include <iosfwd>
#include <string>

namespace crcrd::app {

struct ExplainOptions {
    std::filesystem::path rules;
    std::string changed_files;  // a file with one path per line, or "-" for standard input
    std::string event = "pull_request";
    bool json = false;
};

/// Prints the explanation (text, or the stored JSON form with `json`). Returns 0, or 2 with
/// every rules error on `err` when the rules file is invalid or a file cannot be read.
int explain(const ExplainOptions& opts, std::istream& in, std::ostream& out, std::ostream& err);

}  // namespace crcrd::app
