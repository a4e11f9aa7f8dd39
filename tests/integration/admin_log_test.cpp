// Logs under systemd (docs/operations.md, "Logs"), through the real daemon: with stderr as the
// journal stream every line carries its journald priority, and a failed admin authentication is
// one warn line with the client address and the route, never the token; a flood of them is one
// line, not a flood of lines.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <sstream>

#include "crcrd/core/crypto.hpp"
#include "support/daemon.hpp"

namespace crcrd {
namespace {

constexpr const char* k_wrong_token = "wrong-token-7f3c9e1d2b";

class AdminLogTest : public ::testing::Test {
  protected:
    /// Starts the daemon with $JOURNAL_STREAM naming its stderr (the log file), as systemd
    /// sets it for a service whose output goes to journald.
    void start() {
        daemon = std::make_unique<TestDaemon>(
            dir.path(), "admin:\n  tokens:\n    - {name: viewer, role: read, sha256: " +
                            crypto::sha256_hex("read-token") +
                            "}\n    - {name: ops, role: admin, sha256: " +
                            crypto::sha256_hex("ops-token") + "}\n");
        write_file(daemon->log_path(), "");  // the daemon's stderr appends to this very file
        struct stat st {};
        ASSERT_EQ(::stat(daemon->log_path().c_str(), &st), 0);
        daemon->start(
            {"JOURNAL_STREAM=" + std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino)});
    }
    /// The log's lines that contain `text`.
    std::vector<std::string> lines_with(const std::string& text) {
        std::vector<std::string> found;
        std::istringstream in(daemon->log());
        for (std::string l; std::getline(in, l);)
            if (l.find(text) != std::string::npos) found.push_back(l);
        return found;
    }

    TempDir dir;
    std::unique_ptr<TestDaemon> daemon;
};

TEST_F(AdminLogTest, AWrongTokenIsLoggedWithTheAddressAndNeverTheTokenAndAFloodIsOneLine) {
    start();
    auto r = daemon->request("GET", "/api/v1/runs?state=queued",
                             {{"Authorization", std::string("Bearer ") + k_wrong_token}}, "");
    ASSERT_EQ(r->status, 401);
    ASSERT_TRUE(eventually([&] { return !lines_with("admin authentication failed").empty(); }))
        << daemon->log();
    auto failed = lines_with("admin authentication failed");
    ASSERT_EQ(failed.size(), 1u);
    EXPECT_EQ(failed[0].rfind("<4>", 0), 0u) << failed[0];  // journald files it as a warning
    EXPECT_NE(failed[0].find("client=127.0.0.1 method=GET path=/api/v1/runs status=401"),
              std::string::npos)
        << failed[0];
    EXPECT_NE(failed[0].find("reason=\"the bearer token matches no admin token\""),
              std::string::npos)
        << failed[0];

    // The same client keeps trying (wrong tokens, none, another scheme, /metrics): counted, not
    // logged.
    for (int i = 0; i < 100; ++i) {
        const std::string token = k_wrong_token + std::to_string(i);
        ASSERT_EQ(
            daemon->request("GET", "/api/v1/deliveries", {{"Authorization", "Bearer " + token}}, "")
                ->status,
            401);
    }
    EXPECT_EQ(daemon->request("GET", "/metrics", {}, "")->status, 401);
    EXPECT_EQ(daemon
                  ->request("GET", "/api/v1/runs",
                            {{"Authorization", std::string("Basic ") + k_wrong_token}}, "")
                  ->status,
              401);
    EXPECT_EQ(daemon->request("GET", "/api/v1/runs", {{"Authorization", "Bearer read-token"}}, "")
                  ->status,
              200);
    EXPECT_EQ(lines_with("admin authentication failed").size(), 1u) << daemon->log();

    const auto log = daemon->log();
    EXPECT_EQ(log.find(k_wrong_token), std::string::npos) << "a token reached the log:\n" << log;
    // Every line has its priority: info lines "<6>", nothing without a prefix.
    EXPECT_FALSE(lines_with("<6>").empty());
    std::istringstream in(log);
    for (std::string l; std::getline(in, l);) EXPECT_EQ(l.front(), '<') << l;
}

TEST_F(AdminLogTest, AReadTokenOnAnAdminRouteIsLoggedAsForbiddenWithItsNameOnly) {
    start();
    auto r = daemon->request("POST", "/api/v1/runs/1/cancel",
                             {{"Authorization", "Bearer read-token"}}, "");
    ASSERT_EQ(r->status, 403);
    ASSERT_TRUE(eventually([&] { return !lines_with("admin authentication failed").empty(); }))
        << daemon->log();
    const auto line = lines_with("admin authentication failed").at(0);
    EXPECT_EQ(line.rfind("<4>", 0), 0u) << line;
    EXPECT_NE(line.find("client=127.0.0.1 method=POST path=/api/v1/runs/1/cancel status=403"),
              std::string::npos)
        << line;
    EXPECT_NE(line.find("token viewer has the read role"), std::string::npos) << line;
    EXPECT_EQ(daemon->log().find("read-token"), std::string::npos);
}

}  // namespace
}  // namespace crcrd
