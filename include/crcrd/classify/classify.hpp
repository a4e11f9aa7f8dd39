#pragma once
// The class of a finished job (docs/verdicts.md) from what the test command left behind: its
// exit, timeouts, its JUnit results and its log. Flaky reruns and run aggregation live in
// the scheduler; this decides one attempt.

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "crcrd/core/vocab.hpp"

namespace crcrd::classify {

struct Evidence {
    std::optional<int> exit_code;
    std::optional<int> signal;
    bool timed_out = false;
    bool stalled = false;
    bool cancelled = false;
    std::optional<std::string> junit_error;  // the parser's message for malformed JUnit
    std::size_t tests_total = 0;
    std::size_t tests_failed = 0;
    std::string log_text;  // the kept log (head and tail)
};

/// One attempt's class and why.
struct Classification {
    Conclusion conclusion = Conclusion::passed;
    std::string reason;                   // for people: which evidence decided it
    std::optional<std::string> log_line;  // the log line a pattern matched, when one decided it
    std::optional<std::string>
        signature;  // what a device pattern matched (e.g. RAS::PCI::BusFence)
};

/// The configured device and infra patterns (RE2 syntax, log_pattern.hpp), compiled once.
/// Immutable, cheap to copy (copies share the compiled form), safe to share between threads.
/// Default-constructed: no patterns.
class Patterns {
  public:
    struct Compiled;
    Patterns() = default;
    explicit Patterns(std::shared_ptr<const Compiled> compiled) : m_compiled(std::move(compiled)) {}
    const Compiled* compiled() const { return m_compiled.get(); }

  private:
    std::shared_ptr<const Compiled> m_compiled;
};

/// Compiles the configured patterns, each into its own RE2 and all of them into one RE2::Set,
/// so that a log is read once. The configuration refused patterns RE2 cannot compile: one
/// here is a broken invariant, std::invalid_argument naming it.
Patterns compile_patterns(const std::vector<std::string>& device,
                          const std::vector<std::string>& infra);

/// In order: cancelled; timeout (tier or stall); a device-failure signature in the log →
/// device_unavailable; malformed JUnit → infra_error; failed tests → regression; an infra
/// signature in the log of an attempt that failed (non-zero exit, signal, or no JUnit) →
/// infra_error; a non-zero exit or a signal without failed tests → infra_error; otherwise
/// passed.
Classification decide(const Evidence& e, const Patterns& p);

}  // namespace crcrd::classify
