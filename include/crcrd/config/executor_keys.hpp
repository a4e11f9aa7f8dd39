#pragma once
// How the configuration reads an executor's own keys, `execution.<name>`, without knowing
// them: each executor's folder (src/exec/<name>/) supplies an ExecutorKeys, and
// exec::executor_keys() lists them for config::load. The configuration keeps the chosen
// executor's section as the executor's own type.

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace crcrd::config {

class YamlMap;
struct BuildConfig;
struct ExecutionConfig;

/// An executor's own settings, as its folder read them from `execution.<name>`.
struct ExecutorSection {
    virtual ~ExecutorSection() = default;
};

/// One executor, as the configuration knows it.
struct ExecutorKeys {
    std::string name;  // the value of execution.executor that picks it
    /// Reads `execution.<name>` when the file has it (chosen or not: a section is checked
    /// either way), recording every error on `m` under its key path. Null: the executor has no
    /// keys of its own, and such a section is an error.
    std::function<std::shared_ptr<const ExecutorSection>(YamlMap& m)> parse;
    /// The section must be there when the executor is chosen.
    bool section_required = false;
    /// The executor's own keys of `build:` (docs/build.md), e.g. Slurm's partition: their
    /// names, and how the chosen executor reads them, given the build's other keys and the
    /// execution section (read first). Another executor's key in `build:` is an error naming
    /// that executor. Null: it has none.
    std::vector<std::string> build_keys;
    std::function<std::shared_ptr<const ExecutorSection>(YamlMap& build, const BuildConfig& b,
                                                         const ExecutionConfig& execution)>
        parse_build;
};

}  // namespace crcrd::config
