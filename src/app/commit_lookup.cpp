// The trunk grid's commit subjects from the mirror (commit_lookup.hpp).
#include "app/commit_lookup.hpp"

#include <spdlog/spdlog.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>

#include "crcrd/vcs/mirror.hpp"

namespace crcrd::app {

using nlohmann::json;

namespace {

constexpr std::size_t k_remembered = 20000;

/// How long a SHA the mirror did not have is not asked for again: git costs a page ~10 ms, and
/// the mirror fetches a trunk run's commit soon after its run is queued.
constexpr auto k_miss_ttl = std::chrono::minutes(5);

struct Remembered {
    std::mutex mu;
    std::map<std::string, json> commits;
    std::map<std::string, std::chrono::steady_clock::time_point> missed;  // sha → when
};

/// `git log` of `shas` (those the mirror has), one line each: SHA, subject, author, time.
json read_commits(const config::UpstreamConfig& up, const std::vector<std::string>& shas) {
    std::vector<std::string> args = {"log", "--no-walk=unsorted", "--ignore-missing",
                                     "--format=%H%x1f%s%x1f%an%x1f%cI"};
    args.insert(args.end(), shas.begin(), shas.end());
    json out = json::object();
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

}  // namespace

std::function<json(const std::vector<std::string>&)> commit_lookup(config::UpstreamConfig up) {
    up.git_timeout = std::chrono::seconds(5);  // a page waits for it
    auto memory = std::make_shared<Remembered>();
    return [up = std::move(up), memory](const std::vector<std::string>& shas) {
        json out = json::object();
        std::vector<std::string> missing;
        const auto now = std::chrono::steady_clock::now();
        {
            std::lock_guard lk(memory->mu);
            for (const auto& s : shas) {
                if (auto it = memory->commits.find(s); it != memory->commits.end()) {
                    out[s] = it->second;
                } else if (auto m = memory->missed.find(s);
                           m != memory->missed.end() && now - m->second < k_miss_ttl) {
                    continue;  // asked lately; the mirror did not have it
                } else if (s.size() == 40 &&
                           s.find_first_not_of("0123456789abcdef") == std::string::npos) {
                    missing.push_back(s);
                }
            }
        }
        std::error_code ec;
        if (missing.empty() || up.mirror.empty() || !std::filesystem::exists(up.mirror, ec))
            return out;
        const json found = read_commits(up, missing);
        std::lock_guard lk(memory->mu);
        if (memory->commits.size() + found.size() > k_remembered) memory->commits.clear();
        if (memory->missed.size() + missing.size() > k_remembered) memory->missed.clear();
        for (const auto& sha : missing) {
            if (!found.contains(sha)) memory->missed[sha] = now;
        }
        for (const auto& [sha, info] : found.items()) {
            memory->commits[sha] = info;
            memory->missed.erase(sha);
            out[sha] = info;
        }
        return out;
    };
}

}  // namespace crcrd::app
