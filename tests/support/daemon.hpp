#pragma once
// The real crcrd binary on an ephemeral loopback port, with a certificate, secrets and a
// SQLite file made for the test; plus signed requests to it and reads of its database.

#include <chrono>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "crcrd/http/client.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"

namespace crcrd {

inline constexpr const char* k_test_secret = "test-webhook-secret";
inline constexpr const char* k_test_secret_new = "rotated-webhook-secret";
// Standard Webhooks secret (base64 of 24 bytes).
inline constexpr const char* k_test_whsec = "whsec_dGVzdC1zdGFuZGFyZC13ZWJob29rcy1rZXk=";

/// A fixture file's text, e.g. fixture_text("crcr/push.dispatch.json").
std::string fixture_text(const std::string& rel);

class TestDaemon {
  public:
    /// Writes config (with `extra_yaml` appended at the top level: it may add whole sections
    /// the default config does not have), certificates and secrets into `dir`.
    explicit TestDaemon(const std::filesystem::path& dir, std::string extra_yaml = "",
                        bool tls = true);
    ~TestDaemon();

    /// Starts crcrd (with `env` added to its environment) and waits until it logs its
    /// listening address.
    void start(const std::vector<std::string>& env = {});
    /// SIGTERM; returns the exit code.
    int stop();
    /// SIGKILL, as a crash.
    void kill9();

    std::string url(const std::string& path = "/webhook") const;
    const std::filesystem::path& dir() const { return m_dir; }
    std::filesystem::path db_path() const { return m_dir / "state" / "crcrd.db"; }
    std::filesystem::path config_path() const { return m_dir / "crcrd.yaml"; }
    std::filesystem::path log_path() const { return m_dir / "crcrd.log"; }
    std::string log() const;
    Process& process() { return *m_proc; }
    /// Rewrites the config; `server_yaml` lines go into the server section (indented by 2),
    /// `storage_yaml` (", key: value" pairs) into the storage mapping.
    void write_config(const std::string& extra_yaml, const std::string& server_yaml = "",
                      const std::string& storage_yaml = "");

    /// POST signed with GitHub's scheme. `event` is X-GitHub-Event.
    Result<http::ClientResponse> post_github(const std::string& body,
                                             const std::string& delivery_id,
                                             const std::string& event = "repository_dispatch",
                                             const std::string& secret = k_test_secret);
    /// POST signed with Standard Webhooks at `timestamp` (default now).
    Result<http::ClientResponse> post_standard(
        const std::string& body, const std::string& id,
        std::optional<std::int64_t> timestamp = std::nullopt);
    /// Any request, as given.
    Result<http::ClientResponse> request(const std::string& method, const std::string& path,
                                         const http::Headers& headers, const std::string& body);

    /// One integer from the database (read-only connection).
    std::int64_t scalar(const std::string& sql) const;
    std::string text(const std::string& sql) const;
    /// "completed/<class>" once run `run` completed (a test failure, with the log, after a minute
    /// without); what its state is otherwise.
    std::string finished(std::int64_t run) const;

    std::uint16_t port() const { return m_port; }
    /// Use this certificate and key instead of the shared test ones (at the next write_config).
    void set_tls_files(std::filesystem::path cert, std::filesystem::path key) {
        m_tls_files = std::make_pair(std::move(cert), std::move(key));
    }
    /// Starts crcrd behind `prefix` (e.g. setpriv to another user) from the next start().
    void set_launch_prefix(std::vector<std::string> prefix) { m_prefix = std::move(prefix); }

  private:
    std::filesystem::path m_dir;
    bool m_tls;
    std::unique_ptr<Process> m_proc;
    std::uint16_t m_port = 0;
    bool m_exit_reported = false;
    std::optional<std::pair<std::filesystem::path, std::filesystem::path>> m_tls_files;
    std::vector<std::string> m_prefix;
};

}  // namespace crcrd
