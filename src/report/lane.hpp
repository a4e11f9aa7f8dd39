#pragma once
// One reporting lane (docs/reporting.md, "Lanes and budget"): the thread that sends the rows of
// one sink. The base keeps what every lane does alike: reading its due rows on its own
// connection, the pause after a rate-limit answer, the request budget and the pause between
// requests, the write-ahead count of each request, the back-off, and storing outcomes. A
// subclass says how a row is sent (github_lane.cpp, callback_lane.cpp, file_lane.cpp).

#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "crcrd/core/clock.hpp"
#include "crcrd/core/result.hpp"
#include "crcrd/core/worker_loop.hpp"
#include "crcrd/http/client.hpp"
#include "crcrd/report/budget.hpp"
#include "crcrd/report/sender.hpp"
#include "crcrd/store/outbox.hpp"

namespace crcrd::report {

struct LaneDeps {
    store::Writer& writer;
    std::filesystem::path db_path;
    const core::Clock& clock;
};

class Lane {
  public:
    using Row = store::OutboxItem;
    struct Outcome {
        enum Kind {
            sent,
            retry,  // again after the back-off
            dead,
            wait,  // rate limited: the lane pauses until `until`, the row stays waiting
            later  // not its turn yet (no attempt, nothing stored)
        } kind = retry;
        std::optional<int> http_status;
        std::string error;
        std::optional<SystemTime> until;  // wait
    };

    Lane(Sink sink, store::LaneOrder order, std::size_t batch, LaneDeps deps);
    Lane(const Lane&) = delete;
    Lane& operator=(const Lane&) = delete;
    /// The thread must have been stopped (stop()) before a subclass's destructor runs.
    virtual ~Lane();

    void start();
    void notify();
    /// Asks the thread to stop (a request in flight ends first); stop() also waits for it.
    void request_stop();
    void stop();
    /// New settings for the rows still waiting; a pause ends, the budget takes the new windows.
    void set_settings(std::shared_ptr<const SenderSettings> s);
    LaneState state() const;
    Sink sink() const { return m_sink; }

  protected:
    /// Sends `row` (or decides it need not or cannot be sent). Called on the lane's thread.
    virtual Outcome deliver(store::OutboxQueue& queue, const Row& row, const SenderSettings& s) = 0;
    /// Whether the settings configure this sink.
    virtual bool configured(const SenderSettings& s) const = 0;
    /// New settings arrive (credentials are made again from them). Any thread.
    virtual void settings_changed(const SenderSettings&) {}
    /// The lane's request budget (none by default).
    virtual std::vector<BudgetWindow> budget_of(const SenderSettings&) const { return {}; }
    /// The least time between the end of a request and the start of the next (none by default).
    virtual std::chrono::milliseconds floor_of(const SenderSettings&) const { return {}; }
    /// Whether `row` waits this pass although it is due (the GitHub lane's progress updates
    /// when the budget is down to its reserve).
    virtual bool hold_back(const Row&, const RequestBudget&, SystemTime) { return false; }
    /// The file a lane that writes lines appends them to (`path` unset: no longer configured),
    /// and the configuration key that names it. None by default.
    struct LinesFile {
        std::optional<std::filesystem::path> path;
        const char* key = "";
    };
    virtual LinesFile lines_file(const SenderSettings&) const { return {}; }
    /// Keeps `line` for lines_file(), written and synced with the batch's outcomes (on an
    /// error the lane pauses for `report.retry_initial` and the batch's rows wait, in order).
    void gather(const std::string& line) { m_lines += line + "\n"; }

    /// Before a request for `row`: waits for the floor since the previous request, checks the
    /// budget, and counts the request in the database before it is made (so a crash after the
    /// request counts it: for the budget, and for the relay's answer to a resend). False when the
    /// request must not be made now (the budget is spent, or the lane stops): deliver() then
    /// returns `later`, and the pass ends.
    bool begin_request(const Row& row, const SenderSettings& s);
    /// After a request, whatever its answer. `resent`: the HTTPS client sent it twice (a kept
    /// connection failed), so the server saw two requests and the budget counts the second.
    void end_request(const Row& row, bool resent = false);

    const core::Clock& clock() const { return m_deps.clock; }
    core::WorkerLoop& loop() { return m_loop; }

  private:
    /// Counts a request of `row` made at `now`: in the request log and the row's `tried`, in
    /// the budget and in the lane's state.
    Status count_request(const Row& row, SystemTime now);
    std::optional<std::chrono::steady_clock::duration> pass();
    /// Sends what is due; returns when to look again.
    SystemTime send_due(store::OutboxQueue& queue, const SenderSettings& s);
    /// Writes the gathered lines to lines_file() and syncs them.
    Status write_gathered(const SenderSettings& s);
    /// Stores the outcomes of `done` in one transaction, after write_gathered(); true when the
    /// write failed and the lane paused.
    bool store_outcomes(std::vector<std::pair<Row, Outcome>>& done, const SenderSettings& s);
    void log_outcome(const Row& row, const Outcome& out, const std::optional<SystemTime>& next);
    std::optional<SystemTime> retry_time(const Row& row, const Outcome& out,
                                         const SenderSettings& s, SystemTime now);
    /// The budget, made from the database's request log at the first pass after a start or a
    /// change of windows.
    RequestBudget& budget(store::OutboxQueue& queue, const SenderSettings& s);

    const Sink m_sink;
    const store::LaneOrder m_order;
    const std::size_t m_batch;  // outcomes stored together (1: each at once)
    LaneDeps m_deps;
    mutable std::mutex m_mu;
    std::shared_ptr<const SenderSettings> m_settings;
    LaneState m_state;                      // under m_mu
    std::optional<RequestBudget> m_budget;  // the lane's thread only
    std::optional<SystemTime> m_last_request_end;
    bool m_budget_spent = false;  // a begin_request() of this pass found the budget spent
    std::optional<store::OutboxQueue> m_queue;  // the lane's read connection
    std::string m_lines;                        // gathered lines not written yet
    core::WorkerLoop m_loop;
};

/// The three lanes (github_lane.cpp, callback_lane.cpp, file_lane.cpp).
std::unique_ptr<Lane> make_github_lane(LaneDeps deps);
std::unique_ptr<Lane> make_callback_lane(LaneDeps deps);
std::unique_ptr<Lane> make_file_lane(LaneDeps deps);

/// The integer value of header `name` of `r`, if it has one.
std::optional<std::int64_t> header_int(const http::ClientResponse& r, std::string_view name);
/// Appends `data` to `path` (created 0640) and fsyncs it.
Status append_lines(const std::filesystem::path& path, const std::string& data);
/// The value of a read on a lane's connection. A failed read ends the pass with the storage
/// error's message; the loop logs it and the lane opens its connection again.
template <class T>
T or_throw(Result<T> r) {
    if (!r) throw std::runtime_error(r.error().message);
    return std::move(r).value();
}

}  // namespace crcrd::report
