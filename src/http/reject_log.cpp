#include "crcrd/http/reject_log.hpp"

namespace crcrd::http {

bool RejectLog::admit(const std::string& address, int status, Clock::time_point now) {
    std::lock_guard lk(m_mu);
    auto it = m_windows.find(address);
    if (it == m_windows.end()) {
        // Beyond the cap (a flood from very many addresses), all others share one window.
        const std::string key =
            m_windows.size() >= m_max_addresses ? std::string("(other addresses)") : address;
        it = m_windows.find(key);
        if (it == m_windows.end()) {
            m_windows.emplace(key, Window{now, 0, {}});
            return true;
        }
    }
    Window& w = it->second;
    if (now - w.start >= m_window && w.suppressed == 0) {
        w.start = now;  // a quiet window ended without anything to summarise: log this one
        return true;
    }
    ++w.suppressed;
    ++w.by_status[status];
    return false;
}

std::vector<std::string> RejectLog::flush(Clock::time_point now) {
    std::vector<std::string> lines;
    std::lock_guard lk(m_mu);
    for (auto it = m_windows.begin(); it != m_windows.end();) {
        if (now - it->second.start < m_window) {
            ++it;
            continue;
        }
        if (it->second.suppressed > 0) lines.push_back(summary(it->first, it->second));
        it = m_windows.erase(it);
    }
    return lines;
}

std::string RejectLog::summary(const std::string& address, const Window& w) const {
    std::string by;
    for (const auto& [status, n] : w.by_status)
        by += (by.empty() ? "" : ", ") + std::to_string(status) + " x" + std::to_string(n);
    return m_what + " from " + address + ": " + std::to_string(w.suppressed) +
           " more in the last " + std::to_string(m_window.count()) + " s not logged one by one (" +
           by + ")";
}

std::string address_of(const std::string& remote) {
    auto colon = remote.rfind(':');
    if (colon == std::string::npos) return remote;
    std::string a = remote.substr(0, colon);
    if (a.size() >= 2 && a.front() == '[' && a.back() == ']') a = a.substr(1, a.size() - 2);
    return a;
}

}  // namespace crcrd::http
