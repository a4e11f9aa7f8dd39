#pragma once
// The one shape of crcrd's background threads (the writer, planner, dispatcher, sender,
// recovery and retention): a thread that runs passes of work, each when notified or when the
// previous pass's wait ran out, until stopped. A pass that throws is logged and the thread goes
// on. Waits inside a pass (a pause between requests, a back-off) end early at the stop.

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

namespace crcrd::core {

class WorkerLoop {
  public:
    using Duration = std::chrono::steady_clock::duration;
    using TimePoint = std::chrono::steady_clock::time_point;
    /// One pass. Returns how long the thread may wait for the next one at most (nullopt: until
    /// notify()); a notify() during the pass makes the next pass come at once.
    using Pass = std::function<std::optional<Duration>()>;

    struct Options {
        /// The wait after a pass that threw.
        Duration after_error = std::chrono::seconds(1);
        /// After the stop is asked, one more pass runs before the thread ends (the writer
        /// commits what it accepted).
        bool last_pass_at_stop = false;
    };

    WorkerLoop(std::string name, Pass pass);
    WorkerLoop(std::string name, Pass pass, Options options);
    WorkerLoop(const WorkerLoop&) = delete;
    WorkerLoop& operator=(const WorkerLoop&) = delete;
    ~WorkerLoop();

    /// Starts the thread; its first pass after `first` (at once by default) or a notify().
    /// Throws std::system_error when no thread can be started.
    void start(Duration first = Duration::zero());
    /// The next pass comes at once (after the current one, if one runs).
    void notify();
    /// No pass starts after this; waits in sleep_for()/sleep_until() return false.
    void request_stop();
    /// Waits for the thread's end (after request_stop()).
    void join();
    /// request_stop() and join(). Safe to call twice, and when the thread never started.
    void stop();
    bool stopping() const;
    /// Waits `d` (from any thread), or less when the loop stops; false when it stopped.
    bool sleep_for(Duration d);
    bool sleep_until(TimePoint t);

  private:
    void run(TimePoint first);
    /// The pass, with what it throws logged; its wait.
    std::optional<Duration> guarded_pass();

    const std::string m_name;
    const Pass m_pass;
    const Options m_options;
    mutable std::mutex m_mu;
    std::condition_variable m_wake;  // the loop's thread: a notify or the stop
    std::condition_variable m_stop;  // sleep_for()/sleep_until(): the stop only
    bool m_pending = false;
    bool m_stopping = false;
    std::thread m_thread;
};

}  // namespace crcrd::core
