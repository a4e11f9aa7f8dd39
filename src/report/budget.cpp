#include "crcrd/report/budget.hpp"

#include <algorithm>
#include <cmath>

namespace crcrd::report {

namespace {

bool earlier(const SpentRequest& a, const SpentRequest& b) {
    return a.at < b.at;
}

}  // namespace

RequestBudget::RequestBudget(std::vector<BudgetWindow> windows, std::vector<SpentRequest> past)
    : m_windows(std::move(windows)) {
    std::stable_sort(past.begin(), past.end(), earlier);
    m_spent.assign(past.begin(), past.end());
}

std::int64_t RequestBudget::used_in(const BudgetWindow& w, SystemTime now,
                                    std::int64_t from) const {
    // Requests at or after now − per still count: the window is (now − per, now].
    const auto first =
        std::upper_bound(m_spent.begin(), m_spent.end(), SpentRequest{now - w.per}, earlier);
    if (from <= 0) return static_cast<std::int64_t>(std::distance(first, m_spent.end()));
    return std::count_if(first, m_spent.end(),
                         [&](const SpentRequest& r) { return r.priority >= from; });
}

SystemTime RequestBudget::next_free(SystemTime now) const {
    SystemTime at = now;
    for (const auto& w : m_windows) {
        if (w.requests <= 0) continue;  // refused at load; no limit rather than no requests
        const std::int64_t used = used_in(w, now);
        if (used < w.requests) continue;
        // A place frees when the oldest of the newest `requests` requests leaves the window.
        const auto& oldest_kept = m_spent[m_spent.size() - static_cast<std::size_t>(w.requests)];
        at = std::max(at, oldest_kept.at + w.per);
    }
    return at;
}

void RequestBudget::spend(SystemTime at, std::int64_t priority) {
    // In order even when the wall clock stepped back.
    const SpentRequest r{at, priority};
    m_spent.insert(std::upper_bound(m_spent.begin(), m_spent.end(), r, earlier), r);
    if (m_windows.empty()) {
        m_spent.pop_front();
        return;
    }
    std::chrono::milliseconds longest{0};
    for (const auto& w : m_windows) longest = std::max(longest, w.per);
    const SystemTime newest = m_spent.back().at;
    while (!m_spent.empty() && m_spent.front().at <= newest - longest) m_spent.pop_front();
}

std::vector<RequestBudget::Left> RequestBudget::left(SystemTime now) const {
    std::vector<Left> out;
    for (const auto& w : m_windows) {
        const std::int64_t used = used_in(w, now);
        out.push_back({w, std::max<std::int64_t>(w.requests - used, 0), used});
    }
    return out;
}

bool RequestBudget::within_share(SystemTime now, std::int64_t priority, double share) const {
    for (const auto& w : m_windows) {
        if (w.requests <= 0) continue;
        const auto allowed =
            static_cast<std::int64_t>(std::floor(static_cast<double>(w.requests) * share));
        if (used_in(w, now, priority) >= allowed) return false;
    }
    return true;
}

StatusPriority status_priority(bool aggregate, bool final, bool shown) {
    if (final) return aggregate ? StatusPriority::aggregate_final : StatusPriority::tier_final;
    return shown ? StatusPriority::progress : StatusPriority::first_state;
}

double status_share(StatusPriority p) {
    switch (p) {
        case StatusPriority::aggregate_final:
            return 1.0;
        case StatusPriority::tier_final:
            return 0.6;
        case StatusPriority::first_state:
            return 0.35;
        case StatusPriority::progress:
            return 0.15;
    }
    return 1.0;
}

bool may_take(StatusPriority p, const RequestBudget& b, SystemTime now) {
    // A request of priority p uses its own share and each larger one that holds it.
    for (auto q = static_cast<std::int64_t>(p); q > 0; --q) {
        if (!b.within_share(now, q, status_share(static_cast<StatusPriority>(q)))) return false;
    }
    return true;
}

}  // namespace crcrd::report
