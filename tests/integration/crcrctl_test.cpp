// crcrctl's admin commands against the real daemon: tables for people, --json for scripts,
// actions, and the errors an operator sees.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "crcrd/core/crypto.hpp"
#include "crcrd/core/files.hpp"
#include "support/certs.hpp"
#include "support/ci_script.hpp"
#include "support/daemon.hpp"

namespace crcrd {
namespace {

using nlohmann::json;

class AdminCli : public ::testing::Test {
protected:
    void SetUp() override {
        write_file(dir.path() / "ci" / "ci.sh", k_ci_script, 0755);
        write_file(dir.path() / "selection.yaml",
                   "tiers:\n  - {name: import, always: true, tests: [ok_import]}\n"
                   "  - {name: affected, from_rules: true}\n"
                   "rules:\n  - {name: fail, paths: [\"fail/**\"], tests: [fail_x]}\nunmatched: nothing\n");
        write_file(dir.path() / "ops.token", "ops-token\n", 0600);
        write_file(dir.path() / "read.token", "read-token\n", 0600);
        daemon = std::make_unique<TestDaemon>(dir.path(), config());
        daemon->start();
    }
    std::string config() {
        return "selection: {rules: selection.yaml}\n"
            "runners: [{name: sim-0, labels: [sim], health_check: [/bin/true]}]\n"
            "execution: {command: [ci/ci.sh], work_root: state/work, isolation: none, min_free_bytes: 1MiB, flaky_reruns: 0}\n"
            "report: {context_prefix: crcr/spyre, file: state/statuses.jsonl}\n"
            "admin: {tokens: [{name: ops, role: admin, sha256: " + crypto::sha256_hex("ops-token") +
                "}, {name: viewer, role: read, sha256: " + crypto::sha256_hex("read-token") + "}]}\n";
    }
    /// crcrctl with the admin options; returns its exit code, `out` gets stdout and stderr.
    int ctl(std::vector<std::string> args, std::string* out, const std::string& token = "ops.token") {
        std::vector<std::string> argv = {CRCRCTL_BIN, "--url", daemon->url(""), "--cacert", test_certs().ca.string()};
        if (!token.empty()) argv.insert(argv.end(), {"--token-file", (dir.path() / token).string()});
        argv.insert(argv.end(), args.begin(), args.end());
        return run_command(argv, out);
    }
    std::int64_t finished_run(const std::vector<std::string>& changed, const std::string& id) {
        json j = json::parse(fixture_text("crcr/direct-pytorch-crcr.json"));
        j["client_payload"]["changed_files"] = changed;
        auto r = daemon->post_standard(j.dump(), id);
        EXPECT_EQ(r->status, 202) << r->body;
        auto run = json::parse(r->body)["run_id"].get<std::int64_t>();
        std::string sql = "SELECT state FROM runs WHERE id=" + std::to_string(run);
        EXPECT_TRUE(eventually([&] { return daemon->text(sql) == "completed"; }, std::chrono::seconds(60))) << daemon->log();
        EXPECT_TRUE(eventually([&] { return daemon->scalar("SELECT count(*) FROM outbox WHERE delivery='waiting'") == 0; }));
        return run;
    }
    TempDir dir;
    std::unique_ptr<TestDaemon> daemon;
};

TEST_F(AdminCli, ListsShowsAndActsOnRunsJobsRunnersDeliveriesAndTheOutbox) {
    auto run = finished_run({"fail/x.py"}, "cli-1");
    std::string out;
    ASSERT_EQ(ctl({"runs", "list"}, &out), 0) << out;
    EXPECT_NE(out.find("ID  EVENT"), std::string::npos) << out;
    EXPECT_NE(out.find("ec26c3e57ca3"), std::string::npos) << out;
    EXPECT_NE(out.find("regression"), std::string::npos) << out;

    ASSERT_EQ(ctl({"runs", "show", std::to_string(run), "--json"}, &out), 0) << out;
    auto shown = json::parse(out);
    EXPECT_EQ(shown["id"], run);
    EXPECT_EQ(shown["conclusion"], "regression");
    ASSERT_EQ(ctl({"runs", "show", std::to_string(run)}, &out), 0) << out;
    EXPECT_NE(out.find("affected  1        completed  regression"), std::string::npos) << out;
    EXPECT_NE(out.find("crcr/spyre/affected  failure"), std::string::npos) << out;

    ASSERT_EQ(ctl({"outbox", "list", "--state", "sent", "--run", std::to_string(run), "--json"}, &out), 0) << out;
    auto outbox = json::parse(out);
    ASSERT_FALSE(outbox["items"].empty());
    for (const auto& row : outbox["items"]) {
        EXPECT_EQ(row["delivery"], "sent");
        EXPECT_EQ(row["run_id"], run);
    }

    auto job = shown["jobs"].back()["id"].get<std::int64_t>();
    ASSERT_EQ(ctl({"jobs", "log", std::to_string(job), "--tail", "33"}, &out), 0) << out;
    EXPECT_EQ(out, "slot=sim-0 device= tier=affected\n");

    ASSERT_EQ(ctl({"deliveries", "list", "--verdict", "queued"}, &out), 0) << out;
    EXPECT_NE(out.find("cli-1"), std::string::npos) << out;

    ASSERT_EQ(ctl({"runners", "drain", "sim-0"}, &out), 0) << out;
    ASSERT_EQ(ctl({"runners", "list", "--json"}, &out), 0) << out;
    EXPECT_EQ(json::parse(out)["items"][0]["state"], "drained");
    ASSERT_EQ(ctl({"runners", "undrain", "sim-0"}, &out), 0) << out;
    ASSERT_EQ(ctl({"runners", "list"}, &out), 0) << out;
    EXPECT_NE(out.find("sim-0  idle"), std::string::npos) << out;
}

TEST_F(AdminCli, ManualRunsOfChosenTiersAndRetriesOfFinishedRuns) {
    auto first = finished_run({"fail/x.py"}, "cli-2");
    std::string out;
    const std::string sha = "ec26c3e57ca3a959ca5aad62de7213c562f8c821";
    ASSERT_EQ(ctl({"runs", "trigger", "--sha", sha, "--tier", "import"}, &out), 0) << out;
    auto manual = json::parse(out);
    EXPECT_EQ(manual["tiers"], json::array({"import"}));
    const auto manual_id = std::to_string(manual["run_id"].get<std::int64_t>());
    ASSERT_TRUE(eventually([&] { return daemon->text("SELECT state FROM runs WHERE id=" + manual_id) == "completed"; },
                           std::chrono::seconds(60)));
    ASSERT_EQ(ctl({"runs", "show", manual_id, "--json"}, &out), 0) << out;
    auto shown = json::parse(out);
    EXPECT_EQ(shown["event"], "manual");
    EXPECT_EQ(shown["conclusion"], "passed");
    EXPECT_EQ(shown["selection"]["source"], "manual");
    ASSERT_EQ(shown["jobs"].size(), 1u);
    EXPECT_EQ(shown["jobs"][0]["tier"], "import");

    // A retry runs the same change again: the same tiers are selected, with the same result.
    ASSERT_EQ(ctl({"runs", "retry", std::to_string(first)}, &out), 0) << out;
    auto retry = json::parse(out);
    EXPECT_EQ(retry["retry_of"], first);
    const auto retry_id = std::to_string(retry["run_id"].get<std::int64_t>());
    ASSERT_TRUE(eventually([&] { return daemon->text("SELECT state FROM runs WHERE id=" + retry_id) == "completed"; },
                           std::chrono::seconds(60)));
    EXPECT_EQ(daemon->text("SELECT conclusion FROM runs WHERE id=" + retry_id), "regression");
    EXPECT_EQ(daemon->scalar("SELECT count(*) FROM jobs WHERE run_id=" + retry_id), 2);

    // Refusals: an unknown tier, a bad SHA, a read token.
    EXPECT_EQ(ctl({"runs", "trigger", "--sha", sha, "--tier", "nope"}, &out), 1);
    EXPECT_NE(out.find("HTTP 400: bad_request: no tier 'nope' in the rules file"), std::string::npos) << out;
    EXPECT_EQ(ctl({"runs", "trigger", "--sha", "abc"}, &out), 1);
    EXPECT_NE(out.find("40-character"), std::string::npos) << out;
    EXPECT_EQ(ctl({"runs", "retry", std::to_string(first)}, &out, "read.token"), 1);
    EXPECT_NE(out.find("HTTP 403"), std::string::npos) << out;
    EXPECT_EQ(ctl({"runs", "retry", "424242"}, &out), 1);
    EXPECT_NE(out.find("HTTP 404"), std::string::npos) << out;
}

TEST_F(AdminCli, RetentionPrunesOldBodiesOutboxRowsAndLogsButKeepsTheHistory) {
    auto run = finished_run({"fail/x.py"}, "cli-old");
    const auto job = std::to_string(daemon->scalar("SELECT max(id) FROM jobs WHERE run_id=" + std::to_string(run)));
    const auto log = daemon->text("SELECT log_path FROM jobs WHERE id=" + job);
    ASSERT_TRUE(std::filesystem::exists(log));
    ASSERT_GT(daemon->scalar("SELECT count(*) FROM outbox"), 0);
    EXPECT_EQ(daemon->stop(), 0);
    daemon->write_config(config(), "", ", retention: 1s, prune_interval: 200ms");
    daemon->start();
    ASSERT_TRUE(eventually([&] { return !std::filesystem::exists(log); }, std::chrono::seconds(30))) << daemon->log();
    ASSERT_TRUE(eventually([&] { return daemon->scalar("SELECT count(*) FROM outbox") == 0; }));
    EXPECT_EQ(daemon->scalar("SELECT count(*) FROM deliveries WHERE body IS NOT NULL"), 0);
    // The history stays: the run, its jobs, their test results, the delivery log.
    std::string out;
    ASSERT_EQ(ctl({"runs", "show", std::to_string(run), "--json"}, &out), 0) << out;
    EXPECT_EQ(json::parse(out)["conclusion"], "regression");
    EXPECT_GT(daemon->scalar("SELECT count(*) FROM test_results"), 0);
    EXPECT_EQ(daemon->scalar("SELECT count(*) FROM deliveries"), 1);
    EXPECT_EQ(ctl({"jobs", "log", job}, &out), 1);
    EXPECT_NE(out.find("has no log"), std::string::npos) << out;
    EXPECT_NE(daemon->log().find("retention: before"), std::string::npos);
}

TEST_F(AdminCli, ErrorsSayWhatWentWrong) {
    std::string out;
    EXPECT_EQ(ctl({"runs", "list"}, &out, ""), 1);
    EXPECT_NE(out.find("HTTP 401"), std::string::npos) << out;
    EXPECT_NE(out.find("needs --token-file"), std::string::npos) << out;
    EXPECT_EQ(ctl({"runners", "drain", "sim-0"}, &out, "read.token"), 1);
    EXPECT_NE(out.find("HTTP 403"), std::string::npos) << out;
    EXPECT_EQ(ctl({"runs", "show", "424242"}, &out), 1);
    EXPECT_NE(out.find("HTTP 404: not_found: no run 424242"), std::string::npos) << out;
    EXPECT_EQ(ctl({"outbox", "list", "--state", "lost"}, &out), 1);
    EXPECT_NE(out.find("HTTP 400"), std::string::npos) << out;
    EXPECT_EQ(ctl({"runs", "list", "--colour", "red"}, &out), 2);
    EXPECT_NE(out.find("unexpected option '--colour'"), std::string::npos) << out;
    EXPECT_EQ(ctl({"runs", "show"}, &out), 2);
    EXPECT_EQ(ctl({"runs", "list"}, &out, "missing.token"), 2);
    EXPECT_NE(out.find("missing.token"), std::string::npos) << out;
}

}  // namespace
}  // namespace crcrd
