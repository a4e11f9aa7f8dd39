#pragma once
// Bisection of a trunk regression (docs/verdicts.md), the pure part: which
// commit of a range to run next, and what the range says so far. The commits are the mirror's
// first-parent commits after the good run's SHA up to the bad run's, oldest first; the last is
// the bad commit itself. Each commit carries what its bisect run said: nothing yet, the failing
// tests passed (good), they failed again (bad), or no verdict (skip: infra, device, timeout).

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "crcrd/core/vocab.hpp"

namespace crcrd::sched {

enum class Mark { unknown, good, bad, skip };

/// What a bisect run's class says of its commit: regression → bad; passed, flaky or
/// pre_existing → good (the failing tests can pass there); anything else → skip.
Mark mark_of(Conclusion conclusion);

struct BisectRange {
    /// The newest commit known good (-1: the good run's SHA, before the first commit) and the
    /// oldest known bad; the culprit lies in (good, bad].
    std::ptrdiff_t good = -1;
    std::size_t bad = 0;
    /// bad - good: the commits that may still be the culprit.
    std::size_t suspects() const {
        return static_cast<std::size_t>(static_cast<std::ptrdiff_t>(bad) - good);
    }
};

/// The range `marks` (one per commit, the last is bad whatever it says) narrows down to.
BisectRange narrow(const std::vector<Mark>& marks);

struct BisectStep {
    enum class Kind { test, found, exhausted } kind = Kind::exhausted;
    std::size_t index = 0;  // test: the commit to run; found: the culprit
};

/// The next step: `found` when one suspect is left; `test` of the unknown commit nearest the
/// middle of the suspects (which halves the largest unknown gap; a skipped commit is passed
/// over); `exhausted` when every commit that could split the range was skipped.
/// `marks` must not be empty.
BisectStep next_step(const std::vector<Mark>& marks);

}  // namespace crcrd::sched
