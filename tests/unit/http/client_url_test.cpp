#include <gtest/gtest.h>

#include "crcrd/http/client.hpp"

namespace crcrd::http {
namespace {

TEST(Url, SameOriginIsSchemeHostAndPort) {
    EXPECT_TRUE(same_origin("https://api.github.com/repos/a/b?page=2", "https://api.github.com"));
    EXPECT_TRUE(same_origin("https://API.github.com:443/x", "https://api.github.com/y"));
    EXPECT_FALSE(same_origin("https://api.github.com.evil.example/x", "https://api.github.com"));
    EXPECT_FALSE(same_origin("http://api.github.com/x", "https://api.github.com"));
    EXPECT_FALSE(same_origin("https://api.github.com:8443/x", "https://api.github.com"));
    EXPECT_FALSE(same_origin("not a url", "https://api.github.com"));
}

TEST(Url, NextLinkOfGithubsPagination) {
    EXPECT_EQ(next_link("<https://api.github.com/x?page=1>; rel=\"first\", "
                        "<https://api.github.com/x?page=3>; rel=\"next\""),
              "https://api.github.com/x?page=3");
    EXPECT_EQ(next_link("<https://api.github.com/x?cursor=abc>; rel=\"next\""),
              "https://api.github.com/x?cursor=abc");
    EXPECT_FALSE(next_link("<https://api.github.com/x?page=1>; rel=\"prev\""));
    EXPECT_FALSE(next_link(""));
}

}  // namespace
}  // namespace crcrd::http
