#include "support/daemon.hpp"

#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <fstream>
#include <regex>
#include <sstream>

#include "crcrd/core/files.hpp"
#include "crcrd/ingest/signature.hpp"
#include "crcrd/store/sqlite.hpp"
#include "support/certs.hpp"

namespace crcrd {

std::string fixture_text(const std::string& rel) {
    auto t = read_file(std::string(CRCRD_FIXTURES_DIR) + "/" + rel);
    if (!t) throw std::runtime_error(t.error().message);
    return *t;
}

TestDaemon::TestDaemon(const std::filesystem::path& dir, std::string extra_yaml, bool tls)
    : m_dir(dir), m_tls(tls) {
    write_file(m_dir / "secrets" / "webhook.secret", std::string(k_test_secret) + "\n", 0600);
    write_file(m_dir / "secrets" / "relay.whsec", std::string(k_test_whsec) + "\n", 0600);
    write_config(extra_yaml);
}

void TestDaemon::write_config(const std::string& extra_yaml, const std::string& server_yaml,
                              const std::string& storage_yaml) {
    const auto& certs = test_certs();
    std::ostringstream y;
    y << "log_level: debug\n"
      << "server:\n  listen: \"127.0.0.1:0\"\n";
    if (m_tls) {
        const auto& cert = m_tls_files ? m_tls_files->first : certs.cert;
        const auto& key = m_tls_files ? m_tls_files->second : certs.key;
        y << "  tls: {cert: " << cert.string() << ", key: " << key.string() << "}\n";
    }
    y << "  max_connections: 2048\n"
      << server_yaml << "storage: {path: state/crcrd.db" << storage_yaml << "}\n"
      << "ingest:\n  secrets: [{id: current, file: secrets/webhook.secret}]\n"
      << "  standard_webhooks_secrets: [{id: relay, file: secrets/relay.whsec}]\n"
      << "trust:\n  downstream_repo: torch-spyre/torch-spyre\n  fork_labels: [ciflow/crcr/spyre]\n"
      << extra_yaml;
    write_file(config_path(), y.str());
}

TestDaemon::~TestDaemon() {
    if (m_proc && m_proc->running()) {
        m_proc->signal(SIGTERM);
        if (!m_proc->wait_for(std::chrono::seconds(15))) m_proc->signal(SIGKILL);
    }
}

std::string TestDaemon::log() const {
    auto t = read_file(log_path(), 256 * 1024 * 1024);
    return t ? *t : std::string();
}

void TestDaemon::start(const std::vector<std::string>& env) {
    std::size_t offset = log().size();
    std::vector<std::string> argv = m_prefix;
    argv.insert(argv.end(), {CRCRD_BIN, "--config", config_path().string()});
    m_proc = std::make_unique<Process>(argv, log_path(), env);
    static const std::regex k_listening(R"(listening on https?://127\.0\.0\.1:([0-9]+))");
    std::smatch m;
    bool up = eventually([&] {
        std::string tail = log().substr(offset);
        if (std::regex_search(tail, m, k_listening)) {
            m_port = static_cast<std::uint16_t>(std::stoi(m[1].str()));
            return true;
        }
        return !m_proc->running();
    });
    ASSERT_TRUE(up && m_port != 0) << "crcrd did not start:\n" << log().substr(offset);
}

int TestDaemon::stop() {
    m_proc->signal(SIGTERM);
    auto rc = m_proc->wait_for(std::chrono::seconds(30));
    EXPECT_TRUE(rc) << "crcrd did not stop after SIGTERM";
    return rc.value_or(-1);
}

void TestDaemon::kill9() {
    m_proc->signal(SIGKILL);
    m_proc->wait_for(std::chrono::seconds(10));
}

std::string TestDaemon::url(const std::string& path) const {
    return std::string(m_tls ? "https" : "http") + "://127.0.0.1:" + std::to_string(m_port) + path;
}

Result<http::ClientResponse> TestDaemon::request(const std::string& method, const std::string& path,
                                                 const http::Headers& headers,
                                                 const std::string& body) {
    http::ClientOptions o;
    o.ca_file = test_certs().ca;
    o.timeout = std::chrono::seconds(30);
    auto r = http::send(method, url(path), headers, body, o);
    if (!r && m_proc && !m_proc->running() && !m_exit_reported) {
        // The daemon died under the test: say so once, with how its log ends, for the post-mortem.
        m_exit_reported = true;
        const std::string l = log();
        ADD_FAILURE() << "crcrd exited during the test (" << method << " " << path << ": "
                      << r.error().message << "); its log ends:\n"
                      << l.substr(l.size() > 6000 ? l.size() - 6000 : 0);
    }
    return r;
}

Result<http::ClientResponse> TestDaemon::post_github(const std::string& body,
                                                     const std::string& delivery_id,
                                                     const std::string& event,
                                                     const std::string& secret) {
    return request("POST", "/webhook",
                   {{"Content-Type", "application/json"},
                    {"X-GitHub-Event", event},
                    {"X-GitHub-Delivery", delivery_id},
                    {"X-Hub-Signature-256", ingest::sign_github(secret, body)}},
                   body);
}

Result<http::ClientResponse> TestDaemon::post_standard(const std::string& body,
                                                       const std::string& id,
                                                       std::optional<std::int64_t> timestamp) {
    auto key = ingest::decode_whsec(k_test_whsec);
    std::int64_t ts = timestamp.value_or(std::chrono::duration_cast<std::chrono::seconds>(
                                             std::chrono::system_clock::now().time_since_epoch())
                                             .count());
    return request("POST", "/webhook",
                   {{"Content-Type", "application/json"},
                    {"webhook-id", id},
                    {"webhook-timestamp", std::to_string(ts)},
                    {"webhook-signature", ingest::sign_standard(*key, id, ts, body)}},
                   body);
}

namespace {
/// Runs `sql` on a fresh read-only connection and hands the first row to `read`.
template <class T, class Read>
T first_row(const std::filesystem::path& db_path, const std::string& sql, Read read) {
    auto db = store::Db::open(db_path, store::OpenOptions{true, 5000});
    if (!db) throw std::runtime_error(db.error().message);
    auto st = (*db)->prepare(sql);
    if (!st.step()) throw std::runtime_error("no row: " + sql);
    return read(st);
}
}  // namespace

std::int64_t TestDaemon::scalar(const std::string& sql) const {
    return first_row<std::int64_t>(db_path(), sql, [](store::Stmt& st) { return st.int64(0); });
}

std::string TestDaemon::text(const std::string& sql) const {
    return first_row<std::string>(db_path(), sql, [](store::Stmt& st) { return st.text(0); });
}

std::string TestDaemon::finished(std::int64_t run) const {
    std::string sql =
        "SELECT state || '/' || coalesce(conclusion, '') FROM runs WHERE id=" + std::to_string(run);
    EXPECT_TRUE(
        eventually([&] { return text(sql).rfind("completed/", 0) == 0; }, std::chrono::seconds(60)))
        << text(sql) << "\n"
        << log();
    return text(sql);
}

}  // namespace crcrd
