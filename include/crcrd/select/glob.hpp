#pragma once
// Path globs of the rules file (docs/selection.md): matched against repo-relative paths,
// anchored at the repo root; `*` and `?` stay inside one path segment, `**` spans segments.
// All the globs of a rules file are compiled once into one matcher, so that a changed path is
// examined once, segment by segment, whatever the number of globs.

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace crcrd::select {

/// A list of globs compiled into one matcher. Glob and path are split at "/" into segments
/// and compared segment by segment, bytes as bytes (a path need not be UTF-8): a glob segment
/// that is exactly `**` matches zero or more whole segments; any other `*` (also `**` or `***`
/// inside a segment) matches a run of bytes within one segment, `?` one byte of it; every
/// other byte is literal. Paths are compared as given (relative, "/"-separated): a leading
/// "./" or "/" is not special, and an empty segment ("a//b", "") is a segment like any other.
/// Immutable once compiled, cheap to copy (copies share the compiled form) and safe to use
/// from several threads at once.
class GlobSet {
  public:
    /// A set of no globs: matches nothing.
    GlobSet() = default;

    /// Compiles `globs` (glob i gets id i). Every string is a glob, so this cannot fail.
    static GlobSet compile(const std::vector<std::string>& globs);

    /// Sets `ids` to the ids of every glob that matches the whole of `path`, ascending. Does not
    /// allocate once `ids` and the calling thread's scratch space have grown to their need.
    void match(std::string_view path, std::vector<int>& ids) const;

    std::size_t size() const;

  private:
    struct Compiled;
    std::shared_ptr<const Compiled> m_compiled;
};

}  // namespace crcrd::select
