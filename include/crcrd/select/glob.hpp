#pragma once
// Path globs of the rules file (CONTRACT.md §3.1): matched against repo-relative paths,
// anchored at the repo root; `*` and `?` stay inside one path segment, `**` spans segments.
// All the globs of a rules file are compiled once into one automaton (RE2::Set), so that a
// changed path is examined once whatever the number of globs.

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "crcrd/core/result.hpp"

namespace crcrd::select {

/// The RE2 regex (for Latin-1 text: one character per byte) that matches "/" + P exactly when
/// `glob` matches the whole of path P. A segment that is exactly `**` matches zero or more
/// whole segments; `**` inside a segment behaves as `*`; `*` matches any run of bytes other
/// than "/", `?` one byte other than "/"; every other byte is literal. Paths are compared as
/// given (relative, "/"-separated): a leading "./" or "/" is not special.
std::string glob_regex(std::string_view glob);

/// A list of globs compiled into one matcher. Immutable once compiled, cheap to copy (copies
/// share the compiled form) and safe to use from several threads at once.
class GlobSet {
public:
    /// A set of no globs: matches nothing.
    GlobSet() = default;

    /// Compiles `globs` (glob i gets id i). Code "glob" when one cannot be compiled (only
    /// RE2's memory budget can refuse a glob); the message names it.
    static Result<GlobSet> compile(const std::vector<std::string>& globs);

    /// Sets `ids` to the ids of every glob that matches the whole of `path`, ascending.
    void match(std::string_view path, std::vector<int>& ids) const;

    std::size_t size() const;

private:
    struct Compiled;
    std::shared_ptr<const Compiled> m_compiled;
};

}  // namespace crcrd::select
