// The daemon's life: restart, reload, configuration checks, drain, limits on slow clients,
// crcrctl send, and a full disk.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/statvfs.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include <cstring>
#include <fstream>

#include "crcrd/core/files.hpp"

#include "support/certs.hpp"
#include "support/daemon.hpp"
#include "support/state.hpp"

namespace crcrd {
namespace {

using nlohmann::json;

std::string pr_sync() {
    return fixture_text("crcr/pull_request-synchronize.dispatch.json");
}

std::string pr_with_delivery(const std::string& crcr_id, std::size_t pad = 0) {
    json j = json::parse(pr_sync());
    j["client_payload"]["delivery_id"] = crcr_id;
    if (pad) j["client_payload"]["padding"] = std::string(pad, 'x');
    return j.dump();
}

TEST(Lifecycle, RedeliveryAfterRestartIsStillADuplicate) {
    TempDir dir;
    TestDaemon d(dir.path());
    d.start();
    auto first = json::parse(d.post_github(pr_sync(), "r-1")->body);
    EXPECT_EQ(d.stop(), 0);
    d.start();
    auto again = d.post_github(pr_sync(), "r-1");
    ASSERT_TRUE(again);
    EXPECT_EQ(again->status, 200);
    EXPECT_EQ(json::parse(again->body),
              (json{{"status", "duplicate"}, {"run_id", first["run_id"]}}));
    EXPECT_EQ(count_runs(d), 1);
}

TEST(Lifecycle, SighupRotatesSecretsAndRefusesABadConfig) {
    TempDir dir;
    TestDaemon d(dir.path());
    d.start();
    EXPECT_EQ(d.post_github(pr_with_delivery("a"), "h-1", "repository_dispatch", k_test_secret_new)
                  ->status,
              401);

    // Rotation: both secrets active.
    write_file(dir.path() / "secrets" / "new.secret", k_test_secret_new, 0600);
    std::string rotated =
        "ingest:\n  secrets: [{id: current, file: secrets/webhook.secret}, {id: next, file: "
        "secrets/new.secret}]\n";
    std::string cfg = read_file(d.config_path()).value();
    auto replace_ingest = [&](const std::string& ingest_yaml) {
        std::string c = cfg;
        auto b = c.find("ingest:\n");
        auto e = c.find("trust:\n");
        c.replace(b, e - b, ingest_yaml);
        write_file(d.config_path(), c);
    };
    replace_ingest(rotated);
    std::size_t before = d.log().size();
    d.process().signal(SIGHUP);
    ASSERT_TRUE(eventually([&] { return d.log().find("reloaded", before) != std::string::npos; }));
    EXPECT_EQ(d.post_github(pr_with_delivery("b"), "h-2", "repository_dispatch", k_test_secret_new)
                  ->status,
              202);
    EXPECT_EQ(
        d.post_github(pr_with_delivery("c"), "h-3", "repository_dispatch", k_test_secret)->status,
        202);

    // The old secret retired.
    replace_ingest("ingest:\n  secrets: [{id: next, file: secrets/new.secret}]\n");
    before = d.log().size();
    d.process().signal(SIGHUP);
    ASSERT_TRUE(eventually([&] { return d.log().find("reloaded", before) != std::string::npos; }));
    EXPECT_EQ(
        d.post_github(pr_with_delivery("d"), "h-4", "repository_dispatch", k_test_secret)->status,
        401);

    // A broken config is refused; the running one stays.
    replace_ingest(
        "ingest:\n  secrets: [{id: gone, file: secrets/missing.secret}]\n  bogus_key: 1\n");
    before = d.log().size();
    d.process().signal(SIGHUP);
    ASSERT_TRUE(eventually([&] {
        return d.log().find("keeping the running configuration", before) != std::string::npos;
    }));
    std::string refused = d.log().substr(before);
    EXPECT_NE(refused.find("ingest.bogus_key: unknown key"), std::string::npos) << refused;
    EXPECT_EQ(d.post_github(pr_with_delivery("e"), "h-5", "repository_dispatch", k_test_secret_new)
                  ->status,
              202);
    EXPECT_TRUE(d.process().running());
    // Secrets never reach the log.
    EXPECT_EQ(d.log().find(k_test_secret_new), std::string::npos);
    EXPECT_EQ(d.log().find(k_test_secret), std::string::npos);
}

TEST(Lifecycle, CheckConfigAndVersion) {
    TempDir dir;
    TestDaemon d(dir.path());
    std::string out;
    EXPECT_EQ(
        run_command({CRCRD_BIN, "--check-config", "--config", d.config_path().string()}, &out), 0)
        << out;
    EXPECT_EQ(run_command({CRCRD_BIN, "--version"}, &out), 0);
    EXPECT_NE(out.find("crcrd 0."), std::string::npos);

    write_file(
        dir.path() / "bad.yaml",
        "server: {listen: \"0.0.0.0:8443\"}\nstorage: {}\ningest: {secrets: [{id: a, file: "
        "/nonexistent/s}]}\n"
        "trust: {downstream_repo: a/b, fork_policy: sometimes}\nexecution: {stall_timeout: 5}\n");
    EXPECT_EQ(
        run_command({CRCRD_BIN, "--check-config", "--config", (dir.path() / "bad.yaml").string()},
                    &out),
        2);
    for (const char* want : {"server.tls: required", "storage.path: required", "trust.fork_policy",
                             "execution.stall_timeout"}) {
        EXPECT_NE(out.find(want), std::string::npos) << want << " in:\n" << out;
    }
    // Secret files are checked too.
    write_file(dir.path() / "nosecret.yaml",
               "server: {listen: \"127.0.0.1:0\"}\nstorage: {path: x.db}\ningest: {secrets: [{id: "
               "a, file: /nonexistent/s}]}\n"
               "trust: {downstream_repo: a/b, fork_policy: run}\n");
    EXPECT_EQ(run_command({CRCRD_BIN, "--check-config", "--config",
                           (dir.path() / "nosecret.yaml").string()},
                          &out),
              2);
    EXPECT_NE(out.find("ingest.secrets[0].file: cannot open /nonexistent/s"), std::string::npos)
        << out;
    // So are the reporters' credentials: a missing token file, a key that is not an RSA key.
    write_file(dir.path() / "secrets" / "not-a-key.pem", "-----BEGIN NOTHING-----\n", 0600);
    d.write_config(
        "report:\n"
        "  github: {repo: pytorch/pytorch, app_id: 1, installation_id: 2, private_key_file: "
        "secrets/not-a-key.pem}\n"
        "  crcr_callback: {url: \"https://relay.example/cb\", token_file: "
        "secrets/no-relay.token}\n");
    EXPECT_EQ(
        run_command({CRCRD_BIN, "--check-config", "--config", d.config_path().string()}, &out), 2);
    EXPECT_NE(
        out.find("report.github.private_key_file: private_key_file is not a PEM RSA private key"),
        std::string::npos)
        << out;
    EXPECT_NE(out.find("report.crcr_callback.token_file: cannot open"), std::string::npos) << out;
    d.write_config("");
    // Starting with a broken config exits 2 and serves nothing.
    EXPECT_EQ(run_command({CRCRD_BIN, "--config", (dir.path() / "bad.yaml").string()}, &out), 2);
}

TEST(Lifecycle, CrcrctlSendSignsAndPosts) {
    TempDir dir;
    TestDaemon d(dir.path());
    d.start();
    std::string out;
    auto fixture = std::string(CRCRD_FIXTURES_DIR) + "/crcr/pull_request-synchronize.dispatch.json";
    int rc = run_command({CRCRCTL_BIN, "send", "--scheme", "github", "--secret-file",
                          (dir.path() / "secrets" / "webhook.secret").string(), "--url", d.url(),
                          "--cacert", test_certs().ca.string(), fixture},
                         &out);
    EXPECT_EQ(rc, 0) << out;
    EXPECT_NE(out.find("HTTP 202"), std::string::npos) << out;
    EXPECT_NE(out.find("\"status\":\"queued\""), std::string::npos) << out;

    auto direct = std::string(CRCRD_FIXTURES_DIR) + "/crcr/direct-pytorch-crcr.json";
    rc = run_command({CRCRCTL_BIN, "send", "--scheme", "standard-webhooks", "--secret-file",
                      (dir.path() / "secrets" / "relay.whsec").string(), "--url", d.url(),
                      "--cacert", test_certs().ca.string(), direct},
                     &out);
    EXPECT_EQ(rc, 0) << out;
    EXPECT_NE(out.find("HTTP 202"), std::string::npos) << out;

    // Without the CA the server's certificate is not trusted: exit 3, a TLS failure.
    rc = run_command(
        {CRCRCTL_BIN, "send", "--scheme", "github", "--secret-file",
         (dir.path() / "secrets" / "webhook.secret").string(), "--url", d.url(), fixture},
        &out);
    EXPECT_EQ(rc, 3);
    EXPECT_NE(out.find("TLS handshake"), std::string::npos) << out;
    EXPECT_EQ(count_runs(d), 2);
}

/// A raw TCP connection to the plain-HTTP loopback listener.
int connect_to(std::uint16_t port) {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) return -1;
    timeval tv{30, 0};  // a bound for the test itself, far above the daemon's deadline
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    return fd;
}

/// Reads until the peer closes; returns what was read, or nullopt if it never closed.
std::optional<std::string> read_until_closed(int fd) {
    std::string out;
    char buf[4096];
    for (;;) {
        ssize_t n = ::recv(fd, buf, sizeof buf, 0);
        if (n == 0) return out;
        if (n < 0)
            return errno == EAGAIN || errno == EWOULDBLOCK ? std::nullopt
                                                           : std::optional<std::string>(out);
        out.append(buf, static_cast<std::size_t>(n));
    }
}

TEST(Lifecycle, PlainHttpOnLoopbackAndSlowClientsAreCutOff) {
    TempDir dir;
    TestDaemon d(dir.path(), "", /*tls=*/false);
    d.write_config("", "  header_timeout: 1s\n  idle_timeout: 1s\n");
    d.start();
    EXPECT_EQ(d.url().rfind("http://", 0), 0u);
    EXPECT_EQ(d.post_github(pr_sync(), "plain-1")->status, 202);

    // Headers that never finish: the connection is closed by the header deadline.
    int slow = connect_to(d.port());
    ASSERT_GE(slow, 0);
    std::string partial = "POST /webhook HTTP/1.1\r\nHost: x\r\nX-Slow: ";
    ASSERT_EQ(::send(slow, partial.data(), partial.size(), 0),
              static_cast<ssize_t>(partial.size()));
    EXPECT_TRUE(read_until_closed(slow).has_value());
    ::close(slow);

    // An idle keep-alive connection is closed too.
    int idle = connect_to(d.port());
    ASSERT_GE(idle, 0);
    EXPECT_TRUE(read_until_closed(idle).has_value());
    ::close(idle);

    // Oversized headers are refused (431 Request Header Fields Too Large).
    int big = connect_to(d.port());
    std::string huge =
        "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + std::string(64 * 1024, 'a') + "\r\n\r\n";
    ::send(big, huge.data(), huge.size(), MSG_NOSIGNAL);
    auto answer = read_until_closed(big);
    ::close(big);
    ASSERT_TRUE(answer);
    EXPECT_EQ(answer->rfind("HTTP/1.1 431", 0), 0u) << *answer;  // docs/ingest.md, "Answers"
}

TEST(Lifecycle, SigtermDrainsAndExitsCleanly) {
    TempDir dir;
    TestDaemon d(dir.path(), "", false);
    d.start();
    // An idle keep-alive connection must not hold the shutdown up.
    int idle = connect_to(d.port());
    ASSERT_GE(idle, 0);
    std::string req = "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n";
    ::send(idle, req.data(), req.size(), 0);
    char buf[512];
    ASSERT_GT(::recv(idle, buf, sizeof buf, 0), 0);
    EXPECT_EQ(d.stop(), 0);
    EXPECT_TRUE(read_until_closed(idle).has_value());
    ::close(idle);
    EXPECT_NE(d.log().find("draining"), std::string::npos);
    EXPECT_NE(d.log().find("stopped"), std::string::npos);
}

TEST(Lifecycle, FullDiskAnswers503AndLosesNothingAccepted) {
    TempDir dir;
    auto state = dir.path() / "state";
    std::filesystem::create_directories(state);
    if (::mount("tmpfs", state.c_str(), "tmpfs", 0, "size=4m") != 0) {
        GTEST_SKIP() << "cannot mount a small tmpfs here (needs root): " << std::strerror(errno);
    }
    struct Unmount {
        std::filesystem::path p;
        ~Unmount() { ::umount2(p.c_str(), MNT_DETACH); }
    } unmount{state};
    TestDaemon d(dir.path());
    d.start();
    // Leave about 400 KiB free on the database's file system.
    struct statvfs vfs {};
    ASSERT_EQ(::statvfs(state.c_str(), &vfs), 0);
    auto free_bytes = static_cast<std::size_t>(vfs.f_bavail) * vfs.f_frsize;
    ASSERT_GT(free_bytes, 600u * 1024);
    write_file(state / "filler", std::string(free_bytes - 400 * 1024, 'f'));

    std::vector<std::string> accepted;
    std::string refused_id;
    for (int i = 0; i < 200 && refused_id.empty(); ++i) {
        std::string id = "disk-" + std::to_string(i);
        auto r = d.post_github(pr_with_delivery(id, 32 * 1024), id);
        ASSERT_TRUE(r);
        if (r->status == 202) {
            accepted.push_back(id);
        } else {
            EXPECT_EQ(r->status, 503) << r->body;
            EXPECT_EQ(json::parse(r->body), (json{{"error", "unavailable"}}));
            EXPECT_TRUE(r->header("Retry-After").has_value());
            refused_id = id;
        }
    }
    ASSERT_FALSE(refused_id.empty()) << "the disk never filled";
    ASSERT_FALSE(accepted.empty());
    EXPECT_TRUE(d.process().running());
    // Every acknowledged delivery is stored once; the refused one left nothing behind.
    EXPECT_EQ(count_runs(d), static_cast<std::int64_t>(accepted.size()));
    EXPECT_EQ(count_runs(d, {.delivery_id = refused_id}), 0);

    // Space comes back: the sender's retry of the refused delivery is accepted.
    std::filesystem::remove(state / "filler");
    auto retry = d.post_github(pr_with_delivery(refused_id, 32 * 1024), refused_id);
    ASSERT_TRUE(retry);
    EXPECT_EQ(retry->status, 202) << retry->body;
    EXPECT_EQ(count_runs(d), static_cast<std::int64_t>(accepted.size() + 1));
    EXPECT_EQ(d.stop(), 0);
}

}  // namespace
}  // namespace crcrd
