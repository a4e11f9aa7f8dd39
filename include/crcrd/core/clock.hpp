#pragma once
// The wall clock, as a decision reads it. Components whose decisions depend on the time (the
// dispatcher's waits and leases, the sender's back-off and pauses, recovery's passes) take a
// `const Clock&`, so that tests can set the time (tests/support FakeClock) instead of waiting.

#include "crcrd/core/time.hpp"

namespace crcrd::core {

class Clock {
  public:
    virtual ~Clock() = default;
    virtual SystemTime now() const = 0;
    /// rfc3339(now()).
    std::string now_text() const { return rfc3339(now()); }
};

/// The machine's clock (std::chrono::system_clock).
const Clock& system_clock();

}  // namespace crcrd::core
