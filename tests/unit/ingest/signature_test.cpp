#include <gtest/gtest.h>

#include "crcrd/core/crypto.hpp"
#include "crcrd/ingest/signature.hpp"

namespace crcrd::ingest {
namespace {

// GitHub's published test vector (docs: "Validating webhook deliveries").
constexpr const char* k_gh_secret = "It's a Secret to Everybody";
constexpr const char* k_gh_body = "Hello, World!";
constexpr const char* k_gh_sig =
    "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17";

TEST(GithubSignature, PublishedVector) {
    EXPECT_EQ(sign_github(k_gh_secret, k_gh_body), k_gh_sig);
    auto ok = verify_github(k_gh_sig, k_gh_body, {{"current", k_gh_secret}});
    ASSERT_TRUE(ok);
    EXPECT_EQ(*ok, "current");
}

TEST(GithubSignature, RotationAcceptsAnyActiveSecret) {
    std::vector<NamedKey> keys = {{"old", "first secret"}, {"new", k_gh_secret}};
    auto ok = verify_github(k_gh_sig, k_gh_body, keys);
    ASSERT_TRUE(ok);
    EXPECT_EQ(*ok, "new");
}

TEST(GithubSignature, Rejections) {
    std::vector<NamedKey> keys = {{"current", k_gh_secret}};
    struct Case {
        std::string header, body, why;
    };
    const Case cases[] = {
        {"", k_gh_body, "missing"},
        {"sha1=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17", k_gh_body,
         "malformed"},
        {"sha256=757107ea", k_gh_body, "malformed"},
        {"sha256=zz7107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17", k_gh_body,
         "malformed"},
        {k_gh_sig, "Hello, World?", "does not match"},
        {"sha256=857107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17", k_gh_body,
         "does not match"},
    };
    for (const auto& c : cases) {
        auto r = verify_github(c.header, c.body, keys);
        ASSERT_FALSE(r) << c.header;
        EXPECT_EQ(r.error().code, Errc::unauthorized);
        EXPECT_NE(r.error().message.find(c.why), std::string::npos) << r.error().message;
    }
    EXPECT_FALSE(verify_github(k_gh_sig, k_gh_body, {}));
}

// The Standard Webhooks specification's example.
constexpr const char* k_sw_secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
constexpr const char* k_sw_id = "msg_p5jXN8AQM9LWM0D4loKWxJek";
constexpr std::int64_t k_sw_ts = 1614265330;
constexpr const char* k_sw_body = R"({"test": 2432232314})";
constexpr const char* k_sw_sig = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=";

TEST(StandardWebhooks, SpecVector) {
    auto key = decode_whsec(k_sw_secret);
    ASSERT_TRUE(key);
    EXPECT_EQ(sign_standard(*key, k_sw_id, k_sw_ts, k_sw_body), k_sw_sig);
    std::vector<NamedKey> keys = {{"relay", *key}};
    auto ok = verify_standard(k_sw_id, std::to_string(k_sw_ts), k_sw_sig, k_sw_body, keys,
                              k_sw_ts + 10, std::chrono::seconds(300));
    ASSERT_TRUE(ok);
    EXPECT_EQ(*ok, "relay");
    // Several signatures, one of another version, one valid.
    std::string list = std::string("v2,abc v1,AAAA ") + k_sw_sig;
    EXPECT_TRUE(verify_standard(k_sw_id, std::to_string(k_sw_ts), list, k_sw_body, keys, k_sw_ts,
                                std::chrono::seconds(300)));
}

TEST(StandardWebhooks, Rejections) {
    auto key = decode_whsec(k_sw_secret);
    std::vector<NamedKey> keys = {{"relay", *key}};
    const auto skew = std::chrono::seconds(300);
    const std::string ts = std::to_string(k_sw_ts);
    EXPECT_FALSE(
        verify_standard(k_sw_id, ts, k_sw_sig, k_sw_body, keys, k_sw_ts + 301, skew));  // stale
    EXPECT_FALSE(
        verify_standard(k_sw_id, ts, k_sw_sig, k_sw_body, keys, k_sw_ts - 301, skew));  // future
    EXPECT_TRUE(verify_standard(k_sw_id, ts, k_sw_sig, k_sw_body, keys, k_sw_ts + 300, skew));
    EXPECT_FALSE(verify_standard("msg_other", ts, k_sw_sig, k_sw_body, keys, k_sw_ts,
                                 skew));  // id is signed
    EXPECT_FALSE(verify_standard(k_sw_id, ts, k_sw_sig, R"({"test": 1})", keys, k_sw_ts, skew));
    EXPECT_FALSE(verify_standard(k_sw_id, "soon", k_sw_sig, k_sw_body, keys, k_sw_ts, skew));
    EXPECT_FALSE(verify_standard(k_sw_id, ts, "v2,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=",
                                 k_sw_body, keys, k_sw_ts, skew));
    EXPECT_FALSE(verify_standard("", ts, k_sw_sig, k_sw_body, keys, k_sw_ts, skew));
    EXPECT_FALSE(decode_whsec("whsec_not base64!"));
    EXPECT_FALSE(decode_whsec("whsec_c2hvcnQ="));  // too short to be a key
}

}  // namespace
}  // namespace crcrd::ingest
