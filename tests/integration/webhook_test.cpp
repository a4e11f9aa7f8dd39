// Every row of the answers table (docs/ingest.md, "Answers") against the real crcrd over real
// TLS and a real SQLite file.
#include <gtest/gtest.h>
#include <algorithm>
#include <nlohmann/json.hpp>

#include "crcrd/core/compress.hpp"
#include "crcrd/ingest/signature.hpp"
#include "support/daemon.hpp"
#include "support/state.hpp"

namespace crcrd {
namespace {

using nlohmann::json;

constexpr const char* k_sha = "ec26c3e57ca3a959ca5aad62de7213c562f8c821";

class WebhookTest : public ::testing::Test {
  protected:
    void SetUp() override {
        daemon = std::make_unique<TestDaemon>(dir.path());
        daemon->write_config("", "  max_body_bytes: 64KiB\n");
        daemon->start();
    }

    json body_of(const Result<http::ClientResponse>& r) {
        EXPECT_TRUE(r) << (r ? "" : r.error().message);
        if (!r) return json();
        return json::parse(r->body, nullptr, false);
    }

    std::string pr_sync() { return fixture_text("crcr/pull_request-synchronize.dispatch.json"); }

    std::string with(const std::string& fixture, const std::function<void(json&)>& edit) {
        json j = json::parse(fixture_text(fixture));
        edit(j);
        return j.dump();
    }

