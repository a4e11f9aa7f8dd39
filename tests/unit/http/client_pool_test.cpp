// The HTTPS client keeps a connection to an origin between requests (the GitHub API, the
// relay), and a kept connection the server has closed meanwhile costs nothing but a new one.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <fstream>
#include <set>

#include "crcrd/http/client.hpp"
#include "support/certs.hpp"
#include "support/fake_github.hpp"
#include "support/process.hpp"

namespace crcrd::http {
namespace {

Response ok(const Request&) {
    return Response::json(200, nlohmann::json{{"ok", true}});
}

/// The client port of a request, from the server's "address:port".
std::string port_of(const Request& r) {
    return r.remote.substr(r.remote.rfind(':') + 1);
}

/// Whether the local TCP socket on `port` is in CLOSE_WAIT (its peer closed it).
bool close_wait(const std::string& port) {
    char hex[8];
    std::snprintf(hex, sizeof hex, "%04X", static_cast<unsigned>(std::stoul(port)));
    std::ifstream in("/proc/net/tcp");
    std::string line;
    while (std::getline(in, line)) {
        // "  sl  local_address rem_address   st ...": local is 0100007F:PORT, st 08 is CLOSE_WAIT.
        if (line.find(std::string(":") + hex + " ") != std::string::npos &&
            line.find(" 08 ") != std::string::npos)
            return true;
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
    ASSERT_TRUE(eventually([&] { return close_wait(first); })) << "port " << first;
    auto r = send("GET", gh.url() + "/second", {}, "", o);
    ASSERT_TRUE(r) << r.error().message;
    EXPECT_EQ(r->status, 200);
    auto seen = gh.requests();
    ASSERT_EQ(seen.size(), 2u);
    EXPECT_EQ(seen[1].target, "/second");
    EXPECT_NE(port_of(seen[1]), first);
}

}  // namespace
}  // namespace crcrd::http
