// The HTTPS client keeps a connection to an origin between requests (the GitHub API, the
// relay), a kept connection the server has closed meanwhile costs nothing but a new one, and a
// new connection to an origin resumes its last TLS session.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include "crcrd/http/client.hpp"
#include "support/certs.hpp"
#include "support/fake_github.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"

namespace crcrd::http {
namespace {

Response ok(const Request&) {
    return Response::json(200, nlohmann::json{{"ok", true}});
}

/// An answer after which the server closes the connection: every request shakes hands anew.
Response ok_then_close(const Request& q) {
    auto r = ok(q);
    r.close = true;
    return r;
}

/// The client port of a request, from the server's "address:port".
std::string port_of(const Request& r) {
    return r.remote.substr(r.remote.rfind(':') + 1);
}

/// Whether the TCP socket from local port `port` to `server_url`'s port is in CLOSE_WAIT (its
/// peer closed it). Both ports: a kernel may give one local port to sockets to different peers.
bool close_wait(const std::string& port, const std::string& server_url) {
    auto hex = [](const std::string& p) {
        char out[8];
        std::snprintf(out, sizeof out, "%04X", static_cast<unsigned>(std::stoul(p)));
        return std::string("0100007F:") + out;
    };
    const std::string local = hex(port), remote = hex(server_url.substr(server_url.rfind(':') + 1));
    std::ifstream in("/proc/net/tcp");
    std::string line;
    while (std::getline(in, line)) {
        // "  sl  local_address rem_address   st ...": 0100007F:PORT (hex), st 08 is CLOSE_WAIT.
        std::istringstream fields(line);
        std::string sl, l, r, st;
        fields >> sl >> l >> r >> st;
        if (l == local && r == remote && st == "08") return true;
    }
    return false;
}

TEST(ClientPool, KeepsTheConnectionBetweenRequestsToOneOrigin) {
    FakeGithub gh(ok);
    ClientOptions o;
    o.ca_file = test_certs().ca;
    for (int i = 0; i < 3; ++i) {
        auto r = send("POST", gh.url() + "/repos/a/b/statuses/" + std::to_string(i), {}, "{}", o);
        ASSERT_TRUE(r) << r.error().message;
        EXPECT_EQ(r->status, 200);
        EXPECT_FALSE(r->resent);
    }
    auto seen = gh.requests();
    ASSERT_EQ(seen.size(), 3u);
    std::set<std::string> ports;
    for (const auto& q : seen) ports.insert(port_of(q));
    EXPECT_EQ(ports.size(), 1u) << "three requests took " << ports.size() << " connections";
}

TEST(ClientPool, AKeptConnectionTheServerClosedIsReplacedAndTheRequestSent) {
    FakeGithub gh(ok, 16ULL << 20, std::chrono::milliseconds(100));
    ClientOptions o;
    o.ca_file = test_certs().ca;
    ASSERT_TRUE(send("GET", gh.url() + "/first", {}, "", o));
    const auto first = port_of(gh.requests().at(0));
    // The server's idle timeout closes the kept connection; the client has not noticed.
    ASSERT_TRUE(eventually([&] { return close_wait(first, gh.url()); })) << "port " << first;
    auto r = send("GET", gh.url() + "/second", {}, "", o);
    ASSERT_TRUE(r) << r.error().message;
    EXPECT_EQ(r->status, 200);
    EXPECT_TRUE(r->resent) << "the first copy went on the closed connection";
    auto seen = gh.requests();
    ASSERT_EQ(seen.size(), 2u);
    EXPECT_EQ(seen[1].target, "/second");
    EXPECT_NE(port_of(seen[1]), first);
}

TEST(ClientPool, ANewConnectionToAnOriginResumesItsLastTlsSession) {
    FakeGithub gh(ok_then_close);
    ClientOptions o;
    o.ca_file = test_certs().ca;
    std::vector<bool> resumed;
    for (int i = 0; i < 3; ++i) {
        auto r = send("GET", gh.url() + "/" + std::to_string(i), {}, "", o);
        ASSERT_TRUE(r) << r.error().message;
        EXPECT_EQ(r->status, 200);
        resumed.push_back(r->resumed);
    }
    EXPECT_EQ(resumed, (std::vector<bool>{false, true, true}));
    std::set<std::string> ports;
    for (const auto& q : gh.requests()) ports.insert(port_of(q));
    EXPECT_EQ(ports.size(), 3u) << "each request on its own connection";
}

TEST(ClientPool, ASessionIsOnlyOfferedToTheOriginAndCaFileItWasMadeWith) {
    FakeGithub gh(ok_then_close);
    ClientOptions o;
    o.ca_file = test_certs().ca;
    ASSERT_TRUE(send("GET", gh.url() + "/first", {}, "", o));
    // The same CA under another name: another trust decision, so a full handshake.
    TempDir dir;
    ClientOptions other = o;
    other.ca_file = dir.path() / "ca-copy.pem";
    std::filesystem::copy_file(*o.ca_file, *other.ca_file);
    auto r = send("GET", gh.url() + "/other-ca", {}, "", other);
    ASSERT_TRUE(r) << r.error().message;
    EXPECT_FALSE(r->resumed);
    r = send("GET", gh.url() + "/same-ca", {}, "", o);
    ASSERT_TRUE(r) << r.error().message;
    EXPECT_TRUE(r->resumed);
}

TEST(ClientPool, ThreadsSharingAnOriginResumeItsSessionsTogether) {
    FakeGithub gh(ok_then_close);
    ClientOptions o;
    o.ca_file = test_certs().ca;
    ASSERT_TRUE(send("GET", gh.url() + "/first", {}, "", o));
    std::atomic<int> failed{0}, resumed{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
        threads.emplace_back([&] {
            for (int i = 0; i < 5; ++i) {
                auto r = send("GET", gh.url() + "/parallel", {}, "", o);
                if (!r || r->status != 200) ++failed;
                if (r && r->resumed) ++resumed;
            }
        });
    }
    for (auto& th : threads) th.join();
    EXPECT_EQ(failed.load(), 0);
    EXPECT_EQ(resumed.load(), 20);
}

}  // namespace
}  // namespace crcrd::http
