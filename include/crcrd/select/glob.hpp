#pragma once
// Path globs of the rules file (CONTRACT.md §3.1): matched against repo-relative paths,
// anchored at the repo root; `*` and `?` stay inside one path segment, `**` spans segments.

#include <string>
#include <string_view>
#include <vector>

namespace crcrd::select {

class Glob {
public:
    /// Compiles `pattern`. A segment that is exactly `**` matches zero or more whole
    /// segments; `**` inside a segment behaves as `*`. Every other character is literal.
    explicit Glob(std::string pattern);

    /// True when the whole of `path` matches. A leading "./" or "/" in the path is not
    /// special: paths are compared as given (relative, "/"-separated).
    bool matches(std::string_view path) const;
    /// The same for a path already split with split_path() (to split once for many globs).
    bool matches(const std::vector<std::string_view>& segments) const;

    const std::string& pattern() const { return m_pattern; }

private:
    std::string m_pattern;
    std::vector<std::string> m_segments;
};

/// `path` split at "/" (views into `path`).
std::vector<std::string_view> split_path(std::string_view path);

/// Whether one path segment matches one pattern segment with `*` and `?` (never "/").
bool match_segment(std::string_view pattern, std::string_view text);

}  // namespace crcrd::select
