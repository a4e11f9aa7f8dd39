// The trunk grid's commit subjects from the mirror (commit_lookup.hpp).
#include "app/commit_lookup.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <filesystem>

#include "crcrd/vcs/mirror.hpp"

namespace crcrd::app {

using nlohmann::json;

namespace {

constexpr std::size_t k_remembered = 20000;

/// How long a SHA the mirror did not have is not asked for again: git costs a page ~10 ms, and
/// the mirror fetches a trunk run's commit soon after its run is queued.
constexpr auto k_miss_ttl = std::chrono::minutes(5);

/// How long a caller waits for the SHAs another caller is reading: a page's git takes ~10 ms.
constexpr auto k_join_wait = std::chrono::milliseconds(250);

/// `s` with each byte sequence that is not UTF-8 replaced by U+FFFD: git prints a commit's
/// message and author as stored, and the API's JSON is strict.
std::string valid_utf8(const std::string& s) {
    return json::parse(json(s).dump(-1, ' ', false, json::error_handler_t::replace))
        .get<std::string>();
}

/// `git log` of `shas` (those the mirror has), one line each: SHA, subject, author, time.
json read_commits(const config::UpstreamConfig& up, const std::vector<std::string>& shas) {
    json out = json::object();
    std::error_code ec;
    if (up.mirror.empty() || !std::filesystem::exists(up.mirror, ec)) return out;
    std::vector<std::string> args = {"log", "--no-walk=unsorted", "--ignore-missing",
                                     "--format=%H%x1f%s%x1f%an%x1f%cI"};
    args.insert(args.end(), shas.begin(), shas.end());
    auto r = vcs::git(up, args);
    if (!r) {
        spdlog::debug("trunk: no commit subjects from the mirror: {}", r.error().message);
        return out;
    }
    std::size_t at = 0;
    while (at < r->out.size()) {
        const auto end = r->out.find('\n', at);
        const std::string line = r->out.substr(at, end == std::string::npos ? end : end - at);
        at = end == std::string::npos ? r->out.size() : end + 1;
        std::vector<std::string> f;
        std::size_t from = 0;
        for (auto sep = line.find('\x1f'); sep != std::string::npos;
             sep = line.find('\x1f', from)) {
            f.push_back(line.substr(from, sep - from));
            from = sep + 1;
        }
        f.push_back(line.substr(from));
        if (f.size() == 4)
            out[f[0]] = {{"subject", f[1]}, {"author", f[2]}, {"committed_at", f[3]}};
    }
    return out;
}

bool is_sha(const std::string& s) {
    return s.size() == 40 && s.find_first_not_of("0123456789abcdef") == std::string::npos;
}

}  // namespace

CommitLookup::CommitLookup(Reader read) : m_read(read ? std::move(read) : Reader(read_commits)) {}

void CommitLookup::set_upstream(config::UpstreamConfig up) {
    up.git_timeout = std::chrono::seconds(5);  // a page waits for it
    std::lock_guard lk(m_mu);
    if (up.mirror != m_up.mirror) m_missed.clear();
    m_up = std::move(up);
}

json CommitLookup::lookup(const std::vector<std::string>& shas) {
    json out = json::object();
    std::vector<std::string> missing;
    const auto now = std::chrono::steady_clock::now();
    config::UpstreamConfig up;
    {
        std::unique_lock lk(m_mu);
        // Another caller reading some of them: wait a little for its answer rather than run
        // a second git for the same commits.
        m_read_done.wait_for(lk, k_join_wait, [&] {
            for (const auto& s : shas)
                if (m_in_flight.count(s)) return false;
            return true;
        });
        for (const auto& s : shas) {
            if (auto it = m_commits.find(s); it != m_commits.end()) {
                out[s] = it->second;
            } else if (auto m = m_missed.find(s);
                       m != m_missed.end() && now - m->second < k_miss_ttl) {
                continue;  // asked lately; the mirror did not have it
            } else if (is_sha(s) && !m_in_flight.count(s) &&
                       std::find(missing.begin(), missing.end(), s) == missing.end()) {
                missing.push_back(s);
            }
        }
        if (missing.empty()) return out;
        m_in_flight.insert(missing.begin(), missing.end());
        up = m_up;
    }
    json found = json::object();
    try {
        found = m_read(up, missing);
    } catch (const std::exception& e) {
        spdlog::warn("trunk: no commit subjects from the mirror: {}", e.what());
    }
    {
        std::lock_guard lk(m_mu);
        for (const auto& sha : missing) m_in_flight.erase(sha);
        if (m_commits.size() + found.size() > k_remembered) m_commits.clear();
        if (m_missed.size() + missing.size() > k_remembered) m_missed.clear();
        for (const auto& sha : missing) {
            if (!found.contains(sha)) m_missed[sha] = now;
        }
        for (const auto& [sha, info] : found.items()) {
            json clean = json::object();
            for (const auto& [k, v] : info.items())
                clean[k] = v.is_string() ? json(valid_utf8(v.get<std::string>())) : v;
            m_commits[sha] = clean;
            m_missed.erase(sha);
            out[sha] = std::move(clean);
        }
    }
    m_read_done.notify_all();
    return out;
}

}  // namespace crcrd::app
