// GET /metrics from the real daemon after real runs: promtool accepts the scrape; counters move
// with each committed event (a 202 is already counted), survive a restart (seeded from the
// database), and are not counted from the database at scrape time; the reporting lanes' gauges
// show a rate-limited GitHub lane's pause, budget left and next send.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <regex>

#include "crcrd/core/crypto.hpp"
#include "crcrd/core/files.hpp"
#include "support/ci_script.hpp"
#include "support/daemon.hpp"
#include "support/pausing_github.hpp"
#include "support/state.hpp"

namespace crcrd {
namespace {

using nlohmann::json;

class MetricsTest : public ::testing::Test {
  protected:
    /// `github`: report.github's mapping (none: the report file alone).
    void start(const std::string& github = "") {
        if (auto why = bwrap_unavailable(); !why.empty()) GTEST_SKIP() << why;
        install_ci_script(bin.path());
        write_file(dir.path() / "selection.yaml",
                   "tiers:\n"
                   "  - {name: import, always: true, tests: [ok_import], labels: [sim]}\n"
                   "  - {name: affected, from_rules: true}\n"
                   "rules:\n"
                   "  - {name: dispatch, paths: [\"aten/**\"], tests: [fail_ops]}\n"
                   "  - {name: compile, paths: [\"torch/_inductor/**\"], tests: [ok_compile]}\n"
                   "unmatched: nothing\n");
        daemon = std::make_unique<TestDaemon>(
            dir.path(),
            "selection: {rules: selection.yaml}\n"
            "runners:\n"
            "  - {name: sim-0, labels: [sim], health_check: [/bin/true]}\n"
            "execution:\n"
            "  command: [" +
                (bin.path() / "ci.sh").string() +
                "]\n"
                "  work_root: state/work\n"
                "  min_free_bytes: 1MiB\n"
                "report: {file: state/statuses.jsonl" +
                (github.empty() ? "" : ", min_interval: 0s, github: " + github) +
                "}\n"
                "admin: {tokens: [{name: ops, role: read, sha256: " +
                crypto::sha256_hex("ops-token") + "}]}\n");
        daemon->start();
    }

    std::int64_t post(const std::vector<std::string>& changed, const std::string& id) {
        json j = json::parse(fixture_text("crcr/direct-pytorch-crcr.json"));
        j["client_payload"]["changed_files"] = changed;
        j["client_payload"]["pr_number"] = next_pr++;
        auto r = daemon->post_standard(j.dump(), id);
        EXPECT_EQ(r->status, 202) << r->body;
        return json::parse(r->body)["run_id"].get<std::int64_t>();
    }

    std::string scrape() {
        auto r = daemon->request("GET", "/metrics", {{"Authorization", "Bearer ops-token"}}, "");
        EXPECT_TRUE(r);
        if (!r) return "";
        EXPECT_EQ(r->status, 200) << r->body;
        return r->body;
    }

    /// The value of the sample `series` (name and labels, as written) in `text`; -1 when absent.
    static double value(const std::string& text, const std::string& series) {
        const std::string key = "\n" + series + " ";
        auto at = text.find(key);
        if (at == std::string::npos) return -1;
        return std::stod(
            text.substr(at + key.size(), text.find('\n', at + key.size()) - at - key.size()));
    }

    /// promtool's verdict on `text` (exit code; its output in `out`).
    int promtool(const std::string& text, std::string* out) {
        const auto file = dir.path() / "scrape.txt";
        write_file(file, text);
        return run_command({"/bin/sh", "-c", "promtool check metrics < '" + file.string() + "'"},
                           out);
    }

