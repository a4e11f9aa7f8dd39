#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "crcrd/core/files.hpp"
#include "crcrd/core/sha.hpp"
#include "crcrd/ingest/event.hpp"

namespace crcrd::ingest {
namespace {

using nlohmann::json;

json fixture(const std::string& rel) {
    auto text = read_file(std::string(CRCRD_FIXTURES_DIR) + "/" + rel);
    if (!text) throw std::runtime_error(text.error().message);
    return json::parse(*text);
}

constexpr const char* k_pr_sha = "ec26c3e57ca3a959ca5aad62de7213c562f8c821";
constexpr const char* k_base_sha = "f95f852bd8fca8fcc58a9a2d6c842781e32a215e";
constexpr const char* k_push_sha = "6113728f27ae82c7b1a177c8d03f9e96e0adf246";

struct FixtureCase {
    const char* file;
    const char* header;  // X-GitHub-Event ("" for Standard Webhooks)
    Intent intent;
    const char* form;
    const char* sha;
    std::optional<std::int64_t> pr;
    const char* ref;
    const char* base_ref;
    const char* base_sha;
};

const FixtureCase k_fixtures[] = {
    {"crcr/pull_request-synchronize.dispatch.json", "repository_dispatch", Intent::run, "crcr-v1",
     k_pr_sha, 2, "refs/pull/2/head", "main", k_base_sha},
    {"crcr/pull_request-fork.dispatch.json", "repository_dispatch", Intent::run, "crcr-v1",
     k_pr_sha, 2, "refs/pull/2/head", "main", k_base_sha},
    {"crcr/pull_request-closed.dispatch.json", "repository_dispatch", Intent::cancel_pr, "crcr-v1",
     "ec26c3e57ca3a959ca5aad62de7213c562f8c821", 2, "", "", ""},
    {"crcr/push.dispatch.json", "repository_dispatch", Intent::run, "crcr-v1", k_push_sha,
     std::nullopt, "refs/heads/master", "", ""},
    {"crcr/legacy-pr-trigger.dispatch.json", "repository_dispatch", Intent::run,
     "pytorch-pr-trigger", k_pr_sha, 2, "refs/pull/2/head", "main", ""},
    {"crcr/direct-pytorch-crcr.json", "", Intent::run, "pytorch-crcr", k_pr_sha, 2,
     "refs/pull/2/head", "", ""},
    {"crcr/direct-pytorch-crcr.json", "repository_dispatch", Intent::run, "pytorch-crcr", k_pr_sha,
     2, "refs/pull/2/head", "", ""},
    {"github-webhooks/ping.json", "ping", Intent::ping, "ping", "", std::nullopt, "", "", ""},
    {"github-webhooks/pull_request-opened.json", "pull_request", Intent::run, "github", k_pr_sha, 2,
     "refs/pull/2/head", "master", k_base_sha},
    {"github-webhooks/pull_request-synchronize.json", "pull_request", Intent::run, "github",
     k_pr_sha, 2, "refs/pull/2/head", "master", k_base_sha},
    {"github-webhooks/pull_request-closed.json", "pull_request", Intent::cancel_pr, "github",
     "ec26c3e57ca3a959ca5aad62de7213c562f8c821", 2, "", "", ""},
    {"github-webhooks/pull_request-labeled.json", "pull_request", Intent::ignore, "github", "", 2,
     "", "", ""},
    {"github-webhooks/push-with-new-branch.json", "push", Intent::run, "github", k_push_sha,
     std::nullopt, "refs/heads/master", "", ""},
    {"github-webhooks/push.json", "push", Intent::ignore, "github", "", std::nullopt,
     "refs/tags/simple-tag", "", ""},
    {"github-webhooks/repository_dispatch.json", "repository_dispatch", Intent::ignore, "dispatch",
     "", std::nullopt, "", "", ""},
};

TEST(Normalize, EveryFixture) {
    for (const auto& c : k_fixtures) {
        SCOPED_TRACE(c.file);
        auto e = normalize(c.header, fixture(c.file).dump());
        ASSERT_TRUE(e) << e.error().message;
        EXPECT_EQ(e->intent, c.intent);
        EXPECT_EQ(e->form, c.form);
        EXPECT_EQ(e->sha, c.sha);
        EXPECT_EQ(e->pr, c.pr);
        EXPECT_EQ(e->ref, c.ref);
        EXPECT_EQ(e->base_ref, c.base_ref);
        EXPECT_EQ(e->base_sha, c.base_sha);
    }
}

TEST(Normalize, CrcrPullRequestDetails) {
    auto e = normalize("repository_dispatch",
                       fixture("crcr/pull_request-synchronize.dispatch.json").dump());
    ASSERT_TRUE(e);
    EXPECT_EQ(e->event, RunEvent::pull_request);
    EXPECT_EQ(e->action, "synchronize");
    EXPECT_EQ(e->upstream_repo, "pytorch/pytorch");
    EXPECT_EQ(e->head_repo, "pytorch/pytorch");
    EXPECT_EQ(e->downstream_repo, "torch-spyre/torch-spyre");
    EXPECT_EQ(e->sender, "pytorch-fdn-cross-repo-ci-relay[bot]");
    EXPECT_EQ(e->crcr_delivery_id, "6d1c2a70-5a1b-11f0-8d4e-2f1c9a1b7e01");
    EXPECT_EQ(e->labels, std::vector<std::string>{"bug"});
    EXPECT_FALSE(e->changed_files);

    auto fork =
        normalize("repository_dispatch", fixture("crcr/pull_request-fork.dispatch.json").dump());
    ASSERT_TRUE(fork);
    EXPECT_EQ(fork->head_repo, "someone/pytorch");
    EXPECT_TRUE(fork->labels.empty());
}

TEST(Normalize, PushCommitsAndDirectChangedFiles) {
    auto push = normalize("repository_dispatch", fixture("crcr/push.dispatch.json").dump());
    ASSERT_TRUE(push);
    ASSERT_TRUE(push->push_files);
    EXPECT_EQ(*push->push_files, std::vector<std::string>{"README.md"});
    EXPECT_EQ(push->push_commit_count, 1u);

    auto direct = normalize("", fixture("crcr/direct-pytorch-crcr.json").dump());
    ASSERT_TRUE(direct);
    ASSERT_TRUE(direct->changed_files);
    EXPECT_EQ(direct->changed_files->size(), 2u);
    EXPECT_EQ(direct->event, RunEvent::pull_request);
}

TEST(Normalize, ShaIsPinnedLowerCaseAndValidated) {
    auto body = fixture("crcr/pull_request-synchronize.dispatch.json");
    auto& sha = body["client_payload"]["payload"]["pull_request"]["head"]["sha"];

    sha = "EC26C3E57CA3A959CA5AAD62DE7213C562F8C821";
    auto upper = normalize("repository_dispatch", body.dump());
    ASSERT_TRUE(upper);
    EXPECT_EQ(upper->sha, k_pr_sha);

    for (const char* bad : {"ec26c3e", "0000000000000000000000000000000000000000",
                            "ec26c3e57ca3a959ca5aad62de7213c562f8c82g",
                            "ec26c3e57ca3a959ca5aad62de7213c562f8c8210"}) {
        sha = bad;
        auto r = normalize("repository_dispatch", body.dump());
        ASSERT_FALSE(r) << bad;
        EXPECT_EQ(r.error().code, Errc::invalid_sha) << bad;
    }
    EXPECT_TRUE(valid_sha(k_pr_sha));
    EXPECT_FALSE(valid_sha("main"));
}

TEST(Normalize, MissingFieldsAndWrongTypesNameTheField) {
    struct Case {
        std::function<void(json&)> mutate;
        std::string expect_in_message;
    };
    const std::vector<Case> cases = {
        {[](json& b) { b["client_payload"]["payload"]["pull_request"]["head"].erase("sha"); },
         "payload.pull_request.head.sha"},
        {[](json& b) { b["client_payload"]["payload"]["number"] = "2"; },
         "payload.number must be a positive integer"},
        {[](json& b) { b["client_payload"]["payload"]["number"] = -5; },
         "payload.number must be a positive integer"},
        {[](json& b) { b["client_payload"]["payload"]["number"] = 0; },
         "payload.number must be a positive integer"},
        {[](json& b) { b["client_payload"].erase("payload"); }, "missing client_payload.payload"},
        {[](json& b) { b["client_payload"]["event_type"] = "push"; }, "does not match"},
        {[](json& b) { b["client_payload"] = 7; }, "client_payload must be an object"},
        {[](json& b) { b.erase("repository"); }, "repository.full_name"},
        {[](json& b) { b["action"] = 3; }, "action must be a string"},
    };
    for (const auto& c : cases) {
        auto body = fixture("crcr/pull_request-synchronize.dispatch.json");
        c.mutate(body);
        auto r = normalize("repository_dispatch", body.dump());
        ASSERT_FALSE(r) << c.expect_in_message;
        EXPECT_EQ(r.error().code, Errc::bad_request);
        EXPECT_NE(r.error().message.find(c.expect_in_message), std::string::npos)
            << r.error().message;
    }
    EXPECT_FALSE(normalize("", json::array().dump()));
    EXPECT_FALSE(normalize("", json{{"hello", "world"}}.dump()));
    auto broken = normalize("repository_dispatch", "{\"action\": ");
    ASSERT_FALSE(broken);
    EXPECT_EQ(broken.error().code, Errc::bad_request);
    EXPECT_NE(broken.error().message.find("not valid JSON"), std::string::npos);
}

TEST(Normalize, APrNumberIsPositiveInEveryForm) {
    auto legacy = fixture("crcr/legacy-pr-trigger.dispatch.json");
    legacy["client_payload"]["pr_number"] = -5;
    auto l = normalize("repository_dispatch", legacy.dump());
    ASSERT_FALSE(l);
    EXPECT_NE(l.error().message.find("client_payload.pr_number must be a positive integer"),
              std::string::npos)
        << l.error().message;
    auto direct = fixture("crcr/direct-pytorch-crcr.json");
    direct["client_payload"]["pr_number"] = 0;
    auto d = normalize("repository_dispatch", direct.dump());
    ASSERT_FALSE(d);
    EXPECT_NE(d.error().message.find("client_payload.pr_number must be a positive integer"),
              std::string::npos)
        << d.error().message;
}

TEST(Normalize, LegacyTriggerNeedsShaAndPr) {
    auto body = fixture("crcr/legacy-pr-trigger.dispatch.json");
    body["client_payload"].erase("pr_number");
    auto r = normalize("repository_dispatch", body.dump());
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().message.find("client_payload.pr_number"), std::string::npos);
}

TEST(Normalize, PushDeletedRefAndCiflowTag) {
    auto body = fixture("crcr/push.dispatch.json");
    body["client_payload"]["payload"]["after"] = "0000000000000000000000000000000000000000";
    auto del = normalize("repository_dispatch", body.dump());
    ASSERT_TRUE(del);
    EXPECT_EQ(del->intent, Intent::ignore);
    EXPECT_NE(del->reason.find("deletes"), std::string::npos);

    body = fixture("crcr/push.dispatch.json");
    body["client_payload"]["payload"]["ref"] = "refs/tags/ciflow/crcr/spyre/12345";
    body["client_payload"]["payload"]["before"] = k_base_sha;
    auto tag = normalize("repository_dispatch", body.dump());
    ASSERT_TRUE(tag);
    EXPECT_EQ(tag->intent, Intent::run);
    EXPECT_EQ(tag->pr, 12345);
    EXPECT_EQ(tag->base_sha, k_base_sha);
    // A tag ending in 0 names no PR (found by fuzzing: it used to make PR 0).
    body["client_payload"]["payload"]["ref"] = "refs/tags/ciflow/crcr/spyre/000";
    auto zero = normalize("repository_dispatch", body.dump());
    ASSERT_TRUE(zero);
    EXPECT_FALSE(zero->pr);
}

}  // namespace
}  // namespace crcrd::ingest
