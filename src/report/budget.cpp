#include "crcrd/report/budget.hpp"

#include <algorithm>
#include <cmath>

namespace crcrd::report {

RequestBudget::RequestBudget(std::vector<BudgetWindow> windows, std::vector<SystemTime> past)
    : m_windows(std::move(windows)) {
    std::sort(past.begin(), past.end());
    m_times.assign(past.begin(), past.end());
}

std::int64_t RequestBudget::used_in(const BudgetWindow& w, SystemTime now) const {
    // Requests at or after now − per still count: the window is (now − per, now].
    const auto from = now - w.per;
    const auto first = std::upper_bound(m_times.begin(), m_times.end(), from);
    return static_cast<std::int64_t>(std::distance(first, m_times.end()));
}

SystemTime RequestBudget::next_free(SystemTime now) const {
    SystemTime at = now;
    for (const auto& w : m_windows) {
        if (w.requests <= 0) continue;  // refused at load; no limit rather than no requests
        const std::int64_t used = used_in(w, now);
        if (used < w.requests) continue;
        // A place frees when the oldest of the newest `requests` requests leaves the window.
        const auto& oldest_kept = m_times[m_times.size() - static_cast<std::size_t>(w.requests)];
        at = std::max(at, oldest_kept + w.per);
    }
    return at;
}

void RequestBudget::spend(SystemTime at) {
    // In order even when the wall clock stepped back.
    m_times.insert(std::upper_bound(m_times.begin(), m_times.end(), at), at);
    if (m_windows.empty()) {
        m_times.pop_front();
        return;
    }
    std::chrono::milliseconds longest{0};
    for (const auto& w : m_windows) longest = std::max(longest, w.per);
    const SystemTime newest = m_times.back();
    while (!m_times.empty() && m_times.front() <= newest - longest) m_times.pop_front();
}

std::vector<RequestBudget::Left> RequestBudget::left(SystemTime now) const {
    std::vector<Left> out;
    for (const auto& w : m_windows) {
        const std::int64_t used = used_in(w, now);
        out.push_back({w, std::max<std::int64_t>(w.requests - used, 0), used});
    }
    return out;
}

bool RequestBudget::above_reserve(SystemTime now, double reserve) const {
    for (const auto& l : left(now)) {
        const auto kept =
            static_cast<std::int64_t>(std::ceil(static_cast<double>(l.window.requests) * reserve));
        if (l.left <= kept) return false;
    }
    return true;
}

StatusPriority status_priority(bool aggregate, bool final, bool shown) {
    if (final) return aggregate ? StatusPriority::aggregate_final : StatusPriority::tier_final;
    return shown ? StatusPriority::progress : StatusPriority::first_state;
}

bool may_take(StatusPriority p, const RequestBudget& b, SystemTime now) {
    switch (p) {
        case StatusPriority::aggregate_final:
        case StatusPriority::tier_final:
            return true;
        case StatusPriority::first_state:
            return b.above_reserve(now, 0.1);
        case StatusPriority::progress:
            return b.above_reserve(now, 0.25);
    }
    return true;
}

}  // namespace crcrd::report
