#include "crcrd/select/glob.hpp"

#include <re2/re2.h>
#include <re2/set.h>

#include <algorithm>

namespace crcrd::select {

namespace {

/// Latin-1, so that `?` is one byte and a path that is not UTF-8 is still matched byte for
/// byte; the budget is four times RE2's default: 600 globs take about 1 MiB of program and
/// the rest is the lazily built DFA, shared by every path matched.
RE2::Options glob_options() {
    RE2::Options o;
    o.set_encoding(RE2::Options::EncodingLatin1);
    o.set_log_errors(false);
    o.set_max_mem(32 << 20);
    return o;
}

}  // namespace

std::string glob_regex(std::string_view glob) {
    // Over "/" + path every segment is one "/x" unit, so each glob segment becomes a unit too.
    std::string out;
    for (std::size_t start = 0;;) {
        const std::size_t slash = std::min(glob.find('/', start), glob.size());
        const std::string_view seg = glob.substr(start, slash - start);
        if (seg == "**") {
            out += "(?:/[^/]*)*";
        } else {
            out += '/';
            for (std::size_t i = 0; i < seg.size(); ++i) {
                if (seg[i] == '*') {
                    while (i + 1 < seg.size() && seg[i + 1] == '*') ++i;
                    out += "[^/]*";
                } else if (seg[i] == '?') {
                    out += "[^/]";
                } else {
                    out += RE2::QuoteMeta(re2::StringPiece(seg.data() + i, 1));
                }
            }
        }
        if (slash == glob.size()) return out;
        start = slash + 1;
    }
}

struct GlobSet::Compiled {
    Compiled() : set(glob_options(), RE2::ANCHOR_BOTH) {}
    RE2::Set set;
    std::vector<std::string> regexes;  // for the fallback, should the DFA ever give up
};

Result<GlobSet> GlobSet::compile(const std::vector<std::string>& globs) {
    auto c = std::make_shared<Compiled>();
    for (const auto& g : globs) {
        c->regexes.push_back(glob_regex(g));
        std::string error;
        if (c->set.Add(c->regexes.back(), &error) < 0) {
            return make_error("glob", "'" + g + "' cannot be compiled: " + error);
        }
    }
    if (!c->set.Compile()) {
        return make_error("glob",
                          std::to_string(globs.size()) + " globs are too many to compile together");
    }
    GlobSet s;
    s.m_compiled = std::move(c);
    return s;
}

void GlobSet::match(std::string_view path, std::vector<int>& ids) const {
    ids.clear();
    if (!m_compiled || m_compiled->regexes.empty()) return;
    thread_local std::string text;
    text.assign(1, '/');
    text.append(path);
    RE2::Set::ErrorInfo info{};
    if (m_compiled->set.Match(text, &ids, &info)) {
        std::sort(ids.begin(), ids.end());
    } else if (info.kind != RE2::Set::kNoError) {
        // The DFA ran out of memory: one regex after the other, slower but the same answer.
        ids.clear();
        for (std::size_t i = 0; i < m_compiled->regexes.size(); ++i) {
            if (RE2::FullMatch(text, RE2(m_compiled->regexes[i], glob_options())))
                ids.push_back(static_cast<int>(i));
        }
    }
}

std::size_t GlobSet::size() const {
    return m_compiled ? m_compiled->regexes.size() : 0;
}

}  // namespace crcrd::select
