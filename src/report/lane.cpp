#include "report/lane.hpp"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <random>

#include "crcrd/store/writer.hpp"

namespace crcrd::report {

namespace {

constexpr std::int64_t k_rows_per_pass = 100;

std::string lane_name(Sink sink) {
    return std::string("report lane ") + std::string(to_string(sink));
}

}  // namespace

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
    // A failed write or sync is undone to the size before it, so that the lines written again
    // later are not there twice.
    struct stat before {};
    const bool sized = ::fstat(fd, &before) == 0;
    auto fail = [&](const char* what) {
        const int e = errno;
        if (sized) (void)::ftruncate(fd, before.st_size);
        ::close(fd);
        return make_error(Errc::report_file, std::string("cannot ") + what + " " + path.string() +
                                                 ": " + std::strerror(e));
    };
    const char* p = data.data();
    std::size_t left = data.size();
    while (left > 0) {
        ssize_t n = ::write(fd, p, left);
        if (n < 0) {
            if (errno == EINTR) continue;
            return fail("write");
        }
        p += n;
        left -= static_cast<std::size_t>(n);
    }
    if (::fsync(fd) != 0) return fail("sync");
    ::close(fd);
    return Ok{};
}

Lane::Lane(Sink sink, store::LaneOrder order, std::size_t batch, LaneDeps deps)
    : m_sink(sink),
      m_order(order),
      m_batch(batch),
      m_deps(std::move(deps)),
      m_loop(
          lane_name(sink), [this] { return pass(); },
          core::WorkerLoop::Options{std::chrono::seconds(5), false}) {
    m_state.sink = sink;
}

Lane::~Lane() {
    m_loop.stop();
}

void Lane::start() {
    m_loop.start();
}

void Lane::notify() {
    m_loop.notify();
}

void Lane::request_stop() {
    m_loop.request_stop();
}

void Lane::stop() {
    m_loop.stop();
}

void Lane::set_settings(std::shared_ptr<const SenderSettings> s) {
    settings_changed(*s);
    std::lock_guard lk(m_mu);
    m_state.configured = configured(*s);
    m_state.paused_until.reset();
    m_settings = std::move(s);
    m_loop.notify();
}

LaneState Lane::state() const {
    std::lock_guard lk(m_mu);
    return m_state;
}

std::optional<std::chrono::steady_clock::duration> Lane::pass() {
    std::shared_ptr<const SenderSettings> s;
    {
        std::lock_guard lk(m_mu);
        s = m_settings;
    }
    if (!s) return std::chrono::seconds(5);
    try {
        if (!m_queue) {
            auto opened = store::OutboxQueue::open(m_deps.db_path);
            if (!opened) throw std::runtime_error(opened.error().message);
            m_queue.emplace(std::move(*opened));
        }
        const SystemTime next = send_due(*m_queue, *s);
        const SystemTime now = clock().now();
        {
            std::lock_guard lk(m_mu);
            m_state.next_send_at = next;
            m_state.budget_spent = m_budget_spent;
            m_state.budget = m_budget ? m_budget->left(now) : std::vector<RequestBudget::Left>{};
        }
        // At least every 5 s: rows whose retry time came, pauses that ended.
        return std::min<std::chrono::steady_clock::duration>(std::chrono::seconds(5), next - now);
    } catch (...) {
        m_queue.reset();  // opened again at the next pass (after 5 s)
        throw;
    }
}

RequestBudget& Lane::budget(store::OutboxQueue& queue, const SenderSettings& s) {
    auto windows = budget_of(s);
    if (!m_budget || m_budget->windows() != windows) {
        std::chrono::milliseconds longest{0};
        for (const auto& w : windows) longest = std::max(longest, w.per);
        std::vector<SpentRequest> past;
        if (!windows.empty()) {
            for (const auto& r : or_throw(queue.requests_made(m_sink, clock().now() - longest)))
                past.push_back({r.at, r.priority});
        }
        m_budget.emplace(std::move(windows), std::move(past));
    }
    return *m_budget;
}

