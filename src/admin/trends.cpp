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

/// The upper bound of the bucket holding the `q` quantile of `buckets` (bucket → count).
json percentile(const std::map<std::int64_t, std::int64_t>& buckets, double q) {
    std::int64_t total = 0;
    for (const auto& [b, n] : buckets) total += n;
    if (total == 0) return nullptr;
    std::int64_t seen = 0;
    for (const auto& [b, n] : buckets) {
        seen += n;
        if (static_cast<double>(seen) >= q * static_cast<double>(total)) {
            const auto& bounds = store::k_wait_bounds_ms;
            return b < static_cast<std::int64_t>(bounds.size())
                       ? bounds[static_cast<std::size_t>(b)]
                       : bounds.back();
        }
    }
    return store::k_wait_bounds_ms.back();
}

bool telling(const std::string& conclusion) {
    return conclusion != "cancelled";
}

}  // namespace

std::vector<std::string> last_days(std::chrono::system_clock::time_point now, int days) {
    std::vector<std::string> out;
    for (int i = days - 1; i >= 0; --i)
        out.push_back(rfc3339(now - std::chrono::hours(24) * i).substr(0, 10));
    return out;
}

json trends_json(const store::DailyRollups& r, const std::vector<std::string>& days,
                 const std::vector<std::string>& tiers, const std::vector<std::string>& slots,
                 std::chrono::system_clock::time_point now) {
    // The mean time of an attempt of each tier over the window (on a slot, not cancelled).
    std::map<std::string, std::pair<std::int64_t, std::int64_t>> tier_time;  // busy, attempts
    std::set<std::string> slot_names(slots.begin(), slots.end());
    for (const auto& j : r.jobs) {
        if (!j.slot.empty()) slot_names.insert(j.slot);
        if (j.slot.empty() || j.position < 0 || !telling(j.conclusion)) continue;
        tier_time[j.tier].first += j.busy_ms;
        tier_time[j.tier].second += j.jobs;
    }
    double full_run_ms = 0;
    for (const auto& t : tiers) {
        const auto it = tier_time.find(t);
        if (it != tier_time.end() && it->second.second > 0)
            full_run_ms += static_cast<double>(it->second.first) / it->second.second;
    }
    const std::string today = rfc3339(now).substr(0, 10);
    const auto midnight = parse_rfc3339(today + "T00:00:00Z");
    const std::int64_t today_ms =
        midnight
            ? std::max<std::int64_t>(
                  1, std::chrono::duration_cast<std::chrono::milliseconds>(now - *midnight).count())
            : k_day_ms;
    json out = json::array();
    for (const auto& day : days) {
        json runs = json::object();
        std::int64_t total = 0, counted_runs = 0;
        for (const auto& x : r.runs) {
            if (x.day != day) continue;
            runs[x.conclusion] = runs.value(x.conclusion, 0) + x.runs;
            total += x.runs;
            if (x.event != "bisect") counted_runs += x.runs;
        }
        std::map<std::string, std::pair<std::int64_t, std::int64_t>> pass;  // passed, telling
        std::map<std::string, std::int64_t> busy;
        std::int64_t spent = 0;
        for (const auto& j : r.jobs) {
            if (j.day != day) continue;
            if (j.position >= 0 && telling(j.conclusion)) {
                auto& p = pass[j.tier];
                p.second += j.jobs;
                if (j.conclusion == "passed" || j.conclusion == "flaky") p.first += j.jobs;
            }
            if (!j.slot.empty()) {
                busy[j.slot] += j.busy_ms;
                if (j.position >= 0) spent += j.busy_ms;
            }
        }
        json pass_rate = json::object();
        for (const auto& t : tiers) pass_rate[t] = nullptr;
        for (const auto& [t, p] : pass)
            pass_rate[t] = p.second ? json(static_cast<double>(p.first) / p.second) : json(nullptr);
        const std::int64_t wall = day == today ? today_ms : k_day_ms;
        json utilisation = json::object();
        for (const auto& s : slot_names)
            utilisation[s] = static_cast<double>(busy.count(s) ? busy[s] : 0) / wall;
        std::map<std::int64_t, std::int64_t> buckets;
        for (const auto& w : r.waits)
            if (w.day == day) buckets[w.bucket] += w.n;
        std::int64_t waited = 0;
        for (const auto& [b, n] : buckets) waited += n;
        out.push_back({{"day", day},
                       {"runs", runs},
                       {"runs_total", total},
                       {"pass_rate", pass_rate},
                       {"waited", waited},
                       {"wait_p50_ms", percentile(buckets, 0.5)},
                       {"wait_p95_ms", percentile(buckets, 0.95)},
                       {"utilisation", utilisation},
                       {"device_ms", spent},
                       {"full_ms", static_cast<std::int64_t>(full_run_ms * counted_runs)}});
    }
    return {{"days", out},
            {"tiers", tiers},
            {"slots", std::vector<std::string>(slot_names.begin(), slot_names.end())},
            {"wait_bounds_ms", store::k_wait_bounds_ms}};
}

}  // namespace crcrd::admin
