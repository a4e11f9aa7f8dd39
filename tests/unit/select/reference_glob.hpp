#pragma once
// The glob matcher crcrd used before globs were compiled into one RE2::Set: one glob at a
// time, segment by segment. Kept only as the tests' reference for GlobSet: same matches.

#include <string>
#include <string_view>
#include <vector>

namespace crcrd::select::reference {

/// `s` split at "/".
inline std::vector<std::string_view> split_path(std::string_view s) {
    std::vector<std::string_view> out;
    for (std::size_t start = 0;;) {
        std::size_t slash = s.find('/', start);
        out.push_back(s.substr(start, slash - start));
        if (slash == std::string_view::npos) return out;
        start = slash + 1;
    }
}

/// One path segment against one glob segment with `*` and `?`.
inline bool match_segment(std::string_view pattern, std::string_view text) {
    std::size_t p = 0, t = 0;
    std::size_t star_p = std::string_view::npos, star_t = 0;
    while (t < text.size()) {
        if (p < pattern.size() && pattern[p] == '*') {
            while (p < pattern.size() && pattern[p] == '*') ++p;  // "**" inside a segment is "*"
            star_p = p;
            star_t = t;
        } else if (p < pattern.size() && (pattern[p] == '?' || pattern[p] == text[t])) {
            ++p;
            ++t;
        } else if (star_p != std::string_view::npos) {
            p = star_p;
            t = ++star_t;
        } else {
            return false;
        }
    }
    while (p < pattern.size() && pattern[p] == '*') ++p;
    return p == pattern.size();
}

/// Whether `glob` matches the whole of `path`: `**` segments span zero or more segments.
inline bool matches(std::string_view glob, std::string_view path) {
    const auto pat = split_path(glob);
    const auto segs = split_path(path);
    std::size_t p = 0, s = 0;
    std::size_t star_p = std::string::npos, star_s = 0;
    while (s < segs.size()) {
        if (p < pat.size() && pat[p] == "**") {
            star_p = p++;
            star_s = s;
        } else if (p < pat.size() && match_segment(pat[p], segs[s])) {
            ++p;
            ++s;
        } else if (star_p != std::string::npos) {
            p = star_p + 1;
            s = ++star_s;
        } else {
            return false;
        }
    }
    while (p < pat.size() && pat[p] == "**") ++p;
    return p == pat.size();
}

}  // namespace crcrd::select::reference
