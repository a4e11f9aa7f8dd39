#include "crcrd/report/sender.hpp"

#include "report/lane.hpp"

namespace crcrd::report {

SenderSettings sender_settings(const config::ReportConfig& r) {
    using std::chrono::duration_cast;
    using std::chrono::milliseconds;
    SenderSettings s;
    s.github = r.github;
    s.file = r.file;
    s.callback = r.crcr_callback;
    s.retry_initial = duration_cast<milliseconds>(r.retry_initial);
    s.retry_max = duration_cast<milliseconds>(r.retry_max);
    s.timeout = duration_cast<milliseconds>(r.timeout);
    s.min_interval = duration_cast<milliseconds>(r.min_interval);
    auto windows = [](const std::vector<config::BudgetWindowConfig>& in) {
        std::vector<BudgetWindow> out;
        for (const auto& w : in) out.push_back({w.requests, duration_cast<milliseconds>(w.per)});
        return out;
    };
    if (r.github) s.github_budget = windows(r.github->budget);
    if (r.crcr_callback) s.callback_budget = windows(r.crcr_callback->budget);
    return s;
}

nlohmann::json lanes_json(const std::vector<LaneState>& lanes) {
    using nlohmann::json;
    auto time = [](const std::optional<SystemTime>& t) { return t ? json(rfc3339(*t)) : json(); };
    json out = json::array();
    for (const auto& l : lanes) {
        json budget = json::array();
        for (const auto& w : l.budget) {
            budget.push_back({{"requests", w.window.requests},
                              {"per_seconds", w.window.per.count() / 1000.0},
                              {"used", w.used},
                              {"left", w.left}});
        }
        out.push_back({{"sink", to_string(l.sink)},
                       {"configured", l.configured},
                       {"paused_until", time(l.paused_until)},
                       {"next_send_at", time(l.next_send_at)},
                       {"budget", std::move(budget)},
                       {"budget_spent", l.budget_spent},
                       {"held_back", l.held_back},
                       {"requests", l.requests},
                       {"last_error", l.last_error.empty() ? json() : json(l.last_error)}});
    }
    return out;
}

Sender::Sender(store::Writer& writer, std::filesystem::path db_path, SenderSettings settings,
               const core::Clock& clock) {
    LaneDeps deps{writer, std::move(db_path), clock};
    m_lanes.push_back(make_github_lane(deps));
    m_lanes.push_back(make_callback_lane(deps));
    m_lanes.push_back(make_file_lane(deps));
    set_settings(std::move(settings));
}

Sender::~Sender() {
    stop();
}

void Sender::start() {
    for (auto& lane : m_lanes) lane->start();
}

void Sender::notify() {
    for (auto& lane : m_lanes) lane->notify();
}

void Sender::stop() {
    // All at once: a lane's request in flight does not hold up the others' stop.
    for (auto& lane : m_lanes) lane->request_stop();
    for (auto& lane : m_lanes) lane->stop();
}

void Sender::set_settings(SenderSettings settings) {
    auto shared = std::make_shared<const SenderSettings>(std::move(settings));
    for (auto& lane : m_lanes) lane->set_settings(shared);
}

std::vector<LaneState> Sender::lanes() const {
    std::vector<LaneState> out;
    for (const auto& lane : m_lanes) out.push_back(lane->state());
    return out;
}

}  // namespace crcrd::report
