// Hostile clients against the real daemon (docs/ingest.md, "Hostile clients"): oversized fields
// and trailers, chunk extensions, pipelined and malformed requests, idle handshakes, too many
// connections from one address, TLS 1.2 suites without AEAD, and a certificate replaced on
// SIGHUP. Each must be answered or closed, and the daemon must go on serving.
#include <gtest/gtest.h>

#include <signal.h>
#include <unistd.h>
#include <regex>

#include <nlohmann/json.hpp>

#include "support/certs.hpp"
#include "support/daemon.hpp"
#include "support/process.hpp"
#include "support/raw_client.hpp"
#include "support/state.hpp"

namespace crcrd {
namespace {

class HostileHttpTest : public ::testing::Test {
  protected:
    void start(const std::string& server_yaml = "") {
        daemon = std::make_unique<TestDaemon>(dir.path());
        if (tls_files) daemon->set_tls_files(tls_files->first, tls_files->second);
        daemon->write_config("", server_yaml);
        daemon->start();
    }
    RawOptions raw() const {
        RawOptions o;
        o.ca_file = test_certs().ca;
        return o;
    }
    std::unique_ptr<RawConnection> connect(RawOptions o) {
        std::string err;
        auto c = RawConnection::open(daemon->port(), o, &err);
        EXPECT_TRUE(c) << err;
        return c;
    }
    std::unique_ptr<RawConnection> connect() { return connect(raw()); }
    /// Sends `bytes` on a new connection and returns the status of the answer (0: none).
    int exchange(const std::string& bytes) {
        auto c = connect();
        if (!c || !c->send(bytes)) return 0;
        return status_of(c->read_response());
    }
    void expect_alive() {
        auto r = daemon->request("GET", "/healthz", {}, "");
        ASSERT_TRUE(r) << r.error().message << "\n" << daemon->log();
        EXPECT_EQ(r->status, 200);
        EXPECT_TRUE(daemon->process().running());
    }

