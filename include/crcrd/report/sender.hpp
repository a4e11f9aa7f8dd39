#pragma once
// Delivers the outbox (docs/reporting.md): one thread, rows in id order, one request at a time.
// GitHub statuses and relay callbacks are retried with exponential backoff and jitter on 5xx
// and network errors; a rate limit (403/429) pauses the GitHub sink until `Retry-After` or
// `x-ratelimit-reset`; other 4xx are dead letters keeping GitHub's message. The file sink
// appends a JSON line and fsyncs it.

#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include "crcrd/config/config.hpp"
#include "crcrd/core/clock.hpp"
#include "crcrd/core/time.hpp"
#include "crcrd/core/vocab.hpp"
#include "crcrd/core/worker_loop.hpp"
#include "crcrd/github/auth.hpp"
#include "crcrd/http/client.hpp"
#include "crcrd/report/relay_token.hpp"
#include "crcrd/store/outbox.hpp"
#include "crcrd/store/writer.hpp"

namespace crcrd::report {

struct SenderSettings {
    std::optional<config::GithubReportConfig> github;
    std::optional<std::filesystem::path> file;
    std::optional<config::CrcrCallbackConfig> callback;
    std::chrono::milliseconds retry_initial{std::chrono::seconds(2)};
    std::chrono::milliseconds retry_max{std::chrono::minutes(10)};
    std::chrono::milliseconds timeout{std::chrono::seconds(30)};
    std::chrono::milliseconds min_interval{std::chrono::seconds(1)};  // between POSTs to GitHub
};
SenderSettings sender_settings(const config::ReportConfig& r);

class Sender {
  public:
    /// `clock`: the time its decisions read (rows due, back-off, pauses).
    Sender(store::Writer& writer, std::filesystem::path db_path, SenderSettings settings,
           const core::Clock& clock = core::system_clock());
    ~Sender();
    void start();
    /// Something new may be waiting.
    void notify();
    void stop();
    /// SIGHUP: new endpoints and credentials for the rows still waiting.
    void set_settings(SenderSettings settings);

  private:
    using Row = store::OutboxItem;
    struct Outcome;
    /// One pass of the sender's loop: what is due; how long it may wait for the next.
    std::optional<std::chrono::steady_clock::duration> pass();
    /// Sends what is due; returns when to look again.
    SystemTime send_due(store::OutboxQueue& queue);
    Outcome deliver(store::OutboxQueue& queue, const Row& row, const SenderSettings& s);
    /// A relay callback (docs/reporting.md): a `completed` waits for its `in_progress`.
    Outcome deliver_callback(store::OutboxQueue& queue, const Row& row, const SenderSettings& s,
                             http::ClientOptions opts);
    /// Writes the report-file lines gathered in this pass (one fsync), then stores every
    /// outcome in one transaction.
    void flush(std::vector<std::pair<Row, Outcome>>& done, const SenderSettings& s);
    std::string m_file_lines;      // report-file lines of this pass, not yet written
    std::string m_callback_lines;  // report.crcr_callback.file lines of this pass

    store::Writer& m_writer;
    std::filesystem::path m_db_path;
    const core::Clock& m_clock;
    std::mutex m_mu;
    std::shared_ptr<const SenderSettings> m_settings;
    std::shared_ptr<github::Auth> m_auth;
    std::shared_ptr<RelayToken> m_relay_token;
    std::map<Sink, SystemTime> m_paused;  // sink → rate-limited until
    std::optional<SystemTime> m_last_github_post;
    std::optional<store::OutboxQueue> m_queue;  // the loop's read connection
    core::WorkerLoop m_loop{"report sender", [this] { return pass(); },
                            core::WorkerLoop::Options{std::chrono::seconds(5), false}};
};

}  // namespace crcrd::report
