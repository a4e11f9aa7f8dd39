#pragma once
// A clock a test sets: decisions that depend on the time are tested without waiting.

#include <atomic>

#include "crcrd/core/clock.hpp"

namespace crcrd {

class FakeClock final : public core::Clock {
  public:
    explicit FakeClock(SystemTime start) : m_now(start.time_since_epoch().count()) {}
    SystemTime now() const override {
        m_reads.fetch_add(1);
        return SystemTime(SystemTime::duration(m_now.load()));
    }
    void advance(SystemTime::duration d) { m_now.fetch_add(d.count()); }
    /// How many times now() was read: a component read it after this many (a pass happened).
    long reads() const { return m_reads.load(); }

  private:
    std::atomic<SystemTime::rep> m_now;
    mutable std::atomic<long> m_reads{0};
};

}  // namespace crcrd
