#include "crcrd/select/glob.hpp"

namespace crcrd::select {

std::vector<std::string_view> split_path(std::string_view s) {
    std::vector<std::string_view> out;
    std::size_t start = 0;
    for (;;) {
        std::size_t slash = s.find('/', start);
        out.push_back(s.substr(start, slash - start));
        if (slash == std::string_view::npos) return out;
        start = slash + 1;
    }
}

namespace {

/// Segment-wise match with `**` spanning zero or more segments. Iterative with a single
/// backtrack point, as for `*` in a string: linear in practice for real patterns.
bool match_segments(const std::vector<std::string>& pat, const std::vector<std::string_view>& path) {
    std::size_t p = 0, s = 0;
    std::size_t star_p = std::string::npos, star_s = 0;
    while (s < path.size()) {
        if (p < pat.size() && pat[p] == "**") {
            star_p = p++;
            star_s = s;
        } else if (p < pat.size() && match_segment(pat[p], path[s])) {
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

}  // namespace

bool match_segment(std::string_view pattern, std::string_view text) {
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

Glob::Glob(std::string pattern) : m_pattern(std::move(pattern)) {
    for (auto seg : split_path(m_pattern)) m_segments.emplace_back(seg);
}

bool Glob::matches(std::string_view path) const { return match_segments(m_segments, split_path(path)); }

bool Glob::matches(const std::vector<std::string_view>& segments) const { return match_segments(m_segments, segments); }

}  // namespace crcrd::select
