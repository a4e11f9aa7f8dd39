// The trends' numbers (trends.hpp).
#include "trends.hpp"

#include <algorithm>
#include <map>
#include <set>

#include "crcrd/core/time.hpp"

namespace crcrd::admin {

using nlohmann::json;

namespace {

constexpr std::int64_t k_day_ms = 86'400'000;

/// A percentile of a day's waits: the upper bound of the bucket that holds it, or the last
/// bound and `longer` when it is in the open bucket beyond; null without waits.
struct Percentile {
    json at_most = nullptr;
    bool longer = false;
};

Percentile percentile(const std::map<std::int64_t, std::int64_t>& buckets, double q) {
    std::int64_t total = 0;
    for (const auto& [b, n] : buckets) total += n;
    if (total == 0) return {};
    const auto& bounds = store::k_wait_bounds_ms;
    std::int64_t seen = 0;
    for (const auto& [b, n] : buckets) {
        seen += n;
        if (static_cast<double>(seen) >= q * static_cast<double>(total)) {
            if (b < static_cast<std::int64_t>(bounds.size()))
                return {bounds[static_cast<std::size_t>(b)], false};
            break;
        }
    }
    return {bounds.back(), true};
}

/// A run the device-time and pass-rate charts count: one selection planned (a push, a
/// scheduled run or a pull request's) that completed, not cancelled.
bool selected_run(const std::string& event, const std::string& run_class) {
    return (event == "push" || event == "schedule" || event == "pull_request") &&
           run_class != "cancelled";
}

/// The day `n` days before `day` ("YYYY-MM-DD").
std::string days_before(const std::string& day, int n) {
    const auto t = parse_rfc3339(day + "T12:00:00Z");
    if (!t) return day;
    return rfc3339(*t - std::chrono::hours(24) * n).substr(0, 10);
}

}  // namespace

std::vector<std::string> last_days(std::chrono::system_clock::time_point now, int days) {
    std::vector<std::string> out;
    for (int i = days - 1; i >= 0; --i)
        out.push_back(rfc3339(now - std::chrono::hours(24) * i).substr(0, 10));
    return out;
}

std::string rollups_since(const std::vector<std::string>& days) {
    return days.empty() ? std::string() : days_before(days.front(), k_mean_days - 1);
}

json trends_json(const store::DailyRollups& r, const std::vector<std::string>& days,
                 const std::vector<std::string>& tiers, const std::vector<std::string>& slots,
                 std::chrono::system_clock::time_point now) {
    std::set<std::string> slot_names(slots.begin(), slots.end());
    for (const auto& b : r.busy)
        if (!days.empty() && b.day >= days.front()) slot_names.insert(b.slot);
    // Per tier and day: the selected runs' time on slots and the runs that ran it.
    std::map<std::string, std::map<std::string, std::pair<std::int64_t, std::int64_t>>> tier_days;
    for (const auto& t : r.tiers) {
        if (t.position < 0 || !selected_run(t.event, t.run_class) || t.conclusion == "cancelled")
            continue;
        auto& d = tier_days[t.tier][t.day];
        d.first += t.busy_ms;
        d.second += t.runs;
    }
    const std::string today = rfc3339(now).substr(0, 10);
    const auto midnight = parse_rfc3339(today + "T00:00:00Z");
    const std::int64_t today_ms =
        midnight
            ? std::max<std::int64_t>(
                  1, std::chrono::duration_cast<std::chrono::milliseconds>(now - *midnight).count())
            : k_day_ms;
    // Each day's rows, so that a year of days reads each row once.
    struct DayRows {
        std::vector<const store::DailyRunRow*> runs;
        std::vector<const store::DailyTierRow*> tiers;
        std::vector<const store::DailyBusyRow*> busy;
        std::vector<const store::DailyWaitRow*> waits;
    };
    std::map<std::string, DayRows> by_day;
    for (const auto& day : days) by_day[day];
    auto rows_of = [&](const std::string& day) -> DayRows* {
        const auto it = by_day.find(day);
        return it == by_day.end() ? nullptr : &it->second;
    };
    for (const auto& x : r.runs)
        if (auto* d = rows_of(x.day)) d->runs.push_back(&x);
    for (const auto& t : r.tiers)
        if (auto* d = rows_of(t.day)) d->tiers.push_back(&t);
    for (const auto& b : r.busy)
        if (auto* d = rows_of(b.day)) d->busy.push_back(&b);
    for (const auto& w : r.waits)
        if (auto* d = rows_of(w.day)) d->waits.push_back(&w);
    json out = json::array();
    for (const auto& day : days) {
        const DayRows& rows = by_day[day];
        json runs = json::object();
        std::int64_t total = 0, selected = 0;
        for (const auto* x_row : rows.runs) {
            const auto& x = *x_row;
            runs[x.conclusion] = runs.value(x.conclusion, 0) + x.runs;
            total += x.runs;
            if (selected_run(x.event, x.conclusion)) selected += x.runs;
        }
        std::map<std::string, std::pair<std::int64_t, std::int64_t>> pass;  // passed, counted
        std::int64_t runs_device = 0;
        for (const auto* t_row : rows.tiers) {
            const auto& t = *t_row;
            if (t.position < 0 || !selected_run(t.event, t.run_class)) continue;
            runs_device += t.busy_ms;
            if (t.conclusion == "cancelled") continue;
            auto& p = pass[t.tier];
            p.second += t.runs;
            if (t.conclusion == "passed" || t.conclusion == "flaky") p.first += t.runs;
        }
        json pass_rate = json::object();
        for (const auto& t : tiers) pass_rate[t] = nullptr;
        for (const auto& [t, p] : pass)
            pass_rate[t] = p.second ? json(static_cast<double>(p.first) / p.second) : json(nullptr);
        // Each tier's mean time per run over the k_mean_days days that end with this one.
        const std::string from = days_before(day, k_mean_days - 1);
        json tier_mean = json::object();
        std::int64_t every_tier = 0;
        for (const auto& t : tiers) {
            std::int64_t busy = 0, n = 0;
            if (const auto it = tier_days.find(t); it != tier_days.end()) {
                for (auto d = it->second.lower_bound(from);
                     d != it->second.end() && d->first <= day; ++d) {
                    busy += d->second.first;
                    n += d->second.second;
                }
            }
            tier_mean[t] = n ? json(busy / n) : json(nullptr);
            if (n) every_tier += busy / n;
        }
        std::map<std::string, std::int64_t> busy;
        std::int64_t device = 0;
        for (const auto* b_row : rows.busy) {
            const auto& b = *b_row;
            busy[b.slot] += b.busy_ms;
            if (b.position >= 0) device += b.busy_ms;
        }
        const std::int64_t wall = day == today ? today_ms : k_day_ms;
        json utilisation = json::object();
        for (const auto& s : slot_names) {
            const auto it = busy.find(s);
            const double used = it == busy.end() ? 0.0 : static_cast<double>(it->second);
            utilisation[s] = std::min(1.0, used / static_cast<double>(wall));
        }
        std::map<std::int64_t, std::int64_t> buckets;
        std::int64_t waited = 0, wait_ms = 0;
        for (const auto* w_row : rows.waits) {
            const auto& w = *w_row;
            if (w.position < 0) continue;  // the build stage waits for no card
            buckets[w.bucket] += w.n;
            waited += w.n;
            wait_ms += w.wait_ms;
        }
        const auto p50 = percentile(buckets, 0.5), p95 = percentile(buckets, 0.95);
        out.push_back({{"day", day},
                       {"runs", runs},
                       {"runs_total", total},
                       {"runs_selected", selected},
                       {"pass_rate", pass_rate},
                       {"waited", waited},
                       {"wait_ms", wait_ms},
                       {"wait_p50_ms", p50.at_most},
                       {"wait_p50_longer", p50.longer},
                       {"wait_p95_ms", p95.at_most},
                       {"wait_p95_longer", p95.longer},
                       {"utilisation", utilisation},
                       {"device_ms", device},
                       {"runs_device_ms", runs_device},
                       {"tier_mean_ms", tier_mean},
                       {"full_ms", selected * every_tier}});
    }
    return {{"days", out},
            {"tiers", tiers},
            {"slots", std::vector<std::string>(slot_names.begin(), slot_names.end())},
            {"wait_bounds_ms", store::k_wait_bounds_ms}};
}

}  // namespace crcrd::admin
