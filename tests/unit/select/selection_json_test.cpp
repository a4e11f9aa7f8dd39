#include <gtest/gtest.h>

#include <random>

#include "crcrd/select/selection.hpp"

namespace crcrd::select {
namespace {

using namespace std::string_view_literals;

// ASCII bytes that exercise every branch of the string writer: escapes with a short form,
// other control bytes (NUL too), DEL and plain ones.
const std::string_view k_ascii = "ab/\"\\\b\f\n\r\t\0\x01\x1f\x7f "sv;

// Well-formed sequences at the edges of Unicode table 3-7.
const char* const k_utf8[] = {"\xc2\x80",         "\xdf\xbf",         "\xe0\xa0\x80",
                              "\xed\x9f\xbf",     "\xee\x80\x80",     "\xef\xbf\xbf",
                              "\xf0\x90\x80\x80", "\xf4\x8f\xbf\xbf", "\xf3\xbf\xbf\xbf"};

// Ill-formed ones: a lone continuation, overlong forms, a surrogate, past U+10FFFF, bytes that
// never occur, and sequences cut short (also at the end of the string).
const char* const k_not_utf8[] = {"\x80",
                                  "\xc0\xaf",
                                  "\xc1\xbf",
                                  "\xe0\x9f\xbf",
                                  "\xed\xa0\x80",
                                  "\xf0\x8f\xbf\xbf",
                                  "\xf4\x90\x80\x80",
                                  "\xf5\x80\x80\x80",
                                  "\xff",
                                  "\xfe",
                                  "\xc3",
                                  "\xe2\x82",
                                  "\xf0\x9f\x98",
                                  "\xc3x",
                                  "\xe2\x82x",
                                  "\xc3\xa9\xa9"};

std::string random_text(std::mt19937& rng, std::size_t max) {
    std::string s;
    for (std::size_t n = rng() % (max + 1); s.size() < n;) {
        if (rng() % 4 == 0) {
            s += k_utf8[rng() % std::size(k_utf8)];
        } else {
            s += k_ascii[rng() % k_ascii.size()];
        }
    }
    return s;
}

std::vector<std::string> random_list(std::mt19937& rng, std::size_t max) {
    std::vector<std::string> v(rng() % (max + 1));
    for (auto& s : v) s = random_text(rng, 12);
    return v;
}

Selection random_selection(std::mt19937& rng) {
    Selection s;
    s.source = static_cast<Source>(rng() % 7);
    s.changed_paths = rng() % 3 ? rng() % 5000 : 0;
    for (std::size_t n = rng() % 4; n > 0; --n)
        s.rules.push_back(
            {random_text(rng, 8), random_list(rng, 4), rng() % 2 ? std::size_t{rng()} : 0});
    for (std::size_t n = rng() % 4; n > 0; --n)
        s.tiers.push_back({random_text(rng, 8), random_text(rng, 20), random_list(rng, 4)});
    s.unmatched_paths = random_list(rng, 3);
    s.unmatched = s.unmatched_paths.size() + rng() % 3;
    s.docs_only = rng() % 2;
    if (rng() % 2) s.reason = random_text(rng, 20);
    if (rng() % 2) s.note = random_text(rng, 20);
    return s;
}

// Property: the text written directly is the text nlohmann's dump() makes of to_json(), on
// selections with every field present or absent, empty lists, escapes and UTF-8.
TEST(SelectionJson, SameTextAsNlohmannDump) {
    std::mt19937 rng(20261202);
    for (int n = 0; n < 3000; ++n) {
        const Selection s = random_selection(rng);
        ASSERT_EQ(s.to_json_text(), s.to_json().dump()) << "selection " << n;
    }
    Selection empty;
    EXPECT_EQ(empty.to_json_text(), empty.to_json().dump());
    Selection every_byte;  // every ASCII byte, one string each
    for (int c = 0; c < 0x80; ++c) every_byte.unmatched_paths.emplace_back(1, static_cast<char>(c));
    EXPECT_EQ(every_byte.to_json_text(), every_byte.to_json().dump());
}

// A string that is not UTF-8, wherever it is, makes dump() throw; the stored text has its
// invalid bytes replaced instead, so that the run is still planned.
TEST(SelectionJson, NotUtf8IsReplacedWhereDumpThrows) {
    std::mt19937 rng(7);
    for (const char* bad : k_not_utf8) {
        for (int where = 0; where < 4; ++where) {
            Selection s = random_selection(rng);
            const std::string text = "a" + std::string(bad);
            if (where == 0) s.note = text;
            if (where == 1) s.unmatched_paths.push_back(text);
            if (where == 2) s.rules.push_back({"r", {"ok", text}, 2});
            if (where == 3) s.tiers.push_back({"t", "why", {text}});
            EXPECT_THROW(s.to_json().dump(), nlohmann::json::type_error) << where;
            std::string text_out;
            ASSERT_NO_THROW(text_out = s.to_json_text()) << where;
            EXPECT_EQ(text_out,
                      s.to_json().dump(-1, ' ', false, nlohmann::json::error_handler_t::replace))
                << where;
            EXPECT_NE(text_out.find("\xEF\xBF\xBD"), std::string::npos) << where;
        }
    }
}

}  // namespace
}  // namespace crcrd::select
