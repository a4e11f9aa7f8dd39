// `crcrctl explain` and the rules file as the daemon checks it (start-up, --check-config).
#include <gtest/gtest.h>
#include <signal.h>
#include <nlohmann/json.hpp>

#include "support/daemon.hpp"
#include "support/state.hpp"

namespace crcrd {
namespace {

const char* k_rules = R"(tiers:
  - {name: import, always: true, tests: [tests/test_import.py]}
  - {name: affected, from_rules: true}
rules:
  - {name: dispatch, paths: ["aten/src/ATen/native/**"], tests: [test/test_ops.py]}
  - {name: docs, paths: ["docs/**"], skip: true}
unmatched: nothing
)";

TEST(Explain, PrintsTheDecisionForChangedFilesFromStdinOrAFile) {
    TempDir dir;
    write_file(dir.path() / "sel.yaml", k_rules);
    std::string out;
    int rc = run_command({CRCRCTL_BIN, "explain", "--rules", (dir.path() / "sel.yaml").string(),
                          "--changed-files", "-"},
                         &out, "aten/src/ATen/native/BinaryOps.cpp\n\ndocs/index.rst\nsetup.py\n");
    EXPECT_EQ(rc, 0) << out;
    EXPECT_NE(out.find("3 changed path(s)"), std::string::npos) << out;
    EXPECT_NE(out.find("affected: rules matched: dispatch"), std::string::npos) << out;
    EXPECT_NE(out.find("matched no rule: 1 path(s)"), std::string::npos) << out;

    write_file(dir.path() / "changed.txt", "docs/index.rst\n");
    rc = run_command({CRCRCTL_BIN, "explain", "--rules", (dir.path() / "sel.yaml").string(),
                      "--changed-files", (dir.path() / "changed.txt").string(), "--json"},
                     &out);
    ASSERT_EQ(rc, 0) << out;
    auto j = nlohmann::json::parse(out);
    EXPECT_EQ(j["docs_only"], true);
    ASSERT_EQ(j["tiers"].size(), 1u);
    EXPECT_EQ(j["tiers"][0]["name"], "import");
    EXPECT_EQ(j["rules"][0]["name"], "docs");
}

TEST(Explain, InvalidRulesAreReportedWithFileLineAndKey) {
    TempDir dir;
    write_file(dir.path() / "bad.yaml",
               "tiers:\n  - name: import\n    always: true\n    timeout: soon\n");
    std::string out;
    int rc = run_command({CRCRCTL_BIN, "explain", "--rules", (dir.path() / "bad.yaml").string(),
                          "--changed-files", "-"},
                         &out, "x\n");
    EXPECT_EQ(rc, 2);
    EXPECT_NE(out.find("bad.yaml: tiers[0].timeout: 'soon' is not a duration"), std::string::npos)
        << out;
    EXPECT_NE(out.find("(line 4)"), std::string::npos) << out;
    EXPECT_NE(out.find("tiers[0].tests: required"), std::string::npos) << out;

    // The daemon checks the same file at --check-config and refuses to start with it.
    TestDaemon d(dir.path(), "selection: {rules: bad.yaml}\n");
    rc = run_command({CRCRD_BIN, "--check-config", "--config", d.config_path().string()}, &out);
    EXPECT_EQ(rc, 2);
    EXPECT_NE(out.find("bad.yaml: tiers[0].timeout"), std::string::npos) << out;
    EXPECT_EQ(run_command({CRCRD_BIN, "--config", d.config_path().string()}, &out), 2);

    write_file(dir.path() / "bad.yaml", k_rules);
    EXPECT_EQ(
        run_command({CRCRD_BIN, "--check-config", "--config", d.config_path().string()}, &out), 0)
        << out;
}

TEST(Explain, SighupRefusesABrokenRulesFileAndKeepsTheRunningRules) {
    TempDir dir;
    write_file(dir.path() / "sel.yaml", k_rules);
    TestDaemon d(dir.path(), "selection: {rules: sel.yaml}\n");
    d.start();
    write_file(dir.path() / "sel.yaml", "tiers: []\nrulez: 1\n");
    auto before = d.log().size();
    d.process().signal(SIGHUP);
    ASSERT_TRUE(eventually([&] {
        return d.log().find("keeping the running configuration", before) != std::string::npos;
    }));
    EXPECT_NE(d.log().find("sel.yaml: rulez: unknown key", before), std::string::npos)
        << d.log().substr(before);
    // The rules in force still plan runs.
    nlohmann::json j = nlohmann::json::parse(fixture_text("crcr/direct-pytorch-crcr.json"));
    auto r = d.post_standard(j.dump(), "msg-hup");
    ASSERT_EQ(r->status, 202);
    auto run = nlohmann::json::parse(r->body)["run_id"].get<std::int64_t>();
    ASSERT_TRUE(eventually([&] { return count_jobs(d, {.run = run}) == 2; }));
}

}  // namespace
}  // namespace crcrd
