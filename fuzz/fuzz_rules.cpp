// The selection rules file (docs/selection.md, "The rules file") on arbitrary YAML, and a
// selection with what it parsed: never a crash.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "crcrd/select/rules.hpp"
#include "crcrd/select/selection.hpp"

using namespace crcrd;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    std::string text(reinterpret_cast<const char*>(data), size);
    std::vector<std::string> errors;
    auto rules = select::parse_rules(text, "fuzz.yaml", &errors);
    if (!rules && errors.empty()) __builtin_trap();
    if (rules) {
        select::ChangedPaths changed;
        changed.source = select::Source::payload;
        changed.paths = {"aten/src/ATen/native/BinaryOps.cpp", "docs/index.md", "torch/_inductor/ir.py", "README.md",
                         "c10/core/Device.h"};
        auto s = select::decide(*rules, changed, crcrd::RunEvent::pull_request);
        (void)select::explain_text(s);
    }
    return 0;
}
