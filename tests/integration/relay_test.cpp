// The relay callback (docs/reporting.md) through the real daemon against a stand-in that
// enforces the real relay's and HUD's rules (tests/support/fake_relay.hpp): one in_progress
// then one completed per tier attempt, accepted as sent; tokens from a command, renewed after
// a 401; an answer lost after the relay stored the callback; rate limits; runs the relay did
// not dispatch say nothing.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <map>

#include "crcrd/core/crypto.hpp"
#include "crcrd/core/files.hpp"
#include "crcrd/core/time.hpp"
#include "support/certs.hpp"
#include "support/ci_script.hpp"
#include "support/daemon.hpp"
#include "support/fake_relay.hpp"
#include "support/state.hpp"

namespace crcrd {
namespace {

using nlohmann::json;

constexpr const char* k_rules =
    "tiers:\n"
    "  - {name: import, always: true, tests: [ok_import]}\n"
    "  - {name: flaky, always: true, tests: [flaky_x, ok_y]}\n"
    "rules: []\n"
    "unmatched: nothing\n";

class RelayTest : public ::testing::Test {
  protected:
    /// `callback_yaml`: what follows url and ca_file in report.crcr_callback.
    void start(const std::string& callback_yaml) {
        write_file(dir.path() / "ci" / "ci.sh", k_ci_script, 0755);
        write_file(dir.path() / "selection.yaml", k_rules);
        // The token helper: prints relay-oidc-token-<n>, n counting its runs.
        write_file(dir.path() / "bin" / "mint-token",
                   "#!/bin/sh\nn=$(cat " + (dir.path() / "minted").string() +
                       " 2>/dev/null || echo 0)\nn=$((n+1))\n"
                       "echo $n > " +
                       (dir.path() / "minted").string() + "\necho relay-oidc-token-$n\n",
                   0755);
        const std::string yaml =
            "selection: {rules: selection.yaml}\n"
            "runners: [{name: sim-0, labels: [sim], health_check: [/bin/true]}]\n"
            "execution: {command: [ci/ci.sh], work_root: state/work, isolation: none, "
            "min_free_bytes: 1MiB, "
            "infra_retries: 0, flaky_reruns: 1}\n"
            "report:\n"
            "  retry_initial: 100ms\n"
            "  retry_max: 1s\n"
            "  crcr_callback: {url: \"" +
            relay.url() + "\", ca_file: " + test_certs().ca.string() + ", " + callback_yaml +
            "}\n"
            "admin: {tokens: [{name: ops, role: admin, sha256: " +
            crypto::sha256_hex("ops-token") + "}]}\n";
        daemon = std::make_unique<TestDaemon>(dir.path());
        daemon->write_config(yaml, "  public_url: \"https://ci.example:8443\"\n");
        daemon->start();
    }
    std::string mint() const {
        return "token_command: [" + (dir.path() / "bin" / "mint-token").string() + "]";
    }

    /// A CRCR v1 pull_request the relay dispatched (its delivery id registered there).
    std::int64_t dispatch(const std::string& crcr_id, int pr, bool register_at_relay = true) {
        json j = json::parse(fixture_text("crcr/pull_request-synchronize.dispatch.json"));
        j["client_payload"]["delivery_id"] = crcr_id;
        j["client_payload"]["payload"]["number"] = pr;
        if (register_at_relay) relay.dispatched(crcr_id);
        auto r = daemon->post_github(j.dump(), "t-" + crcr_id);
        EXPECT_EQ(r->status, 202) << r->body;
        return json::parse(r->body)["run_id"].get<std::int64_t>();
    }
    std::string finished(std::int64_t run) { return daemon->finished(run); }
    bool callbacks_settled(std::int64_t run) {
        return count_outbox(*daemon, {.run = run, .sink = "callback", .delivery = "waiting"}) == 0;
    }
    /// "tier#attempt:status" of the callbacks the relay accepted for `crcr_id`, in order.
    std::vector<std::string> accepted_sequence(const std::string& crcr_id) {
        std::vector<std::string> out;
        for (const auto& b : relay.accepted()) {
            if (b["delivery_id"] != crcr_id) continue;
            const auto& wf = b["workflow"];
            out.push_back(
                wf["job_name"].get<std::string>() + "#" + wf["run_attempt"].get<std::string>() +
                ":" + wf["status"].get<std::string>() +
                (wf["conclusion"].is_string() ? "=" + wf["conclusion"].get<std::string>() : ""));
        }
        return out;
    }