    TempDir dir;
    std::unique_ptr<TestDaemon> daemon;
};

TEST_F(WebhookTest, NewRunIsStoredBeforeThe202) {
    auto r = daemon->post_github(pr_sync(), "d-1");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 202);
    auto b = json::parse(r->body);
    EXPECT_EQ(b["status"], "queued");
    EXPECT_EQ(b["sha"], k_sha);
    EXPECT_EQ(b["delivery_id"], "d-1");
    ASSERT_TRUE(b["run_id"].is_number_integer());
    auto id = b["run_id"].get<std::int64_t>();
    // Visible to another connection as soon as the answer arrived: it was committed first.
    const auto run = run_row(*daemon, id);
    EXPECT_EQ(run.sha, k_sha);
    EXPECT_EQ(run.state, "queued");
    EXPECT_EQ(run.pr, 2);
    EXPECT_EQ(run.delivery_id, "6d1c2a70-5a1b-11f0-8d4e-2f1c9a1b7e01");
    EXPECT_EQ(
        count_deliveries(
            *daemon,
            {.delivery_id = "d-1", .verdict = "queued", .http_status = 202, .has_body = true}),
        1);
    // The stored body gives back exactly what was signed, for audit and replay.
    const auto delivery = delivery_rows(*daemon, {.delivery_id = "d-1"});
    ASSERT_FALSE(delivery.empty());
    auto stored = decompress(delivery.front().body.value_or(""));
    ASSERT_TRUE(stored) << stored.error().message;
    EXPECT_EQ(*stored, pr_sync());
    EXPECT_EQ(delivery.front().body_size, static_cast<std::int64_t>(pr_sync().size()));
    EXPECT_FALSE(decompress("not a zstd frame"));
}

TEST_F(WebhookTest, EveryFormIsAccepted) {
    EXPECT_EQ(daemon->post_github(fixture_text("crcr/push.dispatch.json"), "p-1")->status, 202);
    EXPECT_EQ(
        daemon->post_github(fixture_text("crcr/legacy-pr-trigger.dispatch.json"), "l-1")->status,
        202);
    EXPECT_EQ(daemon->post_github(fixture_text("crcr/direct-pytorch-crcr.json"), "c-1")->status,
              202);
    EXPECT_EQ(daemon->post_standard(fixture_text("crcr/direct-pytorch-crcr.json"), "msg_1")->status,
              202);
    EXPECT_EQ(daemon
                  ->post_standard(with("crcr/push.dispatch.json",
                                       [](json& j) {
                                           j.erase("action");
                                           j["event_type"] = "push";
                                           j.erase("repository");
                                           j.erase("sender");
                                           j["client_payload"]["delivery_id"] = "direct-push-1";
                                       }),
                                  "msg_2")
                  ->status,
              202);
    EXPECT_EQ(count_runs(*daemon), 5);
    const auto direct = run_rows(*daemon, {.delivery_id = "6d1c2a70-5a1b-11f0-8d4e-2f1c9a1b7e03"});
    ASSERT_FALSE(direct.empty());
    EXPECT_EQ(direct.front().sha, "6113728f27ae82c7b1a177c8d03f9e96e0adf246");
}

TEST_F(WebhookTest, DuplicatesReturnTheFirstRun) {
    auto first = body_of(daemon->post_github(pr_sync(), "d-1"));
    auto again = daemon->post_github(pr_sync(), "d-1");
    EXPECT_EQ(again->status, 200);
    EXPECT_EQ(body_of(again), (json{{"status", "duplicate"}, {"run_id", first["run_id"]}}));
    // A relay retry: new transport id, same CRCR delivery id.
    auto retry = daemon->post_github(pr_sync(), "d-2");
    EXPECT_EQ(retry->status, 200);
    EXPECT_EQ(body_of(retry)["run_id"], first["run_id"]);
    // Standard Webhooks redelivery of the same message id.
    auto direct = fixture_text("crcr/direct-pytorch-crcr.json");
    auto s1 = body_of(daemon->post_standard(direct, "msg_9"));
    auto s2 = daemon->post_standard(direct, "msg_9");
    EXPECT_EQ(s2->status, 200);
    EXPECT_EQ(body_of(s2)["run_id"], s1["run_id"]);
    EXPECT_EQ(count_runs(*daemon), 2);
    EXPECT_EQ(count_deliveries(*daemon, {.verdict = "duplicate"}), 3);
}

TEST_F(WebhookTest, IgnoredCases) {
    struct Case {
        std::string body, event, reason_part;
    };
    const std::vector<Case> cases = {
        {with("github-webhooks/pull_request-labeled.json",
              [](json& j) { j["repository"]["full_name"] = "pytorch/pytorch"; }),
         "pull_request", "action 'labeled'"},
        {with("crcr/pull_request-synchronize.dispatch.json",
              [](json& j) { j["client_payload"]["payload"]["action"] = "edited"; }),
         "repository_dispatch", "action 'edited'"},
        {with("crcr/push.dispatch.json",
              [](json& j) {
                  j["client_payload"]["payload"]["deleted"] = true;
                  j["client_payload"]["payload"]["after"] =
                      "0000000000000000000000000000000000000000";
              }),
         "repository_dispatch", "deletes"},
        {fixture_text("crcr/pull_request-fork.dispatch.json"), "repository_dispatch", "fork"},
        {with("crcr/pull_request-synchronize.dispatch.json",
              [](json& j) { j["action"] = "on-demand-test"; }),
         "repository_dispatch", "not a CRCR event"},
    };
    int n = 0;
    for (const auto& c : cases) {
        auto r = daemon->post_github(c.body, "ign-" + std::to_string(n++), c.event);
        ASSERT_TRUE(r);
        EXPECT_EQ(r->status, 200) << c.reason_part;
        auto b = json::parse(r->body);
        EXPECT_EQ(b["status"], "ignored");
        EXPECT_NE(b["reason"].get<std::string>().find(c.reason_part), std::string::npos)
            << b.dump();
    }
    EXPECT_EQ(count_runs(*daemon), 0);
    const auto ignored = delivery_rows(*daemon, {.verdict = "ignored"});
    EXPECT_EQ(std::count_if(ignored.begin(), ignored.end(),
                            [](const DeliveryRow& r) { return !r.reason.empty(); }),
              5);
}

TEST_F(WebhookTest, ForkWithTrustedLabelRuns) {
    auto body = with("crcr/pull_request-fork.dispatch.json", [](json& j) {
        j["client_payload"]["payload"]["pull_request"]["labels"] =
            json::array({{{"name", "ciflow/crcr/spyre"}}});
    });
    EXPECT_EQ(daemon->post_github(body, "f-1")->status, 202);
    const auto runs = run_rows(*daemon);
    ASSERT_FALSE(runs.empty());
    EXPECT_EQ(runs.front().head_repo, "someone/pytorch");
}

TEST_F(WebhookTest, ClosingThePrCancelsItsRuns) {
    auto a = body_of(daemon->post_github(pr_sync(), "d-1"));
    auto b = body_of(
        daemon->post_github(with("crcr/pull_request-synchronize.dispatch.json",
                                 [](json& j) {
                                     j["client_payload"]["delivery_id"] = "other";
                                     j["client_payload"]["payload"]["pull_request"]["head"]["sha"] =
                                         "f95f852bd8fca8fcc58a9a2d6c842781e32a215e";
                                 }),
                            "d-2"));
    // The newer SHA superseded the first run; closing cancels what is left.
    EXPECT_EQ(b["superseded"], json::array({a["run_id"]}));
    auto r = daemon->post_github(fixture_text("crcr/pull_request-closed.dispatch.json"), "close-1");
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(body_of(r), (json{{"status", "cancelled"}, {"run_ids", {b["run_id"]}}}));
    EXPECT_EQ(count_runs(*daemon, {.state = "cancelled", .reason = "PR closed"}), 1);
    EXPECT_EQ(count_runs(*daemon, {.state = "queued"}), 0);
    // Closing again finds nothing left to cancel.
    auto again =
        daemon->post_github(with("crcr/pull_request-closed.dispatch.json",
                                 [](json& j) { j["client_payload"]["delivery_id"] = "close-2"; }),
                            "close-2");
    EXPECT_EQ(body_of(again), (json{{"status", "cancelled"}, {"run_ids", json::array()}}));
}

TEST_F(WebhookTest, AReplayedOldDeliveryNeverMovesAPrBackwards) {
    constexpr const char* k_newer = "f95f852bd8fca8fcc58a9a2d6c842781e32a215e";
    // The legacy form carries no signed id: the same body may come back under a new
    // X-GitHub-Delivery, signed correctly (the signature covers the body, not the header).
    const std::string old_body = fixture_text("crcr/legacy-pr-trigger.dispatch.json");
    auto first = body_of(daemon->post_github(old_body, "legacy-1"));
    auto newer = body_of(
        daemon->post_github(with("crcr/legacy-pr-trigger.dispatch.json",
                                 [&](json& j) { j["client_payload"]["head_sha"] = k_newer; }),
                            "legacy-2"));
    EXPECT_EQ(newer["superseded"], json::array({first["run_id"]}));
    auto replay = daemon->post_github(old_body, "legacy-replayed");
    ASSERT_EQ(replay->status, 202) << replay->body;  // stored like any delivery...
    EXPECT_FALSE(body_of(replay).contains("superseded"))
        << replay->body;  // ...but it supersedes nothing
    EXPECT_EQ(run_row(*daemon, newer["run_id"].get<int>()).state, "queued");

    // The native GitHub form: a replayed `closed` of an older head leaves the newer push's run.
    auto native = [&](const std::string& action, const std::string& sha) {
        return with("github-webhooks/pull_request-opened.json", [&](json& j) {
            j["action"] = action;
            j["number"] = 77;
            j["repository"]["full_name"] = "pytorch/pytorch";
            j["pull_request"]["head"]["repo"]["full_name"] = "pytorch/pytorch";
            j["pull_request"]["head"]["sha"] = sha;
        });
    };
    auto a = body_of(daemon->post_github(native("opened", k_sha), "n-1", "pull_request"));
    const std::string closed_at_a = native("closed", k_sha);
    EXPECT_EQ(body_of(daemon->post_github(closed_at_a, "n-2", "pull_request"))["run_ids"],
              json::array({a["run_id"]}));
    auto reopened =
        body_of(daemon->post_github(native("reopened", k_newer), "n-3", "pull_request"));
    ASSERT_EQ(reopened["status"], "queued") << reopened.dump();
    auto replayed_close = body_of(daemon->post_github(closed_at_a, "n-2-replayed", "pull_request"));
    EXPECT_EQ(replayed_close["run_ids"], json::array()) << replayed_close.dump();
    EXPECT_EQ(run_row(*daemon, reopened["run_id"].get<int>()).state, "queued");
    // A close at the newest head still cancels it.
    auto closed = body_of(daemon->post_github(native("closed", k_newer), "n-4", "pull_request"));
    EXPECT_EQ(closed["run_ids"], json::array({reopened["run_id"]}));
}

TEST_F(WebhookTest, AMergedPrQueuesAPostMergeRunOnItsMergeCommitWhenEnabled) {
    auto merged = [&](const std::string& id, bool was_merged) {
        return with("crcr/pull_request-closed.dispatch.json", [&](json& j) {
            j["client_payload"]["delivery_id"] = id;
            j["client_payload"]["payload"]["pull_request"]["merged"] = was_merged;
        });
    };
    // Off by default: a merged PR only cancels.
    auto off = body_of(daemon->post_github(merged("merge-0", true), "merge-0"));
    EXPECT_EQ(off, (json{{"status", "cancelled"}, {"run_ids", json::array()}}));
    daemon->stop();
    daemon->write_config("selection: {post_merge: true}\n", "  max_body_bytes: 64KiB\n");
    daemon->start();
    auto on = daemon->post_github(merged("merge-1", true), "merge-1");
    ASSERT_EQ(on->status, 200) << on->body;
    auto b = body_of(on);
    EXPECT_EQ(b["status"], "cancelled");
    EXPECT_EQ(b["sha"],
              "c4295bd74fb0f4fda03689c3df3f2803b658fd85");  // payload.pull_request.merge_commit_sha
    const auto run = run_row(*daemon, b["post_merge_run_id"].get<std::int64_t>());
    EXPECT_EQ(run.event + " " + run.sha + " " + run.ref + " " +
                  (run.pr ? std::to_string(*run.pr) : "") + " " + run.base_sha + " " + run.state,
              "push c4295bd74fb0f4fda03689c3df3f2803b658fd85 refs/heads/main 2 "
              "f95f852bd8fca8fcc58a9a2d6c842781e32a215e queued");
    // An unmerged PR's merge_commit_sha is only GitHub's test merge: no run.
    auto unmerged = body_of(daemon->post_github(merged("merge-2", false), "merge-2"));
    EXPECT_FALSE(unmerged.contains("post_merge_run_id")) << unmerged.dump();
    EXPECT_EQ(count_runs(*daemon), 1);
}

TEST_F(WebhookTest, Ping) {
    auto r = daemon->post_github(fixture_text("github-webhooks/ping.json"), "ping-1", "ping");
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(body_of(r), (json{{"status", "pong"}}));
    EXPECT_EQ(count_deliveries(*daemon, {.verdict = "pong"}), 1);
}

TEST_F(WebhookTest, BadRequests) {
    auto bad_json = daemon->post_github("{\"action\": ", "b-1");
    EXPECT_EQ(bad_json->status, 400);
    EXPECT_EQ(body_of(bad_json)["error"], "bad_request");

    auto missing = daemon->post_github(
        with("crcr/pull_request-synchronize.dispatch.json",
             [](json& j) { j["client_payload"]["payload"]["pull_request"]["head"].erase("sha"); }),
        "b-2");
    EXPECT_EQ(missing->status, 400);
    EXPECT_NE(body_of(missing)["detail"].get<std::string>().find("head.sha"), std::string::npos);

    auto wrong_type =
        daemon->post_github(with("crcr/pull_request-synchronize.dispatch.json",
                                 [](json& j) { j["client_payload"]["payload"]["number"] = "two"; }),
                            "b-3");
    EXPECT_EQ(wrong_type->status, 400);
    EXPECT_NE(body_of(wrong_type)["detail"].get<std::string>().find("must be a positive integer"),
              std::string::npos);

    auto no_delivery =
        daemon->request("POST", "/webhook",
                        {{"Content-Type", "application/json"},
                         {"X-GitHub-Event", "repository_dispatch"},
                         {"X-Hub-Signature-256", ingest::sign_github(k_test_secret, pr_sync())}},
                        pr_sync());
    EXPECT_EQ(no_delivery->status, 400);
    EXPECT_EQ(count_runs(*daemon), 0);
    EXPECT_EQ(
        count_deliveries(*daemon, {.verdict = "rejected", .http_status = 400, .has_body = false}),
        4);
}

TEST_F(WebhookTest, InvalidSha) {
    for (const char* sha : {"ec26c3e", "0000000000000000000000000000000000000000", "main"}) {
        auto r = daemon->post_github(
            with("crcr/pull_request-synchronize.dispatch.json",
                 [&](json& j) {
                     j["client_payload"]["payload"]["pull_request"]["head"]["sha"] = sha;
                 }),
            std::string("sha-") + sha);
        EXPECT_EQ(r->status, 422) << sha;
        EXPECT_EQ(body_of(r), (json{{"error", "invalid_sha"},
                                    {"detail", "expected a full 40-character commit SHA"}}));
    }
    EXPECT_EQ(count_runs(*daemon), 0);
}

TEST_F(WebhookTest, Unauthorized) {
    auto body = pr_sync();
    auto missing =
        daemon->request("POST", "/webhook",
                        {{"Content-Type", "application/json"}, {"X-GitHub-Delivery", "u-1"}}, body);
    EXPECT_EQ(missing->status, 401);
    EXPECT_EQ(body_of(missing)["error"], "unauthorized");
    EXPECT_EQ(daemon->post_github(body, "u-2", "repository_dispatch", "wrong secret")->status, 401);
    auto now = std::chrono::duration_cast<std::chrono::seconds>(
                   std::chrono::system_clock::now().time_since_epoch())
                   .count();
    auto stale =
        daemon->post_standard(fixture_text("crcr/direct-pytorch-crcr.json"), "msg_old", now - 301);
    EXPECT_EQ(stale->status, 401);
    EXPECT_NE(body_of(stale)["detail"].get<std::string>().find("clock skew"), std::string::npos);
    // A rejected id does not burn the real delivery's id.
    EXPECT_EQ(daemon->post_github(body, "u-2")->status, 202);
    EXPECT_EQ(count_deliveries(*daemon, {.verdict = "rejected", .http_status = 401}), 3);
}

TEST_F(WebhookTest, Forbidden) {
    auto r =
        daemon->post_github(with("crcr/pull_request-synchronize.dispatch.json",
                                 [](json& j) { j["repository"]["full_name"] = "someone/else"; }),
                            "x-1");
    EXPECT_EQ(r->status, 403);
    EXPECT_EQ(body_of(r)["error"], "forbidden");
    auto upstream = daemon->post_github(fixture_text("github-webhooks/pull_request-opened.json"),
                                        "x-2", "pull_request");
    EXPECT_EQ(upstream->status, 403);  // Codertocat/Hello-World is not pytorch/pytorch
    EXPECT_EQ(count_runs(*daemon), 0);
}

TEST_F(WebhookTest, PathMethodMediaTypeAndSize) {
    auto nf = daemon->request("POST", "/nope", {{"Content-Type", "application/json"}}, "{}");
    EXPECT_EQ(nf->status, 404);
    EXPECT_TRUE(body_of(nf).contains("error"));
    auto get = daemon->request("GET", "/webhook", {}, "");
    EXPECT_EQ(get->status, 405);
    EXPECT_EQ(get->header("Allow").value_or(""), "POST");
    auto body = pr_sync();
    auto form = daemon->request("POST", "/webhook",
                                {{"Content-Type", "application/x-www-form-urlencoded"},
                                 {"X-GitHub-Delivery", "m-1"},
                                 {"X-Hub-Signature-256", ingest::sign_github(k_test_secret, body)}},
                                body);
    EXPECT_EQ(form->status, 415);
    EXPECT_EQ(body_of(form), (json{{"error", "unsupported_media_type"}}));

    std::string big = json{{"action", "push"}, {"pad", std::string(70 * 1024, 'x')}}.dump();
    auto large = daemon->post_github(big, "big-1");
    EXPECT_EQ(large->status, 413);
    EXPECT_EQ(body_of(large), (json{{"error", "payload_too_large"}}));
    EXPECT_EQ(count_deliveries(*daemon, {.http_status = 405}) +
                  count_deliveries(*daemon, {.http_status = 413}) +
                  count_deliveries(*daemon, {.http_status = 415}),
              3);
    // The server is still fine afterwards.
    EXPECT_EQ(daemon->post_github(body, "ok-1")->status, 202);
}

TEST_F(WebhookTest, HealthAndReadiness) {
    auto h = daemon->request("GET", "/healthz", {}, "");
    EXPECT_EQ(h->status, 200);
    auto r = daemon->request("GET", "/readyz", {}, "");
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(body_of(r)["status"], "ready");
}

TEST_F(WebhookTest, StorageUnavailableAnswers503AndWritesNothing) {
    daemon->stop();
    daemon->write_config("", "", ", busy_timeout: 200ms, retry_after: 7s");
    daemon->start();

    // Another process holds the write lock (as a backup or a stuck tool would).
    DatabaseWriteLock other(*daemon);
    auto r = daemon->post_github(pr_sync(), "busy-1");
    EXPECT_EQ(r->status, 503);
    EXPECT_EQ(body_of(r), (json{{"error", "unavailable"}}));
    EXPECT_EQ(r->header("Retry-After").value_or(""), "7");
    EXPECT_EQ(daemon->request("GET", "/readyz", {}, "")->status, 503);
    other.release();

    EXPECT_EQ(count_runs(*daemon), 0);
    EXPECT_EQ(count_deliveries(*daemon), 0);
    // The sender's retry of the same delivery is then accepted as new, not as a duplicate.
    auto retry = daemon->post_github(pr_sync(), "busy-1");
    EXPECT_EQ(retry->status, 202);
    EXPECT_EQ(count_runs(*daemon), 1);
}

}  // namespace
}  // namespace crcrd
