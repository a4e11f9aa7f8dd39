#include <gtest/gtest.h>

#include "crcrd/core/crypto.hpp"
#include "crcrd/core/units.hpp"

namespace crcrd {
namespace {

TEST(Crypto, HexRoundTripAndRejectsBadInput) {
    EXPECT_EQ(crypto::hex_encode("\x01\xab\xff"), "01abff");
    EXPECT_EQ(*crypto::hex_decode("01ABff"), "\x01\xab\xff");
    EXPECT_FALSE(crypto::hex_decode("abc"));
    EXPECT_FALSE(crypto::hex_decode("zz"));
}

TEST(Crypto, Base64RoundTripAndRejectsBadInput) {
    for (const std::string& s :
         std::vector<std::string>{"", "a", "ab", "abc", "abcd", std::string("\0\1\2\3\4", 5)}) {
        auto enc = crypto::base64_encode(s);
        auto dec = crypto::base64_decode(enc);
        ASSERT_TRUE(dec) << enc;
        EXPECT_EQ(*dec, s);
    }
    EXPECT_FALSE(crypto::base64_decode("abc"));
    EXPECT_FALSE(crypto::base64_decode("ab!="));
    EXPECT_EQ(crypto::base64url_encode("\xfb\xff"), "-_8");
}

TEST(Crypto, ConstantTimeEqual) {
    EXPECT_TRUE(crypto::constant_time_equal("abc", "abc"));
    EXPECT_FALSE(crypto::constant_time_equal("abc", "abd"));
    EXPECT_FALSE(crypto::constant_time_equal("abc", "abcd"));
}

TEST(Crypto, Sha256AndUuid) {
    EXPECT_EQ(crypto::sha256_hex("abc"),
              "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    auto u = crypto::random_uuid();
    EXPECT_EQ(u.size(), 36u);
    EXPECT_EQ(u[14], '4');
    EXPECT_NE(u, crypto::random_uuid());
}

struct DurationCase {
    const char* text;
    long long ms;  // -1: error
};

TEST(Units, Durations) {
    const DurationCase cases[] = {
        {"90s", 90'000},    {"10m", 600'000}, {"2h", 7'200'000}, {"250ms", 250},
        {"1d", 86'400'000}, {"90", -1},       {"s", -1},         {"10 m", -1},
        {"-5s", -1},        {"5w", -1},       {"", -1}};
    for (const auto& c : cases) {
        auto d = parse_duration(c.text);
        if (c.ms < 0) {
            EXPECT_FALSE(d) << c.text;
        } else {
            ASSERT_TRUE(d) << c.text;
            EXPECT_EQ(d->count(), c.ms) << c.text;
        }
    }
    EXPECT_EQ(format_duration(std::chrono::seconds(90)), "90s");
    EXPECT_EQ(format_duration(std::chrono::minutes(10)), "10m");
    EXPECT_EQ(format_seconds(std::chrono::hours(1)), "3600s");
    EXPECT_EQ(format_seconds(std::chrono::milliseconds(1500), " "), "1500 ms");
}

TEST(Units, Sizes) {
    EXPECT_EQ(*parse_size("1048576"), 1048576u);
    EXPECT_EQ(*parse_size("64MiB"), 64u << 20);
    EXPECT_EQ(*parse_size("512KiB"), 512u << 10);
    EXPECT_EQ(*parse_size("2GB"), 2'000'000'000u);
    EXPECT_FALSE(parse_size("64 MiB"));
    EXPECT_FALSE(parse_size("lots"));
}

}  // namespace
}  // namespace crcrd
