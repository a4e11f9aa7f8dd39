// github::Client against the in-test GitHub: the token on every request, pages followed on the
// API's origin only, and each way a list can fail.
#include <gtest/gtest.h>

#include "crcrd/github/client.hpp"
#include "support/certs.hpp"
#include "support/fake_github.hpp"

namespace crcrd::github {
namespace {

using nlohmann::json;

http::Response page(json items, const std::string& next = "") {
    auto r = http::Response::json(200, items);
    if (!next.empty())
        r.headers.emplace_back("Link",
                               "<" + next + ">; rel=\"next\", <" + next + ">; rel=\"last\"");
    return r;
}

TEST(GithubClient, ReadsEveryPageOnTheApiOriginWithTheToken) {
    std::string self;
    FakeGithub gh([&](const http::Request& r) {
        if (r.query_param("page") == std::optional<std::string>("2")) return page({3});
        return page({1, 2}, self + "/items?page=2");
    });
    self = gh.url();
    Client client(gh.url() + "/", "s3cret", test_certs().ca, std::chrono::seconds(10));
    EXPECT_EQ(client.base(), gh.url());  // trailing slash dropped
    std::vector<int> seen;
    auto out = client.list("/items", 10, [&](const json& p) {
        for (const auto& v : p) seen.push_back(v.get<int>());
        return true;
    });
    EXPECT_FALSE(out.error);
    EXPECT_TRUE(out.exhausted);
    EXPECT_EQ(seen, (std::vector<int>{1, 2, 3}));
    auto reqs = gh.requests();
    ASSERT_EQ(reqs.size(), 2u);
    for (const auto& r : reqs)
        EXPECT_EQ(r.header("Authorization"), std::optional<std::string_view>("Bearer s3cret"));
}

TEST(GithubClient, StopsWhenAskedAndAtTheMaximumOfPages) {
    std::string self;
    FakeGithub gh([&](const http::Request&) { return page({1}, self + "/items?page=n"); });
    self = gh.url();
    Client client(gh.url(), "t", test_certs().ca, std::chrono::seconds(10));
    auto stopped = client.list("/items", 10, [](const json&) { return false; });
    EXPECT_FALSE(stopped.error);
    EXPECT_FALSE(stopped.exhausted);
    EXPECT_EQ(gh.requests().size(), 1u);
    auto capped = client.list("/items", 3, [](const json&) { return true; });
    EXPECT_FALSE(capped.error);
    EXPECT_FALSE(capped.exhausted);  // a next page was left
    EXPECT_EQ(gh.requests().size(), 4u);
}

TEST(GithubClient, ANextPageElsewhereIsRefusedNotFollowed) {
    FakeGithub gh([](const http::Request&) { return page({1}, "https://attacker.example/steal"); });
    Client client(gh.url(), "t", test_certs().ca, std::chrono::seconds(10));
    auto out = client.list("/items", 10, [](const json&) { return true; });
    ASSERT_TRUE(out.error);
    EXPECT_EQ(out.error->kind, ListError::Kind::foreign_next);
    EXPECT_EQ(out.error->url, "https://attacker.example/steal");
    EXPECT_EQ(gh.requests().size(), 1u);
}

TEST(GithubClient, AnErrorAnswerOrABodyThatIsNotAListEndsTheList) {
    FakeGithub gh([](const http::Request& r) {
        if (r.path == "/limited")
            return http::Response::json(403, {{"message", "API rate limit exceeded"}});
        return http::Response::json(200, {{"not", "a list"}});
    });
    Client client(gh.url(), "t", test_certs().ca, std::chrono::seconds(10));
    auto limited = client.list("/limited", 10, [](const json&) { return true; });
    ASSERT_TRUE(limited.error);
    EXPECT_EQ(limited.error->kind, ListError::Kind::status);
    EXPECT_EQ(limited.error->status, 403);
    EXPECT_NE(limited.error->body.find("rate limit"), std::string::npos);
    auto object = client.list("/object", 10, [](const json&) { return true; });
    ASSERT_TRUE(object.error);
    EXPECT_EQ(object.error->kind, ListError::Kind::not_a_list);
    Client nowhere("https://127.0.0.1:1", "t", test_certs().ca, std::chrono::seconds(2));
    auto down = nowhere.list("/items", 10, [](const json&) { return true; });
    ASSERT_TRUE(down.error);
    EXPECT_EQ(down.error->kind, ListError::Kind::transport);
    EXPECT_FALSE(down.error->message.empty());
}

TEST(GithubClient, PostsJsonWithTheToken) {
    FakeGithub gh([](const http::Request& r) {
        return http::Response::json(201, {{"echo", json::parse(r.body)}});
    });
    Client client(gh.url(), "t", test_certs().ca, std::chrono::seconds(10));
    auto r = client.post("/repos/o/r/statuses/abc", R"({"state":"success"})");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 201);
    auto reqs = gh.requests();
    ASSERT_EQ(reqs.size(), 1u);
    EXPECT_EQ(reqs[0].path, "/repos/o/r/statuses/abc");
    EXPECT_EQ(reqs[0].header("Content-Type"), std::optional<std::string_view>("application/json"));
    EXPECT_EQ(reqs[0].header("Authorization"), std::optional<std::string_view>("Bearer t"));
}

}  // namespace
}  // namespace crcrd::github
