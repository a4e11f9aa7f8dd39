// The trunk grid's commit subjects through the real daemon (issue 34's review): an upstream
// commit whose message and author are not UTF-8 (Latin-1 bytes, as an old import wrote them)
// shows in GET /api/v1/trunk and /ui/trunk with U+FFFD for those bytes, instead of making the
// whole grid answer 500.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "crcrd/core/crypto.hpp"
#include "support/daemon.hpp"
#include "support/process.hpp"
#include "support/state.hpp"
#include "support/temp_dir.hpp"

namespace crcrd {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

TEST(TrunkGrid, ACommitWhoseSubjectIsNotUtf8ShowsWithReplacementCharacters) {
    TempDir dir;
    const fs::path upstream = dir.path() / "upstream";
    run_test_git({"init", "--quiet", "-b", "main", upstream.string()});
    write_file(upstream / "a.txt", "a\n");
    run_test_git({"-C", upstream.string(), "add", "-A"});
    run_test_git({"-C", upstream.string(), "commit", "--quiet", "--author",
                  "Ada Lovelace <ada@example.org>", "-m", "initial"});
    const std::string c0 = run_test_git({"-C", upstream.string(), "rev-parse", "HEAD"});
    // `git commit` would convert Latin-1 to UTF-8: the object is written as fast-import would.
    const std::string tree = run_test_git({"-C", upstream.string(), "write-tree"});
    write_file(dir.path() / "commit",
               "tree " + tree + "\nparent " + c0 +
                   "\nauthor J\xe9r\xf4me <j@example.org> 1700000000 +0000\n"
                   "committer J\xe9r\xf4me <j@example.org> 1700000000 +0000\n\nfix \xff\xfe "
                   "caf\xe9\n");
    const std::string c1 = run_test_git({"-C", upstream.string(), "hash-object", "-t", "commit",
                                         "-w", (dir.path() / "commit").string()});
    run_test_git({"-C", upstream.string(), "update-ref", "refs/heads/main", c1});
    run_test_git({"clone", "--quiet", "--mirror", upstream.string(),
                  (dir.path() / "state" / "pytorch.git").string()});

    write_file(dir.path() / "selection.yaml",
               "tiers:\n  - {name: import, always: true, tests: [ok_import]}\n");
    TestDaemon d(dir.path(),
                 "selection: {rules: selection.yaml}\n"
                 "upstream: {mirror: state/pytorch.git, remote: " +
                     upstream.string() +
                     "}\n"
                     "bisect: {refs: [main]}\n"
                     "admin: {tokens: [{name: viewer, role: read, sha256: " +
                     crypto::sha256_hex("read-token") + "}]}\n");
    d.start();
    EXPECT_EQ(d.stop(), 0);  // migrated; two finished pushes go in directly
    insert_run(d,
               {"push", c0, "refs/heads/main", "completed", "passed", "2026-12-01T03:00:00.000Z"});
    insert_run(d,
               {"push", c1, "refs/heads/main", "completed", "passed", "2026-12-01T04:00:00.000Z"});
    d.start();

    const http::Headers auth = {{"Authorization", "Bearer read-token"}};
    auto r = d.request("GET", "/api/v1/trunk", auth, "");
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200) << r->body;
    const json grid = json::parse(r->body);
    ASSERT_EQ(grid["rows"].size(), 2u) << r->body;
    const std::string fffd = "\xEF\xBF\xBD";
    EXPECT_EQ(grid["rows"][0]["sha"], c1);
    EXPECT_EQ(grid["rows"][0]["subject"], "fix " + fffd + fffd + " caf" + fffd);
    EXPECT_EQ(grid["rows"][0]["author"], "J" + fffd + "r" + fffd + "me");
    EXPECT_EQ(grid["rows"][1]["subject"], "initial");
    EXPECT_EQ(grid["rows"][1]["author"], "Ada Lovelace");

    auto page = d.request("GET", "/ui/trunk", auth, "");
    ASSERT_TRUE(page);
    EXPECT_EQ(page->status, 200) << page->body;
    EXPECT_NE(page->body.find("fix " + fffd + fffd + " caf" + fffd), std::string::npos);
}

}  // namespace
}  // namespace crcrd
