#include "crcrd/core/worker_loop.hpp"

#include <spdlog/spdlog.h>

namespace crcrd::core {

WorkerLoop::WorkerLoop(std::string name, Pass pass)
    : WorkerLoop(std::move(name), std::move(pass), Options{}) {}

WorkerLoop::WorkerLoop(std::string name, Pass pass, Options options)
    : m_name(std::move(name)), m_pass(std::move(pass)), m_options(options) {}

WorkerLoop::~WorkerLoop() {
    stop();
}

void WorkerLoop::start(Duration first) {
    const auto at = std::chrono::steady_clock::now() + first;
    m_thread = std::thread([this, at] { run(at); });
}

void WorkerLoop::notify() {
    {
        std::lock_guard lk(m_mu);
        m_pending = true;
    }
    m_wake.notify_one();
}

void WorkerLoop::request_stop() {
    {
        std::lock_guard lk(m_mu);
        m_stopping = true;
    }
    m_wake.notify_all();
    m_stop.notify_all();
}

void WorkerLoop::join() {
    if (m_thread.joinable() && m_thread.get_id() != std::this_thread::get_id()) m_thread.join();
}

void WorkerLoop::stop() {
    request_stop();
    join();
}

bool WorkerLoop::stopping() const {
    std::lock_guard lk(m_mu);
    return m_stopping;
}

bool WorkerLoop::sleep_for(Duration d) {
    return sleep_until(std::chrono::steady_clock::now() +
                       std::min(d, Duration(std::chrono::hours(24))));
}

bool WorkerLoop::sleep_until(TimePoint t) {
    std::unique_lock lk(m_mu);
    return !m_stop.wait_until(lk, t, [&] { return m_stopping; });
}

std::optional<WorkerLoop::Duration> WorkerLoop::guarded_pass() {
    try {
        return m_pass();
    } catch (const std::exception& e) {
        spdlog::error("{}: {}", m_name, e.what());
    } catch (...) {
        spdlog::error("{}: an exception that is not a std::exception", m_name);
    }
    return m_options.after_error;
}

void WorkerLoop::run(TimePoint next) {
    bool timed = true;  // `next` bounds the wait
    for (;;) {
        {
            std::unique_lock lk(m_mu);
            auto ready = [&] { return m_stopping || m_pending; };
            if (timed)
                m_wake.wait_until(lk, next, ready);
            else
                m_wake.wait(lk, ready);
            if (m_stopping) break;
            m_pending = false;
        }
        const auto wait = guarded_pass();
        // A wait of a day or more is one until notified (and `now + wait` cannot overflow).
        timed = wait.has_value() && *wait < std::chrono::hours(24);
        if (timed) next = std::chrono::steady_clock::now() + *wait;
    }
    if (m_options.last_pass_at_stop) guarded_pass();
}

}  // namespace crcrd::core
