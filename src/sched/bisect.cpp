#include "crcrd/sched/bisect.hpp"

namespace crcrd::sched {

Mark mark_of(Conclusion conclusion) {
    switch (conclusion) {
        case Conclusion::regression:
            return Mark::bad;
        case Conclusion::passed:
        case Conclusion::flaky:
        case Conclusion::pre_existing:
            return Mark::good;
        default:
            return Mark::skip;
    }
}

BisectRange narrow(const std::vector<Mark>& marks) {
    BisectRange r;
    r.bad = marks.empty() ? 0 : marks.size() - 1;
    for (std::size_t i = 0; i < r.bad; ++i) {
        if (marks[i] == Mark::bad) {
            r.bad = i;
            break;
        }
    }
    // A good commit after a bad one (a test that broke and was fixed in between) does not
    // move the range: the newest good below the oldest bad does.
    for (std::size_t i = 0; i < r.bad; ++i)
        if (marks[i] == Mark::good) r.good = static_cast<std::ptrdiff_t>(i);
    return r;
}

BisectStep next_step(const std::vector<Mark>& marks) {
    const BisectRange r = narrow(marks);
    if (r.suspects() <= 1) return {BisectStep::Kind::found, r.bad};
    // The commits strictly between good and bad are unknown or skipped; the one nearest the
    // middle halves the range (ties: the older one, as git bisect does).
    const std::ptrdiff_t mid = r.good + static_cast<std::ptrdiff_t>(r.suspects() / 2);
    std::optional<std::size_t> best;
    std::ptrdiff_t best_distance = 0;
    for (auto i = r.good + 1; i < static_cast<std::ptrdiff_t>(r.bad); ++i) {
        if (marks[static_cast<std::size_t>(i)] != Mark::unknown) continue;
        const std::ptrdiff_t d = i > mid ? i - mid : mid - i;
        if (!best || d < best_distance) {
            best = static_cast<std::size_t>(i);
            best_distance = d;
        }
    }
    if (!best) return {BisectStep::Kind::exhausted, r.bad};
    return {BisectStep::Kind::test, *best};
}

}  // namespace crcrd::sched