    TempDir dir;
    FakeRelay relay;
    std::unique_ptr<TestDaemon> daemon;
};

TEST_F(RelayTest, EachTierAttemptIsOneInProgressThenOneCompletedAsTheRelayAndHudAcceptThem) {
    start(mint());
    auto run = dispatch("guid-100", 100);
    EXPECT_EQ(finished(run), "completed/flaky");
    ASSERT_TRUE(eventually([&] { return callbacks_settled(run); }, std::chrono::seconds(30)))
        << daemon->log();
    // The flaky tier failed once (attempt 1, failure) and passed on its rerun (attempt 2).
    EXPECT_EQ(accepted_sequence("guid-100"),
              (std::vector<std::string>{"import#1:in_progress", "import#1:completed=success",
                                        "flaky#1:in_progress", "flaky#1:completed=failure",
                                        "flaky#2:in_progress", "flaky#2:completed=success"}));
    // The relay refused nothing: every exchange was a 200, each with a token from the command.
    for (const auto& ex : relay.exchanges()) {
        EXPECT_EQ(ex.status, 200) << ex.detail;
        EXPECT_EQ(ex.authorization.rfind("Bearer relay-oidc-token-", 0), 0u) << ex.authorization;
    }
    // Cached: one token for all of them.
    EXPECT_EQ(trim(read_file(dir.path() / "minted").value()), "1");
    // The fields HUD keys and shows.
    std::map<std::string, json> by_check_run;
    for (const auto& b : relay.accepted()) {
        const auto& wf = b["workflow"];
        EXPECT_EQ(b["event_type"], "pull_request");
        EXPECT_EQ(b["payload"]["pull_request"]["head"]["sha"],
                  "ec26c3e57ca3a959ca5aad62de7213c562f8c821");
        EXPECT_EQ(wf["schema_version"], "1");
        EXPECT_EQ(wf["name"], "crcrd");
        EXPECT_EQ(wf["run_id"], std::to_string(run));
        EXPECT_EQ(wf["url"], "https://ci.example:8443/ui/runs/" + std::to_string(run));
        EXPECT_EQ(wf["artifact_url"], "https://ci.example:8443/api/v1/jobs/" +
                                          wf["check_run_id"].get<std::string>() + "/log");
        EXPECT_TRUE(wf["started_at"].is_string());
        if (wf["status"] == "completed") {
            EXPECT_TRUE(wf["completed_at"].is_string());
            EXPECT_TRUE(wf["test_results"].contains("total"));
            // Its in_progress came first, with the same check_run_id.
            ASSERT_TRUE(by_check_run.count(wf["check_run_id"])) << b.dump();
            EXPECT_EQ(by_check_run[wf["check_run_id"]]["job_name"], wf["job_name"]);
        } else {
            by_check_run[wf["check_run_id"]] = wf;
        }
    }
    auto flaky_done = relay.accepted().back()["workflow"];
    EXPECT_EQ(flaky_done["crcr_class"], "flaky");
    EXPECT_EQ(flaky_done["test_results"],
              (json{{"passed", 2}, {"failed", 0}, {"skipped", 0}, {"total", 2}}));
}

TEST_F(RelayTest, ALostAnswerAnExpiredTokenAndARateLimitStillDeliverEachCallbackOnce) {
    // The first token the command mints has expired at the relay: 401, and a new one is taken.
    relay.accept_tokens({"relay-oidc-token-2", "relay-oidc-token-3", "relay-oidc-token-4"});
    // The first accepted callback's answer is lost on its way back (stored, connection closed),
    // the second's is a 500 after it was stored: each retry gets the relay's "invalid state
    // transition", which means delivered.
    relay.lose_answers(1);
    relay.fail_after_storing(1);
    // Three requests in 2 s (refused ones count, as at the real relay); this one says when to
    // come back, and crcrd honours it.
    relay.rate_limit(3, 2, std::chrono::seconds(2));
    start(mint());
    auto run = dispatch("guid-200", 200);
    EXPECT_EQ(finished(run), "completed/flaky");
    ASSERT_TRUE(eventually([&] { return callbacks_settled(run); }, std::chrono::seconds(120)))
        << daemon->log();
    std::string dead_errors;
    for (const auto& row : outbox_rows(*daemon, {.delivery = "dead"}))
        dead_errors += row.last_error + " | ";
    EXPECT_EQ(count_outbox(*daemon, {.sink = "callback", .delivery = "dead"}), 0) << dead_errors;
    // Retries reorder callbacks of different attempts, never the two of one attempt: each
    // callback accepted exactly once, every in_progress before its completed.
    auto seq = accepted_sequence("guid-200");
    auto at = [&](const std::string& v) {
        return std::find(seq.begin(), seq.end(), v) - seq.begin();
    };
    auto sorted = seq;
    std::sort(sorted.begin(), sorted.end());
    EXPECT_EQ(sorted,
              (std::vector<std::string>{"flaky#1:completed=failure", "flaky#1:in_progress",
                                        "flaky#2:completed=success", "flaky#2:in_progress",
                                        "import#1:completed=success", "import#1:in_progress"}));
    EXPECT_LT(at("import#1:in_progress"), at("import#1:completed=success"));
    EXPECT_LT(at("flaky#1:in_progress"), at("flaky#1:completed=failure"));
    EXPECT_LT(at("flaky#2:in_progress"), at("flaky#2:completed=success"));
    std::map<int, int> answers;
    for (const auto& ex : relay.exchanges()) ++answers[ex.status];
    EXPECT_GE(answers[401], 1);
    EXPECT_EQ(answers[500], 1);
    EXPECT_GE(answers[429], 1);
    EXPECT_EQ(answers[0], 1) << "the answer lost on its way back";
    EXPECT_EQ(answers[400], 2) << "the retries of the two lost answers";
    const auto answered_400 =
        outbox_rows(*daemon, {.sink = "callback", .delivery = "sent", .http_status = 400});
    EXPECT_EQ(std::count_if(answered_400.begin(), answered_400.end(),
                            [](const OutboxRow& row) {
                                return row.last_error.rfind("already recorded by the relay", 0) ==
                                       0;
                            }),
              2);
}

// The attack on the old sender: it counted an attempt only once its answer was stored, so a crash
// between the relay storing a callback and crcrd storing the answer made the resend look like a
// first try, the relay's "invalid state transition" a refusal, and the pair two dead letters.
TEST_F(RelayTest, ACrashBetweenACallbackAndItsAnswerStillDeliversThePairAfterTheRestart) {
    std::atomic<bool> killed = false;
    relay.lose_answers(1);
    relay.on_accepted([&] {
        daemon->kill9();
        killed = true;
    });
    start(mint());
    const auto run = dispatch("guid-300", 300);
    ASSERT_TRUE(eventually([&] { return killed.load(); }, std::chrono::seconds(30)))
        << daemon->log();
    daemon->start();
    EXPECT_EQ(finished(run).rfind("completed/", 0), 0u);
    ASSERT_TRUE(eventually([&] { return callbacks_settled(run); }, std::chrono::seconds(60)))
        << daemon->log();
    EXPECT_EQ(count_outbox(*daemon, {.sink = "callback", .delivery = "dead"}), 0) << daemon->log();
    // The first in_progress was stored once, before the crash; its resend was answered 400 and
    // counted as delivered; its completed followed.
    const auto seq = accepted_sequence("guid-300");
    EXPECT_EQ(std::count(seq.begin(), seq.end(), "import#1:in_progress"), 1)
        << testing::PrintToString(seq);
    EXPECT_EQ(
        std::count_if(seq.begin(), seq.end(),
                      [](const std::string& s) { return s.rfind("import#1:completed", 0) == 0; }),
        1)
        << testing::PrintToString(seq);
    const auto recorded =
        outbox_rows(*daemon, {.sink = "callback", .delivery = "sent", .http_status = 400});
    ASSERT_EQ(recorded.size(), 1u);
    EXPECT_EQ(recorded[0].last_error.rfind("already recorded by the relay", 0), 0u)
        << recorded[0].last_error;
}

TEST_F(RelayTest, TheCallbackBudgetKeepsUnderTheRelaysLimitSoItNeverAnswers429) {
    // The relay allows 3 requests in any 2 s (its default is 100 a minute); the lane's budget
    // says the same, and six callbacks go out without one refusal.
    relay.rate_limit(3, std::nullopt, std::chrono::seconds(2));
    start(mint() + ", budget: [{requests: 3, per: 2s}]");
    const auto run = dispatch("guid-400", 400);
    EXPECT_EQ(finished(run), "completed/flaky");
    ASSERT_TRUE(eventually([&] { return callbacks_settled(run); }, std::chrono::seconds(60)))
        << daemon->log();
    EXPECT_EQ(accepted_sequence("guid-400").size(), 6u);
    for (const auto& ex : relay.exchanges()) EXPECT_EQ(ex.status, 200) << ex.detail;
}

TEST_F(RelayTest, A429WithoutRetryAfterPausesTheCallbacksForAMinute) {
    relay.rate_limit(1);  // the real relay's 429 has no Retry-After
    start(mint());
    auto run = dispatch("guid-300", 300);
    EXPECT_EQ(finished(run), "completed/flaky");
    ASSERT_TRUE(eventually(
        [&] {
            return count_outbox(*daemon,
                                {.sink = "callback", .delivery = "waiting", .http_status = 429}) >
                   0;
        },
        std::chrono::seconds(30)))
        << daemon->log();
    // The next try of that row is a minute away, not a quick backoff.
    const auto limited =
        outbox_rows(*daemon, {.sink = "callback", .delivery = "waiting", .http_status = 429});
    ASSERT_FALSE(limited.empty());
    const auto next_attempt = parse_rfc3339(limited.front().next_attempt_at);
    ASSERT_TRUE(next_attempt) << limited.front().next_attempt_at;
    const auto wait_s = std::chrono::duration_cast<std::chrono::seconds>(
                            *next_attempt - std::chrono::system_clock::now())
                            .count();
    EXPECT_GE(wait_s, 50);
    EXPECT_LE(wait_s, 61);
    // Nothing else was sent meanwhile: one accepted, one refused.
    EXPECT_EQ(relay.exchanges().size(), 2u);
}

TEST_F(RelayTest, ARefusedInProgressMakesItsCompletedADeadLetterToo) {
    start(mint());
    auto run =
        dispatch("guid-400", 400, /*register_at_relay=*/false);  // the relay has no dispatch record
    EXPECT_EQ(finished(run), "completed/flaky");
    ASSERT_TRUE(eventually([&] { return callbacks_settled(run); }, std::chrono::seconds(60)))
        << daemon->log();
    EXPECT_TRUE(relay.accepted().empty());
    // Each in_progress was tried a few times (the record may come late), then dead; no
    // completed was ever sent after a refused in_progress.
    for (const auto& ex : relay.exchanges()) {
        EXPECT_EQ(ex.status, 400);
        EXPECT_EQ(ex.body["workflow"]["status"], "in_progress");
    }
    const auto dead_completed =
        outbox_rows(*daemon, {.sink = "callback", .state = "completed", .delivery = "dead"});
    EXPECT_EQ(std::count_if(dead_completed.begin(), dead_completed.end(),
                            [](const OutboxRow& row) {
                                return row.last_error.rfind(
                                           "its in_progress callback was not accepted", 0) == 0;
                            }),
              3);
    auto dead = daemon->request("GET", "/api/v1/outbox?state=dead&sink=callback",
                                {{"Authorization", "Bearer ops-token"}}, "");
    ASSERT_EQ(dead->status, 200);
    EXPECT_EQ(json::parse(dead->body)["items"].size(), 6u);
}

TEST_F(RelayTest, RunsTheRelayDidNotDispatchSendNothing) {
    start(mint());
    // The direct form (no client_payload.delivery_id) and a manual run: no dispatch record
    // exists at the relay for them, so there is nothing to call back.
    json direct = json::parse(fixture_text("crcr/direct-pytorch-crcr.json"));
    auto r = daemon->post_standard(direct.dump(), "direct-1");
    ASSERT_EQ(r->status, 202);
    auto run = json::parse(r->body)["run_id"].get<std::int64_t>();
    auto manual = daemon->request(
        "POST", "/api/v1/runs",
        {{"Authorization", "Bearer ops-token"}, {"Content-Type", "application/json"}},
        json{{"sha", "f95f852bd8fca8fcc58a9a2d6c842781e32a215e"}, {"tiers", {"import"}}}.dump());
    ASSERT_EQ(manual->status, 201) << manual->body;
    auto manual_run = json::parse(manual->body)["run_id"].get<std::int64_t>();
    EXPECT_EQ(finished(run), "completed/flaky");
    EXPECT_EQ(finished(manual_run), "completed/passed");
    EXPECT_EQ(count_outbox(*daemon, {.sink = "callback"}), 0);
    EXPECT_TRUE(relay.exchanges().empty());
}

}  // namespace
}  // namespace crcrd