SystemTime Lane::send_due(store::OutboxQueue& queue, const SenderSettings& s) {
    SystemTime now = clock().now();
    {
        std::lock_guard lk(m_mu);
        if (m_state.paused_until && now < *m_state.paused_until) return *m_state.paused_until;
        m_state.paused_until.reset();
    }
    m_budget_spent = false;
    m_lines.clear();  // a pass that threw may have left lines of rows it reads again
    RequestBudget& b = budget(queue, s);
    const std::vector<Row> rows = or_throw(queue.due(m_sink, now, m_order, k_rows_per_pass));
    std::vector<std::pair<Row, Outcome>> done;
    std::int64_t held = 0;
    bool progressed = false;
    bool paused = false;
    for (const auto& row : rows) {
        if (m_loop.stopping()) break;
        // A newer state of the same context may have replaced this one since it was read.
        if (or_throw(queue.delivery_of(row.id)) != OutboxDelivery::waiting) continue;
        if (hold_back(row, b, clock().now())) {
            ++held;
            continue;
        }
        auto out = deliver(queue, row, s);
        if (m_budget_spent) break;                 // deliver() found no request left
        if (out.kind == Outcome::later) continue;  // its turn comes after another row's
        progressed = true;
        paused = out.kind == Outcome::wait;
        if (paused) {
            std::lock_guard lk(m_mu);
            m_state.paused_until = out.until;
        }
        done.emplace_back(row, std::move(out));
        // Outcomes are stored in batches: a crash before a batch is stored sends its rows again
        // after the restart (a duplicate, which GitHub tolerates and the relay answers as
        // described in docs/reporting.md), never none.
        if (done.size() >= m_batch || paused) paused = store_outcomes(done, s) || paused;
        if (paused) break;
    }
    store_outcomes(done, s);
    {
        std::lock_guard lk(m_mu);
        m_state.held_back = held;
    }
    // When to look again: at once after a full pass that sent something; else at the earliest
    // retry, when the budget frees a request, when a pause ends, or in 5 s (or when woken).
    now = clock().now();
    SystemTime next = now + std::chrono::seconds(5);
    if (static_cast<std::int64_t>(rows.size()) == k_rows_per_pass && progressed && !paused &&
        !m_budget_spent)
        next = now;
    if (auto at = or_throw(queue.earliest_retry(m_sink))) next = std::min(next, *at);
    if (!progressed) {
        // Nothing could be sent of what is due (held back, or waiting for another row): a
        // change comes with a notify, a retry time or the budget.
        next = std::max(
            next, now + (held > 0 ? std::chrono::seconds(1) : std::chrono::milliseconds(100)));
    }
    if (m_budget_spent) next = std::max(next, b.next_free(now));
    std::lock_guard lk(m_mu);
    if (m_state.paused_until) next = std::max(next, *m_state.paused_until);
    return std::max(next, now);
}

bool Lane::begin_request(const Row& row, const SenderSettings& s) {
    if (m_last_request_end) {
        const auto wait = *m_last_request_end + floor_of(s) - clock().now();
        if (wait > wait.zero() && !m_loop.sleep_for(wait)) return false;
    }
    if (m_loop.stopping()) return false;
    const SystemTime now = clock().now();
    if (m_budget && m_budget->next_free(now) > now) {
        m_budget_spent = true;
        return false;
    }
    if (auto st = count_request(row, now); !st)
        throw std::runtime_error("the request was not counted: " + st.error().message);
    return true;
}

Status Lane::count_request(const Row& row, SystemTime now) {
    auto st = m_deps.writer.run_sync(
        [&](store::Db& db) { store::OutboxRepo(db).note_request(m_sink, row.id, now); });
    if (!st) return st;
    if (m_budget) m_budget->spend(now, row.priority);
    std::lock_guard lk(m_mu);
    ++m_state.requests;
    if (m_budget) m_state.budget = m_budget->left(now);  // seen at once, not at the pass's end
    return Ok{};
}

void Lane::end_request(const Row& row, bool resent) {
    const SystemTime now = clock().now();
    m_last_request_end = now;
    if (!resent) return;
    if (auto st = count_request(row, now); !st)
        spdlog::warn("run_id={} a repeated request was not counted: {}", row.run_id,
                     st.error().message);
}

