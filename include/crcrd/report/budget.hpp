#pragma once
// What a reporting lane may send and in which order (docs/reporting.md, "Lanes and budget"):
// a request budget over sliding windows (GitHub's 80 a minute and 500 an hour, the relay's 100 a
// minute per repository), and the priority of a GitHub status. Pure: the lanes feed them times
// and rows; nothing here reads a clock or the database.

#include <chrono>
#include <cstdint>
#include <deque>
#include <vector>

#include "crcrd/core/time.hpp"
#include "crcrd/core/vocab.hpp"

namespace crcrd::report {

/// At most `requests` requests in any span of `per`.
struct BudgetWindow {
    std::int64_t requests = 0;
    std::chrono::milliseconds per{0};
    bool operator==(const BudgetWindow&) const = default;
};

/// One request a lane made: when, and the priority of the row it carried (a StatusPriority for
/// the GitHub lane, 0 for the others).
struct SpentRequest {
    SystemTime at;
    std::int64_t priority = 0;
};

/// The requests a lane made, counted against its windows. Made from the requests of the
/// longest window that the database remembers, so that a restart does not start afresh.
class RequestBudget {
  public:
    RequestBudget() = default;
    /// `past`: earlier requests, in any order. No window: no limit.
    RequestBudget(std::vector<BudgetWindow> windows, std::vector<SpentRequest> past);

    /// The earliest time, `now` or later, at which one more request keeps every window within
    /// its count.
    SystemTime next_free(SystemTime now) const;
    /// Records a request made at `at` for a row of priority `priority`.
    void spend(SystemTime at, std::int64_t priority = 0);
    /// What is left of each window at `now`, in the order of the windows.
    struct Left {
        BudgetWindow window;
        std::int64_t left = 0;
        std::int64_t used = 0;
    };
    std::vector<Left> left(SystemTime now) const;
    /// Whether the requests for rows of priority `priority` or lower (a larger number) stay
    /// below `share` (a fraction, rounded down to whole requests) of every window at `now`.
    bool within_share(SystemTime now, std::int64_t priority, double share) const;
    const std::vector<BudgetWindow>& windows() const { return m_windows; }

  private:
    /// Requests within `w` at `now` for rows of priority `from` or lower.
    std::int64_t used_in(const BudgetWindow& w, SystemTime now, std::int64_t from = 0) const;
    std::vector<BudgetWindow> m_windows;
    std::deque<SpentRequest> m_spent;  // oldest first; only those within the longest window
};

/// The order in which the GitHub lane sends waiting statuses: lower first, then newer runs
/// before older ones. A final state is never skipped; a progress update may wait for the
/// budget and be replaced (coalesced) by its context's next state.
enum class StatusPriority : std::int64_t {
    aggregate_final = 0,  // the run's own context (`<prefix>`) got its verdict
    tier_final = 1,       // a tier's (or base check's) context got its verdict
    first_state = 2,      // the first state GitHub will show for this context
    progress = 3,         // a later `pending`: "running smoke (2 of 3)"
};

/// The priority of a status row: `aggregate` when its context is the run's own, `final` when its
/// state is not `pending`, `shown` when an earlier state of the same context was sent to GitHub.
StatusPriority status_priority(bool aggregate, bool final, bool shown);

/// The share of every budget window that statuses of a priority and all lower ones may use
/// together (docs/reporting.md, "Lanes and budget"): the run's verdict (aggregate final) all
/// of it, tier finals and below 60 %, first states and progress 35 %, progress alone 15 %. The
/// 40 % only verdicts may use is what keeps a verdict from waiting on the budget: at GitHub's
/// 500 an hour and 80 a minute, 200 verdicts an hour and 32 a minute, whatever else waits.
double status_share(StatusPriority p);

/// Whether a status of priority `p` may take one of the budget's requests at `now`: whether,
/// for `p` and every higher priority but the verdict's, the requests made for it and the
/// priorities below it stay within its status_share of every window (the budget as a whole
/// having a request left is checked by the lane before each request).
bool may_take(StatusPriority p, const RequestBudget& b, SystemTime now);

}  // namespace crcrd::report
