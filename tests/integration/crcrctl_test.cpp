// crcrctl against the real daemon: tables for people, --json for scripts, actions, --help on
// every command, usage errors found before any request, and the exit codes of docs/operations.md
// ("crcrctl").
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>
#include <algorithm>
#include <nlohmann/json.hpp>

#include <map>
#include <set>
#include <sstream>

#include "crcrd/core/crypto.hpp"
#include "crcrd/core/files.hpp"
#include "support/certs.hpp"
#include "support/ci_script.hpp"
#include "support/daemon.hpp"
#include "support/pausing_github.hpp"
#include "support/state.hpp"

namespace crcrd {
namespace {

using nlohmann::json;

/// What crcrctl printed on each stream, and its exit code.
struct Ctl {
    int code = -1;
    std::string out;
    std::string err;
};

/// crcrctl `args`, its standard output and standard error kept apart.
Ctl run_ctl(const std::vector<std::string>& args) {
    TempDir tmp;
    const auto err_file = tmp.path() / "stderr";
    std::vector<std::string> argv = {
        "/bin/sh",         "-c",       "err=$1; shift; exec \"$@\" 2>\"$err\"", "sh",
        err_file.string(), CRCRCTL_BIN};
    argv.insert(argv.end(), args.begin(), args.end());
    Ctl c;
    c.code = run_command(argv, &c.out);
    c.err = read_file(err_file).value_or("");
    return c;
}

/// A loopback port that refuses connections for as long as this lives: bound, never listening.
class RefusingPort {
  public:
    RefusingPort() {
        m_fd = ::socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        socklen_t len = sizeof a;
        if (m_fd < 0 || ::bind(m_fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
            ::getsockname(m_fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
            throw std::runtime_error("cannot bind a loopback port");
        }
        m_port = ntohs(a.sin_port);
    }
    ~RefusingPort() { ::close(m_fd); }
    std::string url() const { return "https://127.0.0.1:" + std::to_string(m_port); }

  private:
    int m_fd = -1;
    std::uint16_t m_port = 0;
};

std::string joined(const std::vector<std::string>& words) {
    std::string s;
    for (const auto& w : words) s += (s.empty() ? "" : " ") + w;
    return s;
}

TEST(CrcrctlUsage, HelpOnEveryCommandNamesItsOptions) {
    const std::vector<std::pair<std::vector<std::string>, std::vector<std::string>>> commands = {
        {{},
         {"--url", "--token-file", "--cacert", "--version", "runs", "jobs", "runners", "deliveries",
          "outbox", "recover", "misses", "send", "explain", "Exit status"}},
        {{"runs"}, {"list", "show", "cancel", "retry", "trigger"}},
        {{"runs", "list"},
         {"--state", "queued", "--conclusion", "regression", "--sha", "--pr", "--event", "--since",
          "--until", "--limit", "--cursor", "--json"}},
        {{"runs", "show"}, {"ID", "--json"}},
        {{"runs", "cancel"}, {"ID"}},
        {{"runs", "retry"}, {"ID"}},
        {{"runs", "trigger"}, {"--sha", "--tier"}},
        {{"jobs"}, {"log"}},
        {{"jobs", "log"}, {"ID", "--tail"}},
        {{"runners"}, {"list", "drain", "undrain"}},
        {{"runners", "list"}, {"--json"}},
        {{"runners", "drain"}, {"NAME"}},
        {{"runners", "undrain"}, {"NAME"}},
        {{"deliveries"}, {"list"}},
        {{"deliveries", "list"}, {"--verdict", "duplicate", "--limit", "--cursor", "--json"}},
        {{"outbox"}, {"list", "retry"}},
        {{"outbox", "list"},
         {"--state", "dead", "--sink", "--run-id", "--limit", "--cursor", "--json"}},
        {{"outbox", "retry"}, {"ID"}},
        {{"recover"}, {"--list", "--json"}},
        {{"misses"}, {"--run-id", "--test", "--limit", "--cursor", "--json"}},
        {{"send"}, {"--scheme", "--secret-file", "--event", "--delivery-id", "EVENT.json"}},
        {{"explain"}, {"--rules", "--changed-files", "--event", "--json"}},
    };
    for (const auto& [words, options] : commands) {
        auto args = words;
        args.push_back("--help");
        auto c = run_ctl(args);
        const std::string cmd = joined(args);
        EXPECT_EQ(c.code, 0) << cmd << "\n" << c.err;
        EXPECT_EQ(c.err, "") << cmd;
        // The command's own help, not the top level's.
        EXPECT_NE(c.out.find(joined({"crcrctl", joined(words)})), std::string::npos) << cmd << "\n"
                                                                                     << c.out;
        EXPECT_NE(c.out.find("--help"), std::string::npos) << cmd << "\n" << c.out;
        for (const auto& o : options)
            EXPECT_NE(c.out.find(o), std::string::npos) << cmd << " lacks " << o << "\n" << c.out;
    }
    auto v = run_ctl({"--version"});
    EXPECT_EQ(v.code, 0);
    EXPECT_EQ(v.out.rfind("crcrctl ", 0), 0u) << v.out;
}

TEST(CrcrctlUsage, UnknownOptionsAndMissingArgumentsAreUsageErrorsFoundBeforeAnyRequest) {
    // Nothing listens at --url: a command that sent a request would exit 3, not 2.
    RefusingPort port;
    TempDir dir;
    write_file(dir.path() / "event.json", "{}");
    const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
        {{"runs", "list", "-s", "queued"}, "-s"},
        {{"runs", "list", "--bogus"}, "--bogus"},
        {{"runs", "list", "--state"}, "--state"},
        {{"runs", "list", "--json", "extra"}, "extra"},
        {{"deliveries", "list", "--state", "queued"}, "--state"},  // a filter of another listing
        {{"misses", "--verdict", "queued"}, "--verdict"},
        {{"runs", "show"}, "ID"},
        {{"runs", "show", "seven"}, "seven"},
        {{"runs", "trigger"}, "--sha"},
        {{"runners", "drain"}, "NAME"},
        {{"runs"}, "subcommand"},
        {{}, "subcommand"},
        {{"frobnicate"}, "frobnicate"},
        {{"runs", "frobnicate"}, "frobnicate"},
        {{"send", (dir.path() / "event.json").string()}, "--secret-file"},
        {{"send", "--secret-file", (dir.path() / "event.json").string(), "--scheme",
          "carrier-pigeon", (dir.path() / "event.json").string()},
         "carrier-pigeon"},
        {{"explain", "--changed-files", "-"}, "--rules"},
        {{"--token-file", (dir.path() / "missing.token").string(), "runs", "list"},
         "missing.token"},
    };
    for (const auto& [args, needle] : cases) {
        std::vector<std::string> argv = {"--url", port.url()};
        argv.insert(argv.end(), args.begin(), args.end());
        auto c = run_ctl(argv);
        EXPECT_EQ(c.code, 2) << joined(args) << "\n" << c.out << c.err;
        EXPECT_EQ(c.out, "") << joined(args);
        EXPECT_NE(c.err.find(needle), std::string::npos) << joined(args) << "\n" << c.err;
        EXPECT_NE(c.err.find("--help"), std::string::npos) << joined(args) << "\n" << c.err;
    }
    // The same daemon URL with a valid command: nothing listening is exit 3.
    auto c = run_ctl({"--url", port.url(), "runs", "list"});
    EXPECT_EQ(c.code, 3) << c.out << c.err;
    EXPECT_EQ(c.out, "");
    EXPECT_NE(c.err.find("cannot connect to 127.0.0.1"), std::string::npos) << c.err;
}

class AdminCli : public ::testing::Test {
  protected:
    void SetUp() override {
        write_file(dir.path() / "ci" / "ci.sh", k_ci_script, 0755);
        write_file(dir.path() / "selection.yaml",
                   "tiers:\n  - {name: import, always: true, tests: [ok_import]}\n"
                   "  - {name: affected, from_rules: true}\n"
                   "rules:\n  - {name: fail, paths: [\"fail/**\"], tests: [fail_x]}\nunmatched: "
                   "nothing\n");
        write_file(dir.path() / "ops.token", "ops-token\n", 0600);
        write_file(dir.path() / "read.token", "read-token\n", 0600);
        daemon = std::make_unique<TestDaemon>(dir.path(), config());
        daemon->start();
    }
    /// `github`: report.github's mapping (none: the report file alone).
    std::string config(const std::string& github = "") {
        return "selection: {rules: selection.yaml}\n"
               "runners: [{name: sim-0, labels: [sim], health_check: [/bin/true]}]\n"
               "execution: {command: [ci/ci.sh], work_root: state/work, isolation: none, "
               "min_free_bytes: 1MiB, flaky_reruns: 0}\n"
               "report: {context_prefix: crcr/spyre, file: state/statuses.jsonl" +
               (github.empty() ? "" : ", min_interval: 0s, github: " + github) +
               "}\n"
               "admin: {tokens: [{name: ops, role: admin, sha256: " +
               crypto::sha256_hex("ops-token") +
               "}, {name: viewer, role: read, sha256: " + crypto::sha256_hex("read-token") +
               "}]}\n";
    }
    /// crcrctl with the admin options; returns its exit code, `out` gets stdout and stderr.
    int ctl(std::vector<std::string> args, std::string* out,
            const std::string& token = "ops.token") {
        std::vector<std::string> argv = {CRCRCTL_BIN, "--url", daemon->url(""), "--cacert",
                                         test_certs().ca.string()};
        if (!token.empty())
            argv.insert(argv.end(), {"--token-file", (dir.path() / token).string()});
        argv.insert(argv.end(), args.begin(), args.end());
        return run_command(argv, out);
    }
    /// ctl() with stdout and stderr apart.
    Ctl ctl2(std::vector<std::string> args, const std::string& token = "ops.token") {
        std::vector<std::string> argv = {"--url", daemon->url(""), "--cacert",
                                         test_certs().ca.string()};
        if (!token.empty())
            argv.insert(argv.end(), {"--token-file", (dir.path() / token).string()});
        argv.insert(argv.end(), args.begin(), args.end());
        return run_ctl(argv);
    }
    /// The ids of a listing's JSON page, in order.
    static std::vector<std::int64_t> ids(const std::string& page) {
        std::vector<std::int64_t> out;
        const json j = json::parse(page);
        for (const auto& item : j["items"]) out.push_back(item["id"].get<std::int64_t>());
        return out;
    }
    std::int64_t finished_run(const std::vector<std::string>& changed, const std::string& id,
                              const std::string& sha = "") {
        json j = json::parse(fixture_text("crcr/direct-pytorch-crcr.json"));
        j["client_payload"]["changed_files"] = changed;
        if (!sha.empty()) j["client_payload"]["upstream_sha"] = sha;
        auto r = daemon->post_standard(j.dump(), id);
        EXPECT_EQ(r->status, 202) << r->body;
        auto run = json::parse(r->body)["run_id"].get<std::int64_t>();
        EXPECT_TRUE(eventually([&] { return run_row(*daemon, run).state == "completed"; },
                               std::chrono::seconds(60)))
            << daemon->log();
        EXPECT_TRUE(
            eventually([&] { return count_outbox(*daemon, {.delivery = "waiting"}) == 0; }));
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

    ASSERT_EQ(
        ctl({"outbox", "list", "--state", "sent", "--run", std::to_string(run), "--json"}, &out), 0)
        << out;
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

TEST_F(AdminCli, OutboxListShowsEachLaneBeforeTheRows) {
    // GitHub answers the first status 403 with Retry-After: its lane pauses, its rows waiting.
    PausingGithub gh;
    ASSERT_EQ(daemon->stop(), 0);
    daemon->write_config(config(gh.report_yaml(dir.path())));
    daemon->start();
    json j = json::parse(fixture_text("crcr/direct-pytorch-crcr.json"));
    j["client_payload"]["changed_files"] = {"fail/x.py"};
    auto r = daemon->post_standard(j.dump(), "cli-lanes");
    ASSERT_EQ(r->status, 202) << r->body;
    const auto run = json::parse(r->body)["run_id"].get<std::int64_t>();
    ASSERT_EQ(daemon->finished(run), "completed/regression");
    json github = json::object();
    Ctl listed;
    ASSERT_TRUE(eventually(
        [&] {
            listed = ctl2({"outbox", "list", "--json"});
            if (listed.code != 0) return false;
            const json page = json::parse(listed.out);
            for (const auto& l : page["lanes"])
                if (l["sink"] == "github") github = l;
            // Paused, and the lane's look after the pause recorded its next send.
            return github.value("paused_until", json(nullptr)).is_string() &&
                   github["next_send_at"] == github["paused_until"] &&
                   count_outbox(*daemon, {.sink = "file", .delivery = "waiting"}) == 0;
        },
        std::chrono::seconds(30)))
        << github.dump() << "\n"
        << listed.code << " " << listed.err << "\n"
        << daemon->log();
    EXPECT_EQ(gh.posts(), 1u);

    auto c = ctl2({"outbox", "list"});
    ASSERT_EQ(c.code, 0) << c.out << c.err;
    std::map<std::string, std::string> lanes;  // sink → its line
    std::istringstream in(c.out);
    std::string header;
    std::getline(in, header);
    EXPECT_EQ(header.rfind("LANE", 0), 0u) << c.out;
    for (const char* column : {"WAITING", "DEAD", "BUDGET WINDOW:USED/LEFT", "PAUSED UNTIL",
                               "NEXT SEND", "OLDEST WAITING FINAL", "LAST ERROR"})
        EXPECT_NE(header.find(column), std::string::npos) << column << "\n" << c.out;
    for (std::string line; std::getline(in, line) && !line.empty();)
        lanes[line.substr(0, line.find(' '))] = line;
    ASSERT_EQ(lanes.size(), 3u) << c.out;
    // GitHub's lane: its waiting rows, one request of each window spent, the pause, the next
    // send at its end, the oldest waiting verdict and GitHub's message.
    const std::string& g = lanes["github"];
    EXPECT_NE(g.find("60s:1/79 3600s:1/499"), std::string::npos) << c.out;
    EXPECT_NE(g.find(github["paused_until"].get<std::string>()), std::string::npos) << c.out;
    EXPECT_NE(g.find(github["next_send_at"].get<std::string>()), std::string::npos) << c.out;
    ASSERT_TRUE(github["oldest_final_waiting_at"].is_string()) << github.dump();
    EXPECT_NE(g.find(github["oldest_final_waiting_at"].get<std::string>()), std::string::npos)
        << c.out;
    EXPECT_NE(g.find("HTTP 403: API rate limit exceeded"), std::string::npos) << c.out;
    std::istringstream cells(g);
    std::string sink, waiting, dead;
    cells >> sink >> waiting >> dead;
    EXPECT_EQ(waiting, std::to_string(github["waiting"].get<int>())) << c.out;
    EXPECT_NE(waiting, "0") << c.out;
    EXPECT_EQ(dead, "0") << c.out;
    EXPECT_NE(lanes["callback"].find("not configured"), std::string::npos) << c.out;
    EXPECT_EQ(lanes["file"].find("not configured"), std::string::npos) << c.out;
    // Then the rows, as before.
    EXPECT_NE(c.out.find("\n\nID "), std::string::npos) << c.out;
    EXPECT_NE(c.out.find("crcr/spyre/affected"), std::string::npos) << c.out;
}

TEST_F(AdminCli, ManualRunsOfChosenTiersAndRetriesOfFinishedRuns) {
    auto first = finished_run({"fail/x.py"}, "cli-2");
    std::string out;
    const std::string sha = "ec26c3e57ca3a959ca5aad62de7213c562f8c821";
    ASSERT_EQ(ctl({"runs", "trigger", "--sha", sha, "--tier", "import"}, &out), 0) << out;
    auto manual = json::parse(out);
    EXPECT_EQ(manual["tiers"], json::array({"import"}));
    const auto manual_run = manual["run_id"].get<std::int64_t>();
    const auto manual_id = std::to_string(manual_run);
    ASSERT_TRUE(eventually([&] { return run_row(*daemon, manual_run).state == "completed"; },
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
    const auto retry_run = retry["run_id"].get<std::int64_t>();
    ASSERT_TRUE(eventually([&] { return run_row(*daemon, retry_run).state == "completed"; },
                           std::chrono::seconds(60)));
    EXPECT_EQ(run_row(*daemon, retry_run).conclusion, "regression");
    EXPECT_EQ(count_jobs(*daemon, {.run = retry_run}), 2);

    // Refusals: an unknown tier and a bad SHA are usage errors (the API answers 400), a read
    // token is forbidden, an unknown run is not found.
    EXPECT_EQ(ctl({"runs", "trigger", "--sha", sha, "--tier", "nope"}, &out), 2);
    EXPECT_NE(out.find("HTTP 400: bad_request: no tier 'nope' in the rules file"),
              std::string::npos)
        << out;
    EXPECT_EQ(ctl({"runs", "trigger", "--sha", "abc"}, &out), 2);
    EXPECT_NE(out.find("40-character"), std::string::npos) << out;
    EXPECT_EQ(ctl({"runs", "retry", std::to_string(first)}, &out, "read.token"), 4);
    EXPECT_NE(out.find("HTTP 403"), std::string::npos) << out;
    EXPECT_EQ(ctl({"runs", "retry", "424242"}, &out), 5);
    EXPECT_NE(out.find("HTTP 404"), std::string::npos) << out;
}

TEST_F(AdminCli, RetentionPrunesOldBodiesOutboxRowsAndLogsButKeepsTheHistory) {
    auto run = finished_run({"fail/x.py"}, "cli-old");
    const auto last = last_job(*daemon, {.run = run});
    const auto job = std::to_string(last.id);
    const auto log = last.log_path;
    ASSERT_TRUE(std::filesystem::exists(log));
    ASSERT_GT(count_outbox(*daemon), 0);
    EXPECT_EQ(daemon->stop(), 0);
    daemon->write_config(config(), "", ", retention: 1s, prune_interval: 200ms");
    daemon->start();
    ASSERT_TRUE(eventually([&] { return !std::filesystem::exists(log); }, std::chrono::seconds(30)))
        << daemon->log();
    ASSERT_TRUE(eventually([&] { return count_outbox(*daemon) == 0; }));
    EXPECT_EQ(count_deliveries(*daemon, {.has_body = true}), 0);
    // The history stays: the run, its jobs, their test results, the delivery log.
    std::string out;
    ASSERT_EQ(ctl({"runs", "show", std::to_string(run), "--json"}, &out), 0) << out;
    EXPECT_EQ(json::parse(out)["conclusion"], "regression");
    EXPECT_GT(count_test_results(*daemon), 0);
    EXPECT_EQ(count_deliveries(*daemon), 1);
    EXPECT_EQ(ctl({"jobs", "log", job}, &out), 5);
    EXPECT_NE(out.find("has no log"), std::string::npos) << out;
    EXPECT_NE(daemon->log().find("retention: before"), std::string::npos);
}

TEST_F(AdminCli, ErrorsSayWhatWentWrong) {
    std::string out;
    EXPECT_EQ(ctl({"runs", "list"}, &out, ""), 4);
    EXPECT_NE(out.find("HTTP 401"), std::string::npos) << out;
    EXPECT_NE(out.find("needs --token-file"), std::string::npos) << out;
    EXPECT_EQ(ctl({"runners", "drain", "sim-0"}, &out, "read.token"), 4);
    EXPECT_NE(out.find("HTTP 403"), std::string::npos) << out;
    EXPECT_EQ(ctl({"runs", "show", "424242"}, &out), 5);
    EXPECT_NE(out.find("HTTP 404: not_found: no run 424242"), std::string::npos) << out;
    EXPECT_EQ(ctl({"outbox", "list", "--state", "lost"}, &out), 2);
    EXPECT_NE(out.find("HTTP 400: bad_request: state must be one of waiting"), std::string::npos)
        << out;
    EXPECT_EQ(ctl({"runs", "list", "--colour", "red"}, &out), 2);
    EXPECT_NE(out.find("--colour"), std::string::npos) << out;
    EXPECT_EQ(ctl({"runs", "show"}, &out), 2);
    EXPECT_EQ(ctl({"runs", "list"}, &out, "missing.token"), 2);
    EXPECT_NE(out.find("missing.token"), std::string::npos) << out;
}

TEST_F(AdminCli, ExitCodesSayWhatKindOfFailure) {
    // 3: a certificate the given CA did not sign (TLS verification fails).
    std::string out;
    ASSERT_EQ(
        run_command(
            {"openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
             "-nodes", "-keyout", (dir.path() / "other.key").string(), "-out",
             (dir.path() / "other-ca.pem").string(), "-days", "1", "-subj", "/CN=another CA"},
            &out),
        0)
        << out;
    auto c = run_ctl({"--url", daemon->url(""), "--cacert", (dir.path() / "other-ca.pem").string(),
                      "--token-file", (dir.path() / "ops.token").string(), "runs", "list"});
    EXPECT_EQ(c.code, 3) << c.out << c.err;
    EXPECT_EQ(c.out, "");
    EXPECT_NE(c.err.find("TLS handshake"), std::string::npos) << c.err;

    // 4: a token the daemon does not know; a read token on an admin command.
    write_file(dir.path() / "wrong.token", "not-a-token\n", 0600);
    c = ctl2({"runs", "list"}, "wrong.token");
    EXPECT_EQ(c.code, 4) << c.out << c.err;
    EXPECT_NE(c.err.find("HTTP 401"), std::string::npos) << c.err;
    c = ctl2({"runs", "cancel", "1"}, "read.token");
    EXPECT_EQ(c.code, 4) << c.out << c.err;
    EXPECT_NE(c.err.find("HTTP 403"), std::string::npos) << c.err;
    // send with the wrong secret: the webhook answers 401.
    write_file(dir.path() / "wrong.secret", "not-the-secret\n", 0600);
    c = ctl2({"send", "--secret-file", (dir.path() / "wrong.secret").string(),
              std::string(CRCRD_FIXTURES_DIR) + "/crcr/pull_request-synchronize.dispatch.json"});
    EXPECT_EQ(c.code, 4) << c.out << c.err;
    EXPECT_NE(c.out.find("HTTP 401"), std::string::npos) << c.out;

    // 5: nothing by that id or name.
    for (std::vector<std::string> args : {std::vector<std::string>{"runs", "show", "999999"},
                                          {"jobs", "log", "999999"},
                                          {"outbox", "retry", "999999"},
                                          {"runners", "drain", "no-such-runner"}}) {
        c = ctl2(args);
        EXPECT_EQ(c.code, 5) << joined(args) << "\n" << c.out << c.err;
        EXPECT_EQ(c.out, "") << joined(args);
        EXPECT_NE(c.err.find("HTTP 404"), std::string::npos) << joined(args) << "\n" << c.err;
    }
    c = ctl2({"runs", "show", "999999", "--json"});
    EXPECT_EQ(c.code, 5);

    // 2: a value the daemon refuses (400) is a usage error too; its reason is printed.
    c = ctl2({"runs", "list", "--state", "sleeping"});
    EXPECT_EQ(c.code, 2) << c.out << c.err;
    EXPECT_EQ(c.out, "");
    EXPECT_NE(c.err.find("HTTP 400: bad_request: state must be one of queued"), std::string::npos)
        << c.err;
    c = ctl2({"runs", "list", "--limit", "0"});
    EXPECT_EQ(c.code, 2) << c.out << c.err;
    EXPECT_NE(c.err.find("limit must be an integer"), std::string::npos) << c.err;
}

TEST_F(AdminCli, TheApiRefusesAQueryParameterItDoesNotKnow) {
    const http::Headers admin = {{"Authorization", "Bearer ops-token"}};
    auto r = daemon->request("GET", "/api/v1/runs?s=queued", admin, "");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 400);
    EXPECT_NE(r->body.find("unknown query parameter 's' (this route takes state, conclusion"),
              std::string::npos)
        << r->body;
    r = daemon->request("GET", "/api/v1/selection-misses?run=2", admin, "");
    EXPECT_EQ(r->status, 400) << r->body;  // it is run_id
    r = daemon->request("GET", "/api/v1/runners?state=idle", admin, "");
    EXPECT_EQ(r->status, 400) << r->body;
    EXPECT_NE(r->body.find("this route takes none"), std::string::npos) << r->body;
    r = daemon->request("GET", "/api/v1/jobs/1/log?lines=10", admin, "");
    EXPECT_EQ(r->status, 400) << r->body;
    r = daemon->request("POST", "/api/v1/runners/sim-0/drain?force=1", admin, "");
    EXPECT_EQ(r->status, 400) << r->body;
    const auto slots = slot_rows(*daemon);
    EXPECT_EQ(std::count_if(slots.begin(), slots.end(), [](const SlotRow& s) { return s.drained; }),
              0);
    // The parameters a route takes are still answered.
    r = daemon->request("GET", "/api/v1/runs?state=queued&limit=5", admin, "");
    EXPECT_EQ(r->status, 200) << r->body;
    r = daemon->request("GET", "/api/v1/outbox?state=dead&sink=github&run_id=1&limit=2", admin, "");
    EXPECT_EQ(r->status, 200) << r->body;
}

TEST_F(AdminCli, FiltersFilter) {
    const std::string other_sha = "1111111111111111111111111111111111111111";
    auto passed = finished_run({"docs/readme.md"}, "filter-1", other_sha);
    auto regression = finished_run({"fail/x.py"}, "filter-2");
    auto list = [&](std::vector<std::string> args) {
        args.insert(args.begin(), {"runs", "list"});
        args.push_back("--json");
        auto c = ctl2(args);
        EXPECT_EQ(c.code, 0) << joined(args) << "\n" << c.err;
        return c.code == 0 ? ids(c.out) : std::vector<std::int64_t>{-1};
    };
    using Ids = std::vector<std::int64_t>;
    EXPECT_EQ(list({}), (Ids{regression, passed}));
    EXPECT_EQ(list({"--conclusion", "passed"}), Ids{passed});
    EXPECT_EQ(list({"--conclusion", "regression"}), Ids{regression});
    EXPECT_EQ(list({"--sha", other_sha}), Ids{passed});
    EXPECT_EQ(list({"--state", "completed"}), (Ids{regression, passed}));
    EXPECT_EQ(list({"--state", "queued"}), Ids{});
    EXPECT_EQ(list({"--event", "manual"}), Ids{});
    EXPECT_EQ(list({"--since", "2100-01-01T00:00:00Z"}), Ids{});
    EXPECT_EQ(list({"--until", "2100-01-01T00:00:00+02:00"}), (Ids{regression, passed}));

    // Paging: --limit, then the cursor the first page printed.
    auto c = ctl2({"runs", "list", "--limit", "1"});
    ASSERT_EQ(c.code, 0) << c.err;
    auto more = c.out.find("(more: --cursor ");
    ASSERT_NE(more, std::string::npos) << c.out;
    const std::string cursor = c.out.substr(more + 16, c.out.find(')', more) - more - 16);
    EXPECT_EQ(list({"--limit", "1"}), Ids{regression});
    EXPECT_EQ(list({"--limit", "1", "--cursor", cursor}), Ids{passed});

    // The table shows only what the filter let through.
    c = ctl2({"runs", "list", "--conclusion", "passed"});
    ASSERT_EQ(c.code, 0) << c.err;
    EXPECT_NE(c.out.find("111111111111"), std::string::npos) << c.out;
    EXPECT_EQ(c.out.find("regression"), std::string::npos) << c.out;

    // Deliveries by verdict: a replayed delivery is a duplicate.
    json j = json::parse(fixture_text("crcr/direct-pytorch-crcr.json"));
    j["client_payload"]["changed_files"] = {"docs/readme.md"};
    j["client_payload"]["upstream_sha"] = other_sha;
    EXPECT_EQ(daemon->post_standard(j.dump(), "filter-1")->status, 200);
    c = ctl2({"deliveries", "list", "--verdict", "duplicate", "--json"});
    ASSERT_EQ(c.code, 0) << c.err;
    auto dup = json::parse(c.out)["items"];
    ASSERT_EQ(dup.size(), 1u) << c.out;
    EXPECT_EQ(dup[0]["delivery_id"], "filter-1");
    c = ctl2({"deliveries", "list", "--verdict", "queued", "--json"});
    ASSERT_EQ(c.code, 0) << c.err;
    EXPECT_EQ(json::parse(c.out)["items"].size(), 2u) << c.out;

    // The outbox of one run (--run-id and --run are the same option).
    for (const char* option : {"--run-id", "--run"}) {
        c = ctl2({"outbox", "list", option, std::to_string(passed), "--json"});
        ASSERT_EQ(c.code, 0) << c.err;
        auto rows = json::parse(c.out)["items"];
        ASSERT_FALSE(rows.empty());
        for (const auto& row : rows) EXPECT_EQ(row["run_id"], passed);
    }
}

TEST_F(AdminCli, OneUrlMeansTheDaemonForEveryCommandAndTheOptionsMayFollowTheCommand) {
    const auto direct = std::string(CRCRD_FIXTURES_DIR) + "/crcr/direct-pytorch-crcr.json";
    const auto whsec = (dir.path() / "secrets" / "relay.whsec").string();
    // The base URL: send posts to <url>/webhook.
    auto c = run_ctl({"send", "--scheme", "standard-webhooks", "--secret-file", whsec, "--url",
                      daemon->url(""), "--cacert", test_certs().ca.string(), direct});
    EXPECT_EQ(c.code, 0) << c.out << c.err;
    EXPECT_NE(c.out.find("HTTP 202"), std::string::npos) << c.out;
    // The webhook's URL, as older invocations gave it, names the same daemon for every command;
    // the connection options may also follow the command.
    int n = 0;
    for (const auto& url : {daemon->url("/webhook"), daemon->url("/")}) {
        c = run_ctl({"runs", "list", "--json", "--url", url, "--cacert", test_certs().ca.string(),
                     "--token-file", (dir.path() / "ops.token").string()});
        EXPECT_EQ(c.code, 0) << url << "\n" << c.err;
        if (c.code == 0) {
            EXPECT_EQ(ids(c.out).size(), static_cast<std::size_t>(1 + n)) << c.out;
        }
        c = run_ctl({"--url", url, "--cacert", test_certs().ca.string(), "send", "--scheme",
                     "standard-webhooks", "--secret-file", whsec, direct});
        EXPECT_EQ(c.code, 0) << url << "\n" << c.out << c.err;
        EXPECT_NE(c.out.find("HTTP 202"), std::string::npos) << c.out;
        ++n;
    }
}

}  // namespace
}  // namespace crcrd