std::optional<SystemTime> Lane::retry_time(const Row& row, const Outcome& out,
                                           const SenderSettings& s, SystemTime now) {
    if (out.kind == Outcome::wait) return out.until;
    if (out.kind != Outcome::retry) return std::nullopt;
    // Exponential back-off with jitter: a delay drawn from [d/2, d], d doubling per attempt.
    static thread_local std::mt19937_64 rng{std::random_device{}()};
    auto d = s.retry_initial * (std::int64_t{1} << std::min<std::int64_t>(row.attempts, 20));
    d = std::min(d, s.retry_max);
    std::uniform_int_distribution<std::int64_t> pick(d.count() / 2,
                                                     std::max<std::int64_t>(d.count(), 1));
    return now + std::chrono::milliseconds(pick(rng));
}

Status Lane::write_gathered(const SenderSettings& s) {
    if (m_lines.empty()) return Ok{};
    const LinesFile f = lines_file(s);
    auto st = f.path ? append_lines(*f.path, m_lines)
                     : Status(make_error(Errc::report_file, std::string(f.key) + " is gone"));
    m_lines.clear();
    return st;
}

bool Lane::store_outcomes(std::vector<std::pair<Row, Outcome>>& done, const SenderSettings& s) {
    if (done.empty()) return false;
    bool write_failed = false;
    const auto now = clock().now();
    if (auto st = write_gathered(s); !st) {
        // The batch waits as one, so that its lines keep their order: the lane pauses.
        const SystemTime until = now + s.retry_initial;
        for (auto& [row, out] : done) {
            if (out.kind == Outcome::sent)
                out = {Outcome::wait, std::nullopt, st.error().message, until};
        }
        std::lock_guard lk(m_mu);
        m_state.paused_until = until;
        write_failed = true;
    }
    std::vector<std::optional<SystemTime>> next(done.size());
    std::vector<store::AttemptRecord> attempts;
    for (std::size_t i = 0; i < done.size(); ++i) {
        const auto& [row, out] = done[i];
        next[i] = retry_time(row, out, s, now);
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
    auto st = m_deps.writer.run_sync(
        [&](store::Db& db) { store::OutboxRepo(db).record_attempts(attempts, now); });
    for (std::size_t i = 0; i < done.size(); ++i) {
        const auto& [row, out] = done[i];
        if (!st)
            spdlog::error("outbox id={} run_id={}: result not stored: {}", row.id, row.run_id,
                          st.error().message);
        log_outcome(row, out, next[i]);
    }
    {
        std::lock_guard lk(m_mu);
        const auto& last = done.back().second;
        m_state.last_error = last.kind == Outcome::sent ? std::string() : last.error;
    }
    done.clear();
    return write_failed;
}

void Lane::log_outcome(const Row& row, const Outcome& out, const std::optional<SystemTime>& next) {
    switch (out.kind) {
        case Outcome::sent:
            spdlog::log(row.sink == Sink::file ? spdlog::level::debug : spdlog::level::info,
                        "run_id={} {} {} {} sent ({}){}", row.run_id, to_string(row.sink),
                        row.context, row.state, row.description,
                        out.error.empty() ? "" : ": " + out.error);
            break;
        case Outcome::dead:
            spdlog::error("run_id={} {} {} {} dead letter: {}", row.run_id, to_string(row.sink),
                          row.context, row.state, out.error);
            break;
        case Outcome::wait:
            spdlog::warn("run_id={} {} rate limited until {}: {}", row.run_id, to_string(row.sink),
                         rfc3339(*out.until), out.error);
            break;
        case Outcome::retry:
            spdlog::warn("run_id={} {} {} {} attempt {} failed, again at {}: {}", row.run_id,
                         to_string(row.sink), row.context, row.state, row.attempts + 1,
                         rfc3339(*next), out.error);
            break;
        case Outcome::later:
            break;  // never stored: send_due() skips it
    }
}

}  // namespace crcrd::report
