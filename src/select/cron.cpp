#include "crcrd/select/cron.hpp"

#include <charconv>
#include <ctime>
#include <sstream>
#include <vector>

namespace crcrd::select {

namespace {

std::vector<std::string> split(const std::string& s, char sep) {
    std::vector<std::string> out;
    std::string cur;
    std::istringstream in(s);
    while (std::getline(in, cur, sep)) out.push_back(cur);
    return out;
}

bool number(const std::string& s, int& out) {
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
    return ec == std::errc() && p == s.data() + s.size() && !s.empty();
}

/// Sets the bits of one field; returns false on any syntax or range error.
template <std::size_t N>
bool parse_field(const std::string& field, int lo, int hi, std::bitset<N>& bits, bool& any) {
    any = field == "*";
    for (const auto& item : split(field, ',')) {
        std::string range = item;
        int step = 1;
        if (auto slash = item.find('/'); slash != std::string::npos) {
            range = item.substr(0, slash);
            if (!number(item.substr(slash + 1), step) || step <= 0) return false;
        }
        int a = lo, b = hi;
        if (range != "*") {
            if (auto dash = range.find('-'); dash != std::string::npos) {
                if (!number(range.substr(0, dash), a) || !number(range.substr(dash + 1), b))
                    return false;
            } else {
                if (!number(range, a)) return false;
                b = (item.find('/') != std::string::npos) ? hi : a;
            }
        }
        if (a < lo || b > hi || a > b) return false;
        for (int v = a; v <= b; v += step) bits.set(static_cast<std::size_t>(v));
    }
    return true;
}

}  // namespace

Result<Cron> Cron::parse(const std::string& text) {
    std::istringstream in(text);
    std::vector<std::string> f;
    for (std::string w; in >> w;) f.push_back(w);
    if (f.size() != 5)
        return make_error(
            Errc::bad_cron,
            "'" + text + "' must have 5 fields: minute hour day-of-month month day-of-week");
    Cron c;
    c.m_text = text;
    bool any = false;
    if (!parse_field(f[0], 0, 59, c.m_minute, any))
        return make_error(Errc::bad_cron, "minute field '" + f[0] + "' is not valid (0-59)");
    if (!parse_field(f[1], 0, 23, c.m_hour, any))
        return make_error(Errc::bad_cron, "hour field '" + f[1] + "' is not valid (0-23)");
    if (!parse_field(f[2], 1, 31, c.m_dom, c.m_dom_any))
        return make_error(Errc::bad_cron, "day-of-month field '" + f[2] + "' is not valid (1-31)");
    if (!parse_field(f[3], 1, 12, c.m_month, any))
        return make_error(Errc::bad_cron, "month field '" + f[3] + "' is not valid (1-12)");
    if (!parse_field(f[4], 0, 7, c.m_dow, c.m_dow_any))
        return make_error(Errc::bad_cron, "day-of-week field '" + f[4] + "' is not valid (0-7)");
    if (c.m_dow.test(7)) c.m_dow.set(0);
    return c;
}

std::chrono::system_clock::time_point Cron::next_after(
    std::chrono::system_clock::time_point after) const {
    using namespace std::chrono;
    auto t = floor<minutes>(after) + minutes(1);
    // A year and a day of minutes covers every valid expression (e.g. Feb 29 needs up to 8
    // years; such an expression is allowed but the search gives up after 8 years).
    const auto limit = t + hours(24 * 366 * 8);
    while (t < limit) {
        std::time_t tt = system_clock::to_time_t(t);
        std::tm tm{};
        gmtime_r(&tt, &tm);
        if (!m_month.test(static_cast<std::size_t>(tm.tm_mon + 1))) {
            // Jump to the first minute of the next month.
            tm.tm_mon += 1;
            tm.tm_mday = 1;
            tm.tm_hour = 0;
            tm.tm_min = 0;
            tm.tm_sec = 0;
            t = floor<minutes>(system_clock::from_time_t(timegm(&tm)));
            continue;
        }
        bool dom = m_dom.test(static_cast<std::size_t>(tm.tm_mday));
        bool dow = m_dow.test(static_cast<std::size_t>(tm.tm_wday));
        bool day = (m_dom_any || m_dow_any) ? (dom && dow) : (dom || dow);
        if (!day) {
            tm.tm_mday += 1;
            tm.tm_hour = 0;
            tm.tm_min = 0;
            tm.tm_sec = 0;
            t = floor<minutes>(system_clock::from_time_t(timegm(&tm)));
            continue;
        }
        if (!m_hour.test(static_cast<std::size_t>(tm.tm_hour))) {
            t = floor<hours>(t) + hours(1);
            continue;
        }
        if (m_minute.test(static_cast<std::size_t>(tm.tm_min))) return t;
        t += minutes(1);
    }
    return system_clock::time_point::max();
}

}  // namespace crcrd::select