    TempDir dir, bin;
    std::unique_ptr<TestDaemon> daemon;
    int next_pr = 300;
};

TEST_F(MetricsTest, PromtoolAcceptsAScrapeAfterRealRunsAndCountersFollowEvents) {
    if (!std::filesystem::exists("/usr/bin/promtool"))
        GTEST_SKIP() << "promtool (Debian package prometheus) is not installed";
    start();
    if (IsSkipped()) return;
    const auto passed = post({"torch/_inductor/ir.py"}, "mx-1");
    const auto failed = post({"aten/src/ATen/native/BinaryOps.cpp"}, "mx-2");
    ASSERT_EQ(daemon->finished(passed), "completed/passed");
    ASSERT_EQ(daemon->finished(failed), "completed/regression");
    // Every status reached the file sink.
    ASSERT_TRUE(eventually([&] { return count_outbox(*daemon, {.delivery = "waiting"}) == 0; }));
    const auto rejected =
        daemon->post_standard("{}", "mx-bad", 1);  // a timestamp far outside the tolerance
    ASSERT_TRUE(rejected);
    EXPECT_EQ(rejected->status, 401);

    // A commit becomes visible to readers a moment before its events are counted: poll.
    const double sent = count_outbox(*daemon, {.delivery = "sent"});
    EXPECT_GT(sent, 0);
    std::string text;
    EXPECT_TRUE(eventually([&] {
        text = scrape();
        return value(text, "crcrd_statuses_total{sink=\"file\",outcome=\"sent\"}") == sent &&
               value(
                   text,
                   "crcrd_runs_finished_total{event=\"pull_request\",conclusion=\"regression\"}") ==
                   1;
    })) << text;
    std::string out;
    EXPECT_EQ(promtool(text, &out), 0) << out << "\n" << text;
    EXPECT_EQ(value(text, "crcrd_deliveries_total{verdict=\"queued\"}"), 2) << text;
    EXPECT_EQ(value(text, "crcrd_deliveries_total{verdict=\"rejected\"}"), 1) << text;
    EXPECT_EQ(
        value(text, "crcrd_runs_finished_total{event=\"pull_request\",conclusion=\"passed\"}"), 1)
        << text;
    EXPECT_EQ(
        value(text, "crcrd_runs_finished_total{event=\"pull_request\",conclusion=\"regression\"}"),
        1)
        << text;
    EXPECT_EQ(value(text, "crcrd_jobs_finished_total{tier=\"import\",conclusion=\"passed\"}"), 2)
        << text;
    EXPECT_EQ(value(text, "crcrd_job_duration_seconds_count{tier=\"import\"}"), 2) << text;
    EXPECT_EQ(value(text, "crcrd_job_queue_wait_seconds_count{tier=\"import\"}"), 2) << text;
    EXPECT_EQ(value(text, "crcrd_statuses_total{sink=\"file\",outcome=\"sent\"}"), sent) << text;
    EXPECT_EQ(value(text, "crcrd_runs_open{state=\"queued\"}"), 0) << text;
    EXPECT_EQ(value(text, "crcrd_slots{state=\"idle\"}"), 1) << text;
    EXPECT_EQ(value(text, "crcrd_outbox_backlog{sink=\"file\"}"), 0) << text;
    EXPECT_GT(
        value(text, "crcrd_http_request_duration_seconds_count{route=\"webhook\",method=\"POST\"}"),
        2)
        << text;
    EXPECT_GT(value(text, "process_resident_memory_bytes"), 0) << text;
    EXPECT_GT(value(text, "process_open_fds"), 0) << text;
    EXPECT_EQ(text.find("/api/v1/runs/1"), std::string::npos) << "a raw path as a label:\n" << text;

    // A delivery is counted before its 202 is sent: the next scrape sees it, no waiting.
    const double runs_before = value(text, "crcrd_runs_created_total{event=\"pull_request\"}");
    const auto third = post({"torch/_inductor/ir.py"}, "mx-3");
    text = scrape();
    EXPECT_EQ(value(text, "crcrd_deliveries_total{verdict=\"queued\"}"), 3) << text;
    EXPECT_EQ(value(text, "crcrd_runs_created_total{event=\"pull_request\"}"), runs_before + 1)
        << text;
    ASSERT_EQ(daemon->finished(third), "completed/passed");
    EXPECT_TRUE(eventually([&] {
        return value(scrape(),
                     "crcrd_runs_finished_total{event=\"pull_request\",conclusion=\"passed\"}") ==
               2;
    }));

    // Counters are not counted from the database at scrape time: rows the pruner deletes
    // (rejected deliveries after storage.rejected_retention) stay counted.
    delete_deliveries(*daemon, "rejected");
    EXPECT_EQ(value(scrape(), "crcrd_deliveries_total{verdict=\"rejected\"}"), 1);

    // A restart starts the counters from the database: what it still holds.
    ASSERT_TRUE(eventually([&] { return count_outbox(*daemon, {.delivery = "waiting"}) == 0; }));
    ASSERT_EQ(daemon->stop(), 0);
    daemon->start();
    text = scrape();
    EXPECT_EQ(promtool(text, &out), 0) << out << "\n" << text;
    EXPECT_EQ(value(text, "crcrd_deliveries_total{verdict=\"queued\"}"), 3) << text;
    EXPECT_EQ(value(text, "crcrd_deliveries_total{verdict=\"rejected\"}"), 0) << text;
    EXPECT_EQ(
        value(text, "crcrd_runs_finished_total{event=\"pull_request\",conclusion=\"passed\"}"), 2)
        << text;
    EXPECT_EQ(
        value(text, "crcrd_runs_finished_total{event=\"pull_request\",conclusion=\"regression\"}"),
        1)
        << text;
    EXPECT_EQ(value(text, "crcrd_jobs_finished_total{tier=\"import\",conclusion=\"passed\"}"), 3)
        << text;
    EXPECT_EQ(value(text, "crcrd_statuses_total{sink=\"file\",outcome=\"sent\"}"),
              count_outbox(*daemon, {.sink = "file", .delivery = "sent"}))
        << text;
    // And they keep moving after it.
    const auto fourth = post({"aten/x.cpp"}, "mx-4");
    ASSERT_EQ(daemon->finished(fourth), "completed/regression");
    EXPECT_TRUE(eventually([&] {
        return value(
                   scrape(),
                   "crcrd_runs_finished_total{event=\"pull_request\",conclusion=\"regression\"}") ==
               2;
    }));
}

TEST_F(MetricsTest, LaneGaugesShowAPausedGithubLaneItsBudgetLeftAndItsNextSend) {
    PausingGithub gh;
    start(gh.report_yaml(dir.path()));
    if (IsSkipped()) return;
    const auto run = post({"torch/_inductor/ir.py"}, "mx-lane-1");
    ASSERT_EQ(daemon->finished(run), "completed/passed");
    // GitHub's first answer (403, Retry-After: 3600) pauses its lane for an hour, its statuses
    // waiting; the report file's lane goes on.
    std::string text;
    ASSERT_TRUE(eventually(
        [&] {
            text = scrape();
            return value(text, "crcrd_outbox_lane_paused{sink=\"github\"}") == 1 &&
                   value(text, "crcrd_outbox_backlog{sink=\"file\"}") == 0;
        },
        std::chrono::seconds(30)))
        << text << daemon->log();
    EXPECT_EQ(gh.posts(), 1u);
    EXPECT_GT(value(text, "crcrd_outbox_backlog{sink=\"github\"}"), 0) << text;
    EXPECT_EQ(value(text, "crcrd_outbox_budget_left{sink=\"github\",window=\"60s\"}"), 79) << text;
    EXPECT_EQ(value(text, "crcrd_outbox_budget_left{sink=\"github\",window=\"3600s\"}"), 499)
        << text;
    const double next = value(text, "crcrd_outbox_next_send_seconds{sink=\"github\"}");
    EXPECT_GT(next, 3000) << text;
    EXPECT_LE(next, 3600) << text;
    EXPECT_EQ(value(text, "crcrd_outbox_held_back{sink=\"github\"}"), 0) << text;
    // The file lane: not paused, nothing to send, no budget; the relay's lane is not configured.
    EXPECT_EQ(value(text, "crcrd_outbox_lane_paused{sink=\"file\"}"), 0) << text;
    EXPECT_EQ(value(text, "crcrd_outbox_next_send_seconds{sink=\"file\"}"), 0) << text;
    EXPECT_EQ(text.find("crcrd_outbox_budget_left{sink=\"file\""), std::string::npos) << text;
    EXPECT_EQ(text.find("crcrd_outbox_budget_left{sink=\"callback\""), std::string::npos) << text;
    EXPECT_EQ(value(text, "crcrd_outbox_lane_paused{sink=\"callback\"}"), 0) << text;
    if (std::filesystem::exists("/usr/bin/promtool")) {
        std::string out;
        EXPECT_EQ(promtool(text, &out), 0) << out << "\n" << text;
    }
}

}  // namespace
}  // namespace crcrd
