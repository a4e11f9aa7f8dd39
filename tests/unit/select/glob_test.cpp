#include <gtest/gtest.h>

#include <random>
#include <thread>

#include "crcrd/select/glob.hpp"
#include "reference_glob.hpp"

namespace crcrd::select {
namespace {

struct Case {
    const char* pattern;
    const char* path;
    bool match;
};

const Case k_cases[] = {
    // `**` spans segments, including none.
    {"aten/src/ATen/native/**", "aten/src/ATen/native/BinaryOps.cpp", true},
    {"aten/src/ATen/native/**", "aten/src/ATen/native/cuda/Loops.cuh", true},
    {"aten/src/ATen/native/**", "aten/src/ATen/native", true},
    {"aten/src/ATen/native/**", "aten/src/ATen/core/Tensor.h", false},
    {"**/*.md", "README.md", true},
    {"**/*.md", "docs/source/notes/x.md", true},
    {"**/*.md", "docs/source/notes/x.mdx", false},
    {"docs/**", "docs/source/index.rst", true},
    {"docs/**", "mydocs/index.rst", false},
    {"torch/**/test_*.py", "torch/test_x.py", true},
    {"torch/**/test_*.py", "torch/a/b/test_x.py", true},
    {"torch/**/test_*.py", "torch/a/b/x_test.py", false},
    {"**", "anything/at/all", true},
    // `*` and `?` stay inside one segment.
    {"c10/core/*", "c10/core/TensorImpl.h", true},
    {"c10/core/*", "c10/core/impl/LocalDispatchKeySet.h", false},
    {"torch/*.py", "torch/functional.py", true},
    {"torch/*.py", "torch/nn/functional.py", false},
    {"torch/_inductor/*.py", "torch/_inductor/codegen/wrapper.py", false},
    {"test/test_?.py", "test/test_a.py", true},
    {"test/test_?.py", "test/test_ab.py", false},
    {"test/test_?.py", "test/test_/.py", false},
    {"*", "setup.py", true},
    {"*", "torch/setup.py", false},
    {"a**b", "axxb", true},  // "**" inside a segment is "*"
    {"a**b", "ax/xb", false},
    // Anchored at the root.
    {"core/**", "c10/core/TensorImpl.h", false},
    {"setup.py", "tools/setup.py", false},
    {"setup.py", "setup.py", true},
    // Literal characters, including ones that are special elsewhere.
    {"third_party/[x]/*", "third_party/[x]/a", true},
    {"third_party/[x]/*", "third_party/x/a", false},
    {"a.b", "aXb", false},
    {"a+(b)|c$^{2}\\d", "a+(b)|c$^{2}\\d", true},
    {"a+(b)|c$^{2}\\d", "aa(b)|c$^{2}\\d", false},
    // Bytes are bytes: `?` is one byte of a UTF-8 character, not the character.
    {"caf?", "caf\xc3\xa9", false},
    {"caf??", "caf\xc3\xa9", true},
    {"caf\xc3\xa9/*", "caf\xc3\xa9/x", true},
    // Empty segments and an empty path are compared as they are.
    {"a/*/b", "a//b", true},
    {"*", "", true},
    {"", "", true},
    {"", "a", false},
};

/// The ids of the globs the reference matcher says match `path`, ascending.
std::vector<int> reference_ids(const std::vector<std::string>& globs, std::string_view path) {
    std::vector<int> ids;
    for (std::size_t i = 0; i < globs.size(); ++i)
        if (reference::matches(globs[i], path)) ids.push_back(static_cast<int>(i));
    return ids;
}

/// Compiles `globs` into one set and expects it to give the reference's answer for each of
/// 5,000 paths from `next_path` (stops at the first difference); adds the matches to `matched`.
template <class NextPath>
void expect_reference_answers(const std::vector<std::string>& globs, NextPath next_path,
                              std::size_t& matched) {
    const GlobSet set = GlobSet::compile(globs);
    std::vector<int> ids;
    for (int n = 0; n < 5000; ++n) {
        const std::string path = next_path();
        set.match(path, ids);
        const std::vector<int> expected = reference_ids(globs, path);
        ASSERT_EQ(ids, expected) << "path '" << path << "'";
        matched += expected.size();
    }
}

TEST(Glob, Table) {
    for (const auto& c : k_cases) {
        const GlobSet set = GlobSet::compile({c.pattern});
        std::vector<int> ids;
        set.match(c.path, ids);
        EXPECT_EQ(!ids.empty(), c.match) << c.pattern << " vs " << c.path;
        EXPECT_EQ(reference::matches(c.pattern, c.path), c.match)
            << "reference: " << c.pattern << " vs " << c.path;
    }
}

TEST(Glob, OneSetAnswersForEveryGlobOfTheTable) {
    std::vector<std::string> globs;
    for (const auto& c : k_cases) globs.emplace_back(c.pattern);
    const GlobSet set = GlobSet::compile(globs);
    EXPECT_EQ(set.size(), globs.size());
    std::vector<int> ids;
    for (const auto& c : k_cases) {
        set.match(c.path, ids);
        EXPECT_EQ(ids, reference_ids(globs, c.path)) << c.path;
    }
}

TEST(Glob, NoGlobsMatchNothing) {
    std::vector<int> ids = {7};
    GlobSet().match("a", ids);
    EXPECT_TRUE(ids.empty());
    const GlobSet empty = GlobSet::compile({});
    empty.match("a", ids);
    EXPECT_TRUE(ids.empty());
}

/// A random string over `alphabet`, up to `max` characters.
std::string random_string(std::mt19937& rng, std::string_view alphabet, std::size_t max) {
    std::string s(rng() % (max + 1), ' ');
    for (auto& ch : s) ch = alphabet[rng() % alphabet.size()];
    return s;
}

// Property: one set of 400 random globs answers, for each of 5,000 random paths, exactly the
// globs the old one-glob-at-a-time matcher matches. The alphabets are small so that matches
// are common, and hold "/", RE2's special characters, a newline and bytes that are not UTF-8.
TEST(Glob, SameMatchesAsTheReferenceOnRandomGlobsAndPaths) {
    std::mt19937 rng(20261201);
    const std::string_view glob_alphabet("ab/*?**/.[\\+\n\xc3\xff");
    const std::string_view path_alphabet("ab/./[\\+\n\xc3\xff");
    std::vector<std::string> globs;
    for (int i = 0; i < 400; ++i) {
        std::string g = random_string(rng, glob_alphabet, 10);
        if (i % 4 == 0) g = "**/" + g;  // the forms rules use most
        if (i % 4 == 1) g += "/**";
        globs.push_back(g);
    }
    std::size_t matched = 0;
    expect_reference_answers(
        globs, [&] { return random_string(rng, path_alphabet, 12); }, matched);
    EXPECT_GT(matched, 5000u);  // the property was tested on matches, not only on misses
}

/// `n` of `parts`, each chosen at random, joined by "/".
std::string random_segments(std::mt19937& rng, const std::vector<std::string_view>& parts,
                            std::size_t n) {
    std::string out;
    for (std::size_t i = 0; i < n; ++i) (out += i ? "/" : "") += parts[rng() % parts.size()];
    return out;
}

// Property, on globs made of whole segments so that many share prefixes in the compiled form:
// `**` at the start, the end, in the middle and twice in a row, `*` runs, `?`, wildcards with
// a literal prefix, a literal suffix, both, neither and several pieces, empty segments and
// bytes ≥ 0x80. Same answers as the reference for every glob at once.
TEST(Glob, SameMatchesAsTheReferenceOnGlobsOfRandomSegments) {
    std::mt19937 rng(20261202);
    const std::vector<std::string_view> glob_parts = {
        "**",   "**",    "*",   "***", "",      "?",     "??",       "a",   "ab",  "b",
        "a*",   "ab*",   "*b",  "*ab", "a*b",   "a?*",   "*?b",      "?a*", "*a*", "a*b*a",
        "a**b", "*a?b*", "a+b", "[a]", "\xc3*", "*\xff", "\xc3\xa9", "a.b", "?*?"};
    const std::vector<std::string_view> path_parts = {"a",
                                                      "b",
                                                      "ab",
                                                      "ba",
                                                      "aab",
                                                      "abab",
                                                      "abba",
                                                      "",
                                                      "a+b",
                                                      "[a]",
                                                      "\xc3\xa9",
                                                      "\xff",
                                                      "a\xc3"
                                                      "b",
                                                      "aXb",
                                                      "a.b",
                                                      "bab"};
    std::vector<std::string> globs;
    for (int i = 0; i < 400; ++i) globs.push_back(random_segments(rng, glob_parts, 1 + rng() % 4));
    std::size_t matched = 0;
    expect_reference_answers(
        globs, [&] { return random_segments(rng, path_parts, 1 + rng() % 5); }, matched);
    EXPECT_GT(matched, 20000u);
}

// The matcher keeps no state between calls: threads matching at once get the answers one
// thread gets.
TEST(Glob, ThreadsMatchingAtOnceGetTheSameAnswers) {
    std::mt19937 rng(3);
    const std::vector<std::string_view> parts = {"**", "a*", "*b", "a", "b", "?"};
    std::vector<std::string> globs, paths;
    for (int i = 0; i < 100; ++i) globs.push_back(random_segments(rng, parts, 1 + rng() % 3));
    for (int i = 0; i < 2000; ++i)
        paths.push_back(random_segments(rng, {"a", "b", "ab", "ba"}, 1 + rng() % 4));
    const GlobSet set = GlobSet::compile(globs);
    std::vector<std::vector<int>> alone(paths.size());
    for (std::size_t i = 0; i < paths.size(); ++i) set.match(paths[i], alone[i]);
    std::vector<std::size_t> wrong(4);
    std::vector<std::thread> threads;
    for (std::size_t t = 0; t < wrong.size(); ++t) {
        threads.emplace_back([&, t] {
            std::vector<int> ids;
            for (int rep = 0; rep < 5; ++rep)
                for (std::size_t i = 0; i < paths.size(); ++i) {
                    set.match(paths[i], ids);
                    wrong[t] += ids != alone[i];
                }
        });
    }
    for (auto& th : threads) th.join();
    EXPECT_EQ(wrong, std::vector<std::size_t>(4, 0));
}

}  // namespace
}  // namespace crcrd::select
