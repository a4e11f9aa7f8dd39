#include "crcrd/report/sender.hpp"

#include "crcrd/github/client.hpp"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <nlohmann/json.hpp>
#include <random>

#include "crcrd/core/files.hpp"
#include "crcrd/http/client.hpp"
#include "crcrd/store/outbox.hpp"

namespace crcrd::report {

using nlohmann::json;
using std::chrono::system_clock;

namespace {

// GitHub keeps at most this many statuses per SHA and context.
constexpr std::int64_t k_github_status_limit = 1000;

std::string github_message(const std::string& body) {
    auto j = json::parse(body, nullptr, false);
    if (j.is_object() && j.contains("message") && j["message"].is_string()) {
        std::string m = j["message"];
        if (j.contains("errors")) m += " " + j["errors"].dump();
        return m.substr(0, 1000);
    }
    return body.substr(0, 300);
}

std::optional<std::int64_t> header_int(const http::ClientResponse& r, std::string_view name) {
    auto v = r.header(name);
    if (!v) return std::nullopt;
    try {
        return std::stoll(std::string(*v));
    } catch (...) {
        return std::nullopt;
    }
}

Status append_lines(const std::filesystem::path& path, const std::string& data) {
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
    if (fd < 0)
        return make_error(Errc::report_file,
                          "cannot open " + path.string() + ": " + std::strerror(errno));
    const char* p = data.data();
    std::size_t left = data.size();
    while (left > 0) {
        ssize_t n = ::write(fd, p, left);
        if (n < 0) {
            if (errno == EINTR) continue;
            int e = errno;
            ::close(fd);
            return make_error(Errc::report_file,
                              "cannot write " + path.string() + ": " + std::strerror(e));
        }
        p += n;
        left -= static_cast<std::size_t>(n);
    }
    if (::fsync(fd) != 0) {
        int e = errno;
        ::close(fd);
        return make_error(Errc::report_file,
                          "cannot sync " + path.string() + ": " + std::strerror(e));
    }
    ::close(fd);
    return Ok{};
}

/// The value of a read on the sender's connection. A failed read ends the pass with the
/// storage error's message; the loop logs it and opens the connection again.
template <class T>
T or_throw(Result<T> r) {
    if (!r) throw std::runtime_error(r.error().message);
    return std::move(r).value();
}

}  // namespace

SenderSettings sender_settings(const config::ReportConfig& r) {
    SenderSettings s;
    s.github = r.github;
    s.file = r.file;
    s.callback = r.crcr_callback;
    s.retry_initial = std::chrono::duration_cast<std::chrono::milliseconds>(r.retry_initial);
    s.retry_max = std::chrono::duration_cast<std::chrono::milliseconds>(r.retry_max);
    s.timeout = std::chrono::duration_cast<std::chrono::milliseconds>(r.timeout);
    s.min_interval = std::chrono::duration_cast<std::chrono::milliseconds>(r.min_interval);
    return s;
}

struct Sender::Outcome {
    enum Kind {
        sent,
        retry,
        dead,
        wait,
        later
    } kind = retry;  // later: not its turn yet, no attempt
    std::optional<int> http_status;
    std::string error;
    std::optional<SystemTime> until;  // wait: rate limited until
};

Sender::Sender(store::Writer& writer, std::filesystem::path db_path, SenderSettings settings,
               const core::Clock& clock)
    : m_writer(writer), m_db_path(std::move(db_path)), m_clock(clock) {
    set_settings(std::move(settings));
}

Sender::~Sender() {
    stop();
}

void Sender::set_settings(SenderSettings settings) {
    std::lock_guard lk(m_mu);
    m_auth = settings.github ? std::make_shared<github::Auth>(*settings.github, settings.timeout)
                             : nullptr;
    m_relay_token = settings.callback ? std::make_shared<RelayToken>(*settings.callback) : nullptr;
    m_settings = std::make_shared<const SenderSettings>(std::move(settings));
    m_paused.clear();
    m_loop.notify();
}

void Sender::start() {
    m_loop.start();
}

void Sender::notify() {
    m_loop.notify();
}

void Sender::stop() {
    m_loop.stop();
}

std::optional<std::chrono::steady_clock::duration> Sender::pass() {
    try {
        if (!m_queue) {
            auto opened = store::OutboxQueue::open(m_db_path);
            if (!opened) throw std::runtime_error(opened.error().message);
            m_queue.emplace(std::move(*opened));
        }
        const auto next = send_due(*m_queue);
        // At least every 5 s: rows whose retry time came, pauses that ended.
        return std::min<std::chrono::steady_clock::duration>(std::chrono::seconds(5),
                                                             next - m_clock.now());
    } catch (...) {
        m_queue.reset();  // opened again at the next pass (after 5 s)
        throw;
    }
}

SystemTime Sender::send_due(store::OutboxQueue& queue) {
    const auto now = m_clock.now();
    // A rate-limited sink's rows are left out, so they neither spin this loop nor hold up
    // the other sinks' rows behind them.
    std::vector<Sink> paused;
    {
        std::lock_guard lk(m_mu);
        for (auto it = m_paused.begin(); it != m_paused.end();) {
            if (now >= it->second) {
                it = m_paused.erase(it);
            } else {
                paused.push_back(it->first);
                ++it;
            }
        }
    }
    const std::vector<Row> rows = or_throw(queue.due(now, paused));
    std::shared_ptr<const SenderSettings> s;
    {
        std::lock_guard lk(m_mu);
        s = m_settings;
    }
    std::vector<std::pair<Row, Outcome>> done;
    for (const auto& row : rows) {
        if (m_loop.stopping()) break;
        {
            std::lock_guard lk(m_mu);
            if (auto p = m_paused.find(row.sink); p != m_paused.end())
                continue;  // paused during this pass
        }
        // A newer state of the same context may have replaced this one since it was read.
        const bool waiting = or_throw(queue.delivery_of(row.id)) == OutboxDelivery::waiting;
        if (!waiting) continue;
        auto out = deliver(queue, row, *s);
        if (out.kind == Outcome::later) continue;  // its turn comes after another row's
        if (out.kind == Outcome::wait) {
            std::lock_guard lk(m_mu);
            m_paused[row.sink] = *out.until;
        }
        done.emplace_back(row, std::move(out));
        // Outcomes are stored in batches: a crash before a batch is stored sends its rows
        // again after the restart (a duplicate status, which GitHub tolerates), never none.
        if (done.size() >= 64 || row.sink != Sink::file) flush(done, *s);
    }
    flush(done, *s);
    // When to look again: at once when this pass was full, else at the earliest retry of a
    // sink that is not paused, or when a pause ends (or in 5 s, or when woken).
    SystemTime next = m_clock.now() + std::chrono::seconds(5);
    if (rows.size() == 100) next = m_clock.now();
    if (auto at = or_throw(queue.earliest_retry(paused))) {
        if (auto t = parse_rfc3339(*at)) next = std::min(next, *t);
    }
    {
        std::lock_guard lk(m_mu);
        for (const auto& [sink, until] : m_paused)
            next = std::max(std::min(next, until), m_clock.now());
    }
    return next;
}

Sender::Outcome Sender::deliver_callback(store::OutboxQueue& queue, const Row& row,
                                         const SenderSettings& s, http::ClientOptions opts) {
    if (!s.callback)
        return {Outcome::dead, std::nullopt, "report.crcr_callback is no longer configured",
                std::nullopt};
    // The relay accepts a `completed` only after its `in_progress` (docs/reporting.md): it waits
    // for it.
    if (row.state == "completed") {
        const std::string pair = row.context.substr(0, row.context.rfind('/')) + "/in_progress";
        const std::optional<OutboxDelivery> state =
            or_throw(queue.first_callback_delivery(row.run_id, pair));
        if (state == OutboxDelivery::waiting)
            return {Outcome::later, std::nullopt, "", std::nullopt};
        if (state == OutboxDelivery::dead) {
            return {Outcome::dead, std::nullopt,
                    "its in_progress callback was not accepted, so the relay would refuse it",
                    std::nullopt};
        }
    }
    if (s.callback->file) {
        m_callback_lines += row.body.value_or("{}") + "\n";  // written and synced by flush()
        return {Outcome::sent, std::nullopt, "", std::nullopt};
    }
    std::shared_ptr<RelayToken> relay_token;
    {
        std::lock_guard lk(m_mu);
        relay_token = m_relay_token;
    }
    auto token = relay_token->token();
    if (!token) return {Outcome::retry, std::nullopt, token.error().message, std::nullopt};
    opts.ca_file = s.callback->ca_file;
    auto r =
        http::send("POST", s.callback->url,
                   {{"Content-Type", "application/json"}, {"Authorization", "Bearer " + *token}},
                   row.body.value_or("{}"), opts);
    if (!r) return {Outcome::retry, std::nullopt, r.error().message, std::nullopt};
    const int code = r->status;
    std::string detail = r->body.substr(0, 300);
    if (auto j = json::parse(r->body, nullptr, false);
        j.is_object() && j.contains("detail") && j["detail"].is_string()) {
        detail = j["detail"].get<std::string>().substr(0, 300);
    }
    if (code >= 200 && code < 300) {
        if (auto j = json::parse(r->body, nullptr, false);
            j.is_object() && j.value("status", "") == "ignored") {
            spdlog::warn(
                "run_id={} relay callback {} accepted but ignored: this repository is below level "
                "L2 in the "
                "relay's allow-list",
                row.run_id, row.context);
        }
        return {Outcome::sent, code, "", std::nullopt};
    }
    const std::string msg = "HTTP " + std::to_string(code) + ": " + detail;
    // The relay answers a callback it already recorded (our first try's answer was lost) with
    // this 400; for a callback sent before, it means delivered.
    if (code == 400 && row.attempts > 0 &&
        detail.find("invalid state transition") != std::string::npos) {
        return {Outcome::sent, code,
                "already recorded by the relay (an earlier answer was lost): " + detail,
                std::nullopt};
    }
    // The relay writes its dispatch record after dispatching: a very fast first callback can
    // come before it. A few retries cover that race; an expired record (3 days) stays dead.
    if (code == 400 && row.attempts < 3 &&
        detail.find("no matching dispatch record") != std::string::npos) {
        return {Outcome::retry, code, msg, std::nullopt};
    }
    if (code == 401) {
        relay_token->invalidate();  // an OIDC token expires in minutes: mint a new one
        return {Outcome::retry, code, msg + " (a new token is taken for the next attempt)",
                std::nullopt};
    }
    if (code == 429) {
        // The relay's limit is per repository per 60 s, counts refused requests too, and sends
        // no Retry-After: the callback sink pauses a minute unless it says otherwise.
        const auto after = header_int(*r, "retry-after").value_or(60);
        return {Outcome::wait, code, msg,
                m_clock.now() + std::chrono::seconds(std::max<std::int64_t>(after, 1))};
    }
    if (code >= 500) return {Outcome::retry, code, msg, std::nullopt};
    return {Outcome::dead, code, msg, std::nullopt};
}

Sender::Outcome Sender::deliver(store::OutboxQueue& queue, const Row& row,
                                const SenderSettings& s) {
    http::ClientOptions opts;
    opts.timeout = s.timeout;
    if (row.sink == Sink::file) {
        if (!s.file)
            return {Outcome::dead, std::nullopt, "report.file is no longer configured",
                    std::nullopt};
        json line = {{"at", m_clock.now_text()},
                     {"run_id", row.run_id},
                     {"sha", row.sha},
                     {"context", row.context},
                     {"state", row.state},
                     {"description", row.description},
                     {"target_url", row.target_url ? json(*row.target_url) : json(nullptr)}};
        m_file_lines += line.dump() + "\n";  // written and synced by flush()
        return {Outcome::sent, std::nullopt, "", std::nullopt};
    }
    if (row.sink == Sink::callback) return deliver_callback(queue, row, s, opts);
    // GitHub.
    if (!s.github)
        return {Outcome::dead, std::nullopt, "report.github is no longer configured", std::nullopt};
    const auto sent = or_throw(queue.github_sent_count(row.sha, row.context));
    if (sent >= k_github_status_limit ||
        (sent == k_github_status_limit - 1 && row.state == "pending")) {
        return {Outcome::dead, std::nullopt,
                "GitHub keeps at most 1000 statuses per SHA and context; " + std::to_string(sent) +
                    " were sent (the last one is kept for a final state)",
                std::nullopt};
    }
    std::shared_ptr<github::Auth> auth;
    {
        std::lock_guard lk(m_mu);
        auth = m_auth;
    }
    auto token = auth->token();
    if (!token) return {Outcome::retry, std::nullopt, token.error().message, std::nullopt};
    github::Client client(s.github->api_url, *token, s.github->ca_file, opts.timeout);
    json body = {{"state", row.state},
                 {"context", row.context},
                 {"description", row.description},
                 {"target_url", row.target_url ? json(*row.target_url) : json(nullptr)}};
    {
        // GitHub asks for a pause of a second between mutative requests (secondary limits):
        // counted from the end of the previous one.
        std::optional<SystemTime> last;
        {
            std::lock_guard lk(m_mu);
            last = m_last_github_post;
        }
        if (last && !m_loop.sleep_for(*last + s.min_interval - m_clock.now()))
            return {Outcome::retry, std::nullopt, "stopping", std::nullopt};
    }
    auto r = client.post("/repos/" + s.github->repo + "/statuses/" + row.sha, body.dump());
    {
        std::lock_guard lk(m_mu);
        m_last_github_post = m_clock.now();
    }
    if (!r) return {Outcome::retry, std::nullopt, r.error().message, std::nullopt};
    const int code = r->status;
    if (code == 200 || code == 201) return {Outcome::sent, code, "", std::nullopt};
    std::string msg = "HTTP " + std::to_string(code) + ": " + github_message(r->body);
    if (code >= 500) return {Outcome::retry, code, msg, std::nullopt};
    if (code == 403 || code == 429) {
        const auto now = m_clock.now();
        if (auto after = header_int(*r, "retry-after")) {
            return {Outcome::wait, code, msg,
                    now + std::chrono::seconds(std::max<std::int64_t>(*after, 1))};
        }
        auto remaining = r->header("x-ratelimit-remaining");
        if (remaining && *remaining == "0") {
            auto reset = header_int(*r, "x-ratelimit-reset");
            auto until = reset ? system_clock::time_point(std::chrono::seconds(*reset)) +
                                     std::chrono::seconds(1)
                               : now + std::chrono::minutes(1);
            return {Outcome::wait, code, msg, std::max(until, now + std::chrono::seconds(1))};
        }
        // A secondary rate limit without either header: at least a minute, GitHub says.
        if (code == 429 || msg.find("rate limit") != std::string::npos) {
            const auto pause = std::max<std::chrono::milliseconds>(
                std::chrono::minutes(1),
                s.retry_initial * (std::int64_t{1} << std::min<std::int64_t>(row.attempts, 6)));
            return {Outcome::wait, code, msg, now + pause};
        }
    }
    if (code == 401 || code == 403) {
        // A revoked, expired or rotated credential (403 here is not a rate limit): never a
        // dead letter, or GitHub would show `pending` forever (docs/reporting.md). Retried with the
        // 5xx backoff; the token file is read again, an App's installation token fetched again.
        if (s.github->app_id) auth->invalidate();
        return {Outcome::retry, code,
                msg + " (credentials rejected; read again before the next attempt)", std::nullopt};
    }
    return {Outcome::dead, code, msg, std::nullopt};
}

void Sender::flush(std::vector<std::pair<Row, Outcome>>& done, const SenderSettings& s) {
    if (done.empty()) return;
    if (!m_callback_lines.empty()) {
        auto st = s.callback && s.callback->file
                      ? append_lines(*s.callback->file, m_callback_lines)
                      : Status(make_error(Errc::report_file, "report.crcr_callback.file is gone"));
        m_callback_lines.clear();
        if (!st) {
            for (auto& [row, out] : done) {
                if (row.sink == Sink::callback && out.kind == Outcome::sent)
                    out = {Outcome::retry, std::nullopt, st.error().message, std::nullopt};
            }
        }
    }
    if (!m_file_lines.empty()) {
        auto st = s.file ? append_lines(*s.file, m_file_lines)
                         : Status(make_error(Errc::report_file, "report.file is gone"));
        m_file_lines.clear();
        if (!st) {
            for (auto& [row, out] : done) {
                if (row.sink == Sink::file && out.kind == Outcome::sent)
                    out = {Outcome::retry, std::nullopt, st.error().message, std::nullopt};
            }
        }
    }
    const auto now = m_clock.now();
    static thread_local std::mt19937_64 rng{std::random_device{}()};
    std::vector<std::optional<SystemTime>> next(done.size());
    std::vector<store::AttemptRecord> attempts;
    for (std::size_t i = 0; i < done.size(); ++i) {
        const auto& [row, out] = done[i];
        if (out.kind == Outcome::retry) {
            // Exponential backoff with jitter: a delay drawn from [d/2, d], d doubling per attempt.
            auto d =
                s.retry_initial * (std::int64_t{1} << std::min<std::int64_t>(row.attempts, 20));
            d = std::min(d, s.retry_max);
            std::uniform_int_distribution<std::int64_t> pick(d.count() / 2,
                                                             std::max<std::int64_t>(d.count(), 1));
            next[i] = now + std::chrono::milliseconds(pick(rng));
        } else if (out.kind == Outcome::wait) {
            next[i] = out.until;
        }
        using Kind = store::AttemptRecord::Kind;
        attempts.push_back(
            {row.id,
             out.kind == Outcome::sent   ? Kind::sent
             : out.kind == Outcome::dead ? Kind::dead
                                         : Kind::again,
             out.http_status ? std::optional<std::int64_t>(*out.http_status) : std::nullopt,
             out.error.empty() ? std::optional<std::string>()
                               : std::optional<std::string>(out.error),
             next[i] ? std::optional<std::string>(rfc3339(*next[i])) : std::nullopt});
    }
    auto st = m_writer.run_sync(
        [&](store::Db& db) { store::OutboxRepo(db).record_attempts(attempts, now); });
    for (std::size_t i = 0; i < done.size(); ++i) {
        const auto& [row, out] = done[i];
        if (!st)
            spdlog::error("outbox id={} run_id={}: result not stored: {}", row.id, row.run_id,
                          st.error().message);
        switch (out.kind) {
            case Outcome::sent:
                spdlog::log(row.sink == Sink::file ? spdlog::level::debug : spdlog::level::info,
                            "run_id={} {} {} {} sent ({})", row.run_id, to_string(row.sink),
                            row.context, row.state, row.description);
                break;
            case Outcome::dead:
                spdlog::error("run_id={} {} {} {} dead letter: {}", row.run_id, to_string(row.sink),
                              row.context, row.state, out.error);
                break;
            case Outcome::wait:
                spdlog::warn("run_id={} {} rate limited until {}: {}", row.run_id,
                             to_string(row.sink), rfc3339(*out.until), out.error);
                break;
            case Outcome::retry:
                spdlog::warn("run_id={} {} {} {} attempt {} failed, again at {}: {}", row.run_id,
                             to_string(row.sink), row.context, row.state, row.attempts + 1,
                             rfc3339(*next[i]), out.error);
                break;
            case Outcome::later:
                break;  // never stored: send_due() skips it
        }
    }
    done.clear();
}

}  // namespace crcrd::report