    TempDir dir;
    std::unique_ptr<TestDaemon> daemon;
    std::optional<std::pair<std::filesystem::path, std::filesystem::path>> tls_files;
};

const std::string k_post_head =
    "POST /webhook HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nX-GitHub-Event: "
    "ping\r\n"
    "X-GitHub-Delivery: hostile-1\r\n";

TEST_F(HostileHttpTest, AChunkedTrailerOver64KiBIsAnswered431NotACrash) {
    start();
    // The request that used to abort the daemon: one chunk, then a 100,000-byte trailer field.
    std::string req = k_post_head + "Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\nX-T: " +
                      std::string(100'000, 't') + "\r\n\r\n";
    EXPECT_EQ(exchange(req), 431);
    expect_alive();
    // A trailer within 64 KiB but over max_header_bytes (16 KiB) is refused the same way.
    req = k_post_head +
          "Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\nX-T: " + std::string(20'000, 't') +
          "\r\n\r\n";
    EXPECT_EQ(exchange(req), 431);
    // The refusals are in the delivery log, bodies not stored.
    EXPECT_EQ(count_deliveries(*daemon, {.http_status = 431, .has_body = false}), 2);
    expect_alive();
}

TEST_F(HostileHttpTest, OversizedRequestLineHeaderFieldAndChunkExtensionsAre431) {
    start();
    EXPECT_EQ(exchange("GET /" + std::string(20'000, 'a') + " HTTP/1.1\r\nHost: x\r\n\r\n"), 431);
    EXPECT_EQ(exchange(k_post_head + "X-Big: " + std::string(70'000, 'b') +
                       "\r\nContent-Length: 2\r\n\r\n{}"),
              431);
    EXPECT_EQ(exchange(k_post_head + "Transfer-Encoding: chunked\r\n\r\n5;" +
                       std::string(100'000, 'e') + "\r\nhello\r\n0\r\n\r\n"),
              431);
    // Many small extensions add up too.
    std::string chunks;
    for (int i = 0; i < 2000; ++i) chunks += "1;ext=" + std::string(10, 'x') + "\r\na\r\n";
    EXPECT_EQ(exchange(k_post_head + "Transfer-Encoding: chunked\r\n\r\n" + chunks + "0\r\n\r\n"),
              431);
    expect_alive();
}

TEST_F(HostileHttpTest, PipelinedAndMalformedRequestsAreAnsweredOrClosed) {
    start();
    auto c = connect();
    ASSERT_TRUE(c);
    // Two requests in one write: both answered, in order.
    ASSERT_TRUE(
        c->send("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\nGET /nope HTTP/1.1\r\nHost: x\r\n\r\n"));
    EXPECT_EQ(status_of(c->read_response()), 200);
    EXPECT_EQ(status_of(c->read_response()), 404);
    // Then garbage: 400 and the connection is closed.
    ASSERT_TRUE(c->send("\x01\x02 not http at all\r\n\r\n"));
    EXPECT_EQ(status_of(c->read_response()), 400);
    EXPECT_TRUE(c->wait_closed());
    for (const std::string& bad :
         {std::string(
              "POST /webhook HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!"),
          std::string("POST /webhook HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"),
          std::string("GET / HTTP/9.9\r\n\r\n")}) {
        EXPECT_EQ(exchange(bad), 400) << bad;
    }
    expect_alive();
}

TEST_F(HostileHttpTest, AnUnknownTransferCodingIs501AndTheConnectionCloses) {
    start();
    // The body after the header cannot be framed, so the connection closes after the answer:
    // the request pipelined behind it is never read as one.
    const std::string chunked_body = "\r\n\r\n5\r\nhello\r\n0\r\n\r\n";
    auto answer = [&](const std::string& coding) {
        auto c = connect();
        EXPECT_TRUE(c);
        if (!c || !c->send("GET /healthz HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: " + coding +
                           chunked_body + "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")) {
            return 0;
        }
        const int status = status_of(c->read_response());
        EXPECT_TRUE(c->wait_closed()) << coding;
        return status;
    };
    // A coding the server does not implement, before chunked (RFC 9112 6.1: 501).
    for (const std::string coding :
         {"gzip, chunked", "deflate,chunked", "x-custom , chunked", "gzip, identity, chunked"}) {
        EXPECT_EQ(answer(coding), 501) << coding;
    }
    // chunked not last, or not there, or twice: the body's length is unknown (6.3: 400).
    for (const std::string coding :
         {"xchunked", "identity", "chunked, gzip", "chunked, chunked", ""}) {
        EXPECT_EQ(answer(coding), 400) << coding;
    }
    // chunked alone, in any case, is read as before.
    EXPECT_EQ(
        exchange("GET /healthz HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: Chunked" + chunked_body),
        200);
    expect_alive();
}

TEST_F(HostileHttpTest, AHandshakeThatNeverHappensIsClosedAfterHandshakeTimeout) {
    start("  handshake_timeout: 1s\n");
    RawOptions o = raw();
    o.handshake = false;  // connect, then send nothing
    o.timeout = std::chrono::seconds(15);
    auto c = connect(o);
    ASSERT_TRUE(c);
    EXPECT_TRUE(c->wait_closed())
        << "the daemon kept a silent connection past its handshake_timeout";
    expect_alive();
}

TEST_F(HostileHttpTest, OneAddressCannotHoldEveryConnection) {
    start("  max_connections_per_ip: 4\n  idle_timeout: 60s\n");
    std::vector<std::unique_ptr<RawConnection>> held;
    for (int i = 0; i < 4; ++i) {
        held.push_back(connect());
        ASSERT_TRUE(held.back());
        // Each one is really open and served.
        ASSERT_TRUE(held.back()->send("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"));
        ASSERT_EQ(status_of(held.back()->read_response()), 200);
    }
    // The fifth from the same address is closed at once (no handshake completes).
    std::string err;
    auto fifth = RawConnection::open(daemon->port(), raw(), &err);
    EXPECT_FALSE(fifth) << "a fifth connection from 127.0.0.1 was accepted";
    EXPECT_TRUE(eventually(
        [&] { return daemon->log().find("max_connections_per_ip") != std::string::npos; }));
    // One closed: a new one is served again.
    held.pop_back();
    EXPECT_TRUE(eventually([&] {
        auto c = RawConnection::open(daemon->port(), raw());
        return c && c->send("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n") &&
               status_of(c->read_response()) == 200;
    }));
}

TEST_F(HostileHttpTest, Tls12OffersOnlyAeadSuites) {
    start();
    RawOptions cbc = raw();
    cbc.tls12_only = true;
    cbc.cipher_list =
        "ECDHE-ECDSA-AES128-SHA:ECDHE-ECDSA-AES256-SHA:AES128-SHA:AES256-SHA:ECDHE-ECDSA-AES128-"
        "SHA256";
    std::string err;
    EXPECT_FALSE(RawConnection::open(daemon->port(), cbc, &err)) << "a CBC suite was negotiated";
    RawOptions gcm = raw();
    gcm.tls12_only = true;
    gcm.cipher_list = "ECDHE-ECDSA-AES128-GCM-SHA256";
    auto c = RawConnection::open(daemon->port(), gcm, &err);
    ASSERT_TRUE(c) << err;
    EXPECT_EQ(c->cipher(), "ECDHE-ECDSA-AES128-GCM-SHA256");
    expect_alive();
}

TEST_F(HostileHttpTest, SighupReloadsTheCertificate) {
    auto first = issue_server_cert(dir.path() / "tls", "server", "crcrd first");
    auto cert = dir.path() / "tls" / "live.crt", key = dir.path() / "tls" / "live.key";
    std::filesystem::copy_file(first.first, cert);
    std::filesystem::copy_file(first.second, key);
    tls_files = std::make_pair(cert, key);
    start();
    auto before = connect();
    ASSERT_TRUE(before);
    EXPECT_NE(before->peer_subject().find("crcrd first"), std::string::npos)
        << before->peer_subject();

    // A key that does not match the certificate is refused; the running one stays.
    auto second = issue_server_cert(dir.path() / "tls", "next", "crcrd second");
    std::filesystem::copy_file(second.first, cert,
                               std::filesystem::copy_options::overwrite_existing);
    daemon->process().signal(SIGHUP);
    EXPECT_TRUE(eventually([&] {
        return daemon->log().find("reload refused: server.tls.key") != std::string::npos;
    })) << daemon->log();
    EXPECT_NE(connect()->peer_subject().find("crcrd first"), std::string::npos);

    std::filesystem::copy_file(second.second, key,
                               std::filesystem::copy_options::overwrite_existing);
    daemon->process().signal(SIGHUP);
    EXPECT_TRUE(eventually([&] {
        auto c = RawConnection::open(daemon->port(), raw());
        return c && c->peer_subject().find("crcrd second") != std::string::npos;
    })) << daemon->log();
    // The connection opened before the reload still works.
    ASSERT_TRUE(before->send("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"));
    EXPECT_EQ(status_of(before->read_response()), 200);
}

TEST_F(HostileHttpTest, AnUnauthenticatedFloodIsOneLogLineAndItsRowsArePruned) {
    daemon = std::make_unique<TestDaemon>(dir.path());
    daemon->write_config("", "", ", rejected_retention: 2s, prune_interval: 1s, retention: 0s");
    daemon->start();
    // An accepted delivery first: its row stays.
    auto ok =
        daemon->post_github(fixture_text("crcr/pull_request-synchronize.dispatch.json"), "kept-1");
    ASSERT_EQ(ok->status, 202);
    for (int i = 0; i < 200; ++i) {
        auto r = daemon->post_github("{}", "flood-" + std::to_string(i), "repository_dispatch",
                                     "wrong-secret");
        ASSERT_EQ(r->status, 401);
    }
    // One log line, not two hundred.
    const auto log = daemon->log();
    std::size_t lines = 0;
    for (auto at = log.find("verdict=rejected"); at != std::string::npos;
         at = log.find("verdict=rejected", at + 1))
        ++lines;
    EXPECT_EQ(lines, 1u) << log;
    // Every request left its row (docs/ingest.md, "The delivery log"), and rejected rows go after
    // storage.rejected_retention: the pruner's lines count all 200 (some may go while the flood
    // still runs, on a slow machine or the sanitizer build); the accepted one stays.
    const std::regex pruned_line("(\\d+) rows of rejected requests pruned");
    auto pruned = [&] {
        const auto text = daemon->log();
        std::int64_t n = 0;
        for (std::sregex_iterator m(text.begin(), text.end(), pruned_line), end; m != end; ++m)
            n += std::stoll((*m)[1]);
        return n;
    };
    EXPECT_TRUE(eventually([&] { return pruned() == 200; }, std::chrono::seconds(20)))
        << pruned() << "\n"
        << daemon->log();
    EXPECT_EQ(count_deliveries(*daemon, {.verdict = "rejected"}), 0);
    EXPECT_EQ(count_deliveries(*daemon, {.delivery_id = "kept-1"}), 1);
}

TEST_F(HostileHttpTest, ReadyzWritesNothingAndTellsAFullDisk) {
    start();
    const auto before = count_meta(*daemon);
    for (int i = 0; i < 5; ++i) EXPECT_EQ(daemon->request("GET", "/readyz", {}, "")->status, 200);
    EXPECT_EQ(count_meta(*daemon), before);
    daemon->stop();

    if (::geteuid() != 0)
        GTEST_SKIP() << "a small file system for the full-disk case needs root (mount)";
    // The database on a 4 MiB file system, then the disk filled by something else.
    const auto state = dir.path() / "state";
    std::filesystem::remove_all(state);
    std::filesystem::create_directories(state);
    std::string out;
    if (run_command({"mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", state.string()}, &out) !=
        0) {
        GTEST_SKIP() << "cannot mount a tmpfs here: " << out;
    }
    struct Unmount {
        std::filesystem::path p;
        ~Unmount() { run_command({"umount", "-l", p.string()}); }
    } unmount{state};
    daemon->start();
    ASSERT_EQ(daemon->request("GET", "/readyz", {}, "")->status, 200);
    run_command({"dd", "if=/dev/zero", "of=" + (state / "filler").string(), "bs=64k", "count=1000"},
                &out);
    auto body = fixture_text("crcr/pull_request-synchronize.dispatch.json");
    // Padding that does not compress, so the write needs new pages on the full disk.
    std::string noise;
    std::uint64_t x = 88172645463325252ULL;
    for (int i = 0; i < 200'000; ++i) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        noise += "0123456789abcdefghijklmnopqrstuvwxyz"[x % 36];
    }
    const auto last = body.find_last_of('}');
    std::string padded = body.substr(0, last) + ", \"padding\": \"" + noise + "\"}";
    int refused = 0;
    for (int i = 0; i < 20 && refused == 0; ++i) {
        auto r = daemon->post_github(padded, "full-" + std::to_string(i));
        if (r && r->status == 503) ++refused;
    }
    EXPECT_EQ(refused, 1) << "no delivery was refused on a full disk\n" << daemon->log();
    auto ready = daemon->request("GET", "/readyz", {}, "");
    EXPECT_EQ(ready->status, 503) << ready->body;
    EXPECT_NE(ready->body.find("the last commit failed"), std::string::npos) << ready->body;
    // Space again: the next delivery is stored, and the daemon is ready again.
    std::filesystem::remove(state / "filler");
    auto again = daemon->post_github(body, "after-full");
    EXPECT_EQ(again->status, 202) << again->body;
    EXPECT_EQ(daemon->request("GET", "/readyz", {}, "")->status, 200);
    daemon->stop();
}

}  // namespace
}  // namespace crcrd
