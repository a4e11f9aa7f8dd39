#include "crcrd/sched/planner.hpp"

#include <future>

#include <spdlog/spdlog.h>


#include "crcrd/core/time.hpp"
#include "crcrd/store/runs.hpp"
#include "crcrd/vcs/mirror.hpp"

namespace crcrd::sched {

using nlohmann::json;

namespace {

std::vector<select::RunRef> unplanned(const std::filesystem::path& db_path, std::vector<std::int64_t>& ids) {
    std::vector<select::RunRef> out;
    auto rows = store::unplanned_runs(db_path);
    if (!rows) {
        spdlog::error("planner: {}", rows.error().message);
        return out;
    }
    for (auto& row : *rows) {
        select::RunRef r;
        ids.push_back(row.id);
        r.event = std::move(row.event);
        r.sha = std::move(row.sha);
        r.pr = row.pr;
        r.ref = std::move(row.ref);
        r.base_ref = std::move(row.base_ref);
        r.base_sha = std::move(row.base_sha);
        r.inputs = json::parse(row.inputs_json, nullptr, false);
        if (!r.inputs.is_object()) r.inputs = json::object();
        out.push_back(std::move(r));
    }
    return out;
}

}  // namespace

std::vector<store::PlannedJob> plan_jobs(const select::Selection& sel, const select::Rules& rules) {
    std::vector<store::PlannedJob> jobs;
    for (const auto& t : sel.tiers) {
        std::int64_t position = 0;
        for (std::size_t i = 0; i < rules.tiers.size(); ++i)
            if (rules.tiers[i].name == t.name) position = static_cast<std::int64_t>(i);
        const select::Tier* tier = rules.tier(t.name);
        jobs.push_back(store::PlannedJob{t.name, position, json(t.tests).dump(),
                                         static_cast<std::int64_t>(tier ? tier->timeout.count() : 3'600'000),
                                         json(tier ? tier->labels : std::vector<std::string>{}).dump()});
    }
    return jobs;
}

Planner::Planner(store::Writer& writer, std::filesystem::path db_path, std::shared_ptr<const PlannerConfig> cfg)
    : m_writer(writer),
      m_db_path(db_path),
      m_cfg(std::move(cfg)),
      m_full_matrix(writer, db_path, [this](const std::string& ref) -> Result<std::string> {
          auto c = config();
          if (!c) return make_error("git", "no configuration");
          return vcs::newest_sha(c->sources.upstream, ref);
      }) {}

Planner::~Planner() { stop(); }

void Planner::start() {
    m_thread = std::thread([this] { loop(); });
}

void Planner::notify() {
    {
        std::lock_guard lk(m_mu);
        m_pending = true;
    }
    m_cv.notify_one();
}

void Planner::set_config(std::shared_ptr<const PlannerConfig> cfg) {
    std::lock_guard lk(m_mu);
    m_cfg = std::move(cfg);
}

std::shared_ptr<const PlannerConfig> Planner::config() const {
    std::lock_guard lk(m_mu);
    return m_cfg;
}

void Planner::stop() {
    {
        std::lock_guard lk(m_mu);
        m_stopping = true;
    }
    m_cv.notify_one();
    if (m_thread.joinable()) m_thread.join();
}

void Planner::loop() {
    for (;;) {
        {
            std::unique_lock lk(m_mu);
            m_cv.wait_for(lk, std::chrono::seconds(5), [&] { return m_stopping || m_pending; });
            if (m_stopping) return;
            m_pending = false;
        }
        try {
            if (auto cfg = config(); cfg && cfg->rules) m_full_matrix.tick(*cfg->rules);
            // Followups may queue runs (bisection): those are planned in the same wake-up.
            do {
                while (plan_pending() > 0) {
                    if (m_on_planned) m_on_planned();
                    std::lock_guard lk(m_mu);
                    if (m_stopping) return;
                }
            } while (follow_up() > 0);
        } catch (const std::exception& e) {
            // The database unreadable for a moment, a bug: the next wake-up tries again.
            spdlog::error("planner: {}", e.what());
        }
    }
}

std::size_t Planner::follow_up() {
    auto cfg = config();
    if (!cfg || !cfg->rules) return 0;
    FollowupContext ctx{m_writer, m_db_path, *cfg->rules, cfg->sources, cfg->bisect};
    return m_followups.handle(ctx);
}

namespace {

/// A bisect run's one tier runs the bad run's tests (`tier_tests` of its inputs), so a tier
/// that passed on that SHA with them may be reused (§5.4); its job reruns only the failing
/// ones (the dispatcher gives them as CRCR_RERUN_FILE).
void bisect_tests(select::Selection& sel, const json& inputs) {
    auto t = inputs.find("tier_tests");
    if (t == inputs.end() || !t->is_array()) return;
    std::vector<std::string> tests;
    for (const auto& v : *t)
        if (v.is_string()) tests.push_back(v);
    for (auto& tier : sel.tiers) tier.tests = tests;
}

}  // namespace

std::size_t Planner::plan_pending() {
    auto cfg = config();
    if (!cfg || !cfg->rules) return 0;
    std::vector<std::int64_t> ids;
    auto runs = unplanned(m_db_path, ids);
    // Each plan is submitted as soon as it is decided, without waiting for the one before:
    // the writer commits whatever is queued together (one fsync for a burst of runs).
    struct Pending {
        std::int64_t id;
        std::string sha, summary;
        bool stored = false;
        std::promise<Status> done;
        std::future<Status> result = done.get_future();
    };
    std::vector<std::unique_ptr<Pending>> pending;
    for (std::size_t i = 0; i < runs.size(); ++i) {
        auto changed = select::resolve_changed_paths(runs[i], cfg->sources);
        std::vector<std::string> requested;
        if (auto t = runs[i].inputs.find("tiers"); t != runs[i].inputs.end() && t->is_array()) {
            for (const auto& name : *t)
                if (name.is_string()) requested.push_back(name);
        }
        auto sel = select::decide(*cfg->rules, changed, runs[i].event, requested);
        if (runs[i].event == "bisect") bisect_tests(sel, runs[i].inputs);
        auto p = std::make_unique<Pending>();
        p->id = ids[i];
        p->sha = runs[i].sha;
        std::string tiers;
        for (const auto& t : sel.tiers) tiers += (tiers.empty() ? "" : ",") + t.name;
        p->summary = "source=" + std::string(select::to_string(sel.source)) + " changed_paths=" +
                     std::to_string(sel.changed_paths) + " tiers=" + (tiers.empty() ? "-" : tiers);
        auto* raw = p.get();
        auto rules = cfg->rules;
        bool queued = m_writer.submit(
            [raw, sel = sel.to_json_text(), jobs = plan_jobs(sel, *rules), nothing = "nothing to run: " + sel.reason](
                store::Db& db) { raw->stored = store::RunsRepo(db).store_plan(raw->id, sel, jobs, nothing, now_rfc3339()); },
            [raw](Status s) { raw->done.set_value(std::move(s)); });
        if (!queued) {
            spdlog::warn("planner: the writer is overloaded; planning resumes later");
            break;
        }
        pending.push_back(std::move(p));
    }
    std::size_t planned = 0;
    for (auto& p : pending) {
        auto status = p->result.get();
        if (!status) {
            spdlog::error("planner: run_id={} could not be stored: {}", p->id, status.error().message);
            continue;
        }
        ++planned;
        spdlog::info("planned run_id={} sha={} {} {}", p->id, p->sha, p->summary, p->stored ? "" : "(cancelled meanwhile)");
    }
    return planned;
}

}  // namespace crcrd::sched
