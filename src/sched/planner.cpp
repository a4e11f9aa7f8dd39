#include "crcrd/sched/planner.hpp"

#include <deque>
#include <future>
#include <map>
#include <system_error>
#include <utility>

#include <spdlog/spdlog.h>

#include "crcrd/core/time.hpp"
#include "crcrd/store/runs.hpp"
#include "crcrd/vcs/mirror.hpp"

namespace crcrd::sched {

using nlohmann::json;

/// The threads that look changed paths up for the planner, started at the first look-ups and
/// kept: a thread started and ended for each look-up cost more than a fast look-up on this
/// VM (its stack mapped and unmapped, the TLB shootdowns), about 0.3 ms each.
class Planner::LookupPool {
  public:
    explicit LookupPool(std::size_t threads) : m_size(threads) {}
    ~LookupPool() {
        {
            std::lock_guard lk(m_mu);
            m_stopping = true;
        }
        m_cv.notify_all();
        for (auto& t : m_threads) t.join();
    }

    /// Runs `fn` on one of the threads; std::system_error when there is none and none can start.
    std::future<select::ChangedPaths> submit(std::function<select::ChangedPaths()> fn) {
        std::packaged_task<select::ChangedPaths()> task(std::move(fn));
        auto answer = task.get_future();
        {
            std::lock_guard lk(m_mu);
            if (m_threads.size() < m_size) {
                try {
                    m_threads.emplace_back([this] { work(); });
                } catch (const std::system_error&) {
                    if (m_threads.empty()) throw;  // the threads there are will do
                }
            }
            m_tasks.push_back(std::move(task));
        }
        m_cv.notify_one();
        return answer;
    }

  private:
    void work() {
        for (;;) {
            std::packaged_task<select::ChangedPaths()> task;
            {
                std::unique_lock lk(m_mu);
                m_cv.wait(lk, [&] { return m_stopping || !m_tasks.empty(); });
                if (m_tasks.empty()) return;
                task = std::move(m_tasks.front());
                m_tasks.pop_front();
            }
            task();  // an exception goes to the future
        }
    }

    const std::size_t m_size;
    std::mutex m_mu;
    std::condition_variable m_cv;
    std::deque<std::packaged_task<select::ChangedPaths()>> m_tasks;
    std::vector<std::thread> m_threads;
    bool m_stopping = false;
};

namespace {

select::RunRef run_ref(store::UnplannedRun&& row) {
    select::RunRef r;
    r.event = std::move(row.event);
    r.sha = std::move(row.sha);
    r.pr = row.pr;
    r.ref = std::move(row.ref);
    r.base_ref = std::move(row.base_ref);
    r.base_sha = std::move(row.base_sha);
    r.inputs = json::parse(row.inputs_json, nullptr, false);
    if (!r.inputs.is_object()) r.inputs = json::object();
    return r;
}

/// Everything resolve_changed_paths() reads of a run: runs with the same key get the same answer
/// when they are looked up at the same time.
std::string lookup_key(const select::RunRef& r) {
    std::string key(to_string(r.event));
    for (const std::string* part : {&r.sha, &r.ref, &r.base_ref, &r.base_sha})
        key.append(1, '\0').append(*part);
    key.append(1, '\0').append(r.pr ? std::to_string(*r.pr) : "-");
    key.append(1, '\0').append(r.inputs.dump());
    return key;
}

std::vector<select::RunRef> unplanned(store::UnplannedReader& reader, int limit,
                                      std::vector<std::int64_t>& ids) {
    std::vector<select::RunRef> out;
    auto rows = reader.next(limit);
    if (!rows) {
        spdlog::error("planner: {}", rows.error().message);
        return out;
    }
    for (auto& row : *rows) {
        ids.push_back(row.id);
        out.push_back(run_ref(std::move(row)));
    }
    return out;
}

}  // namespace

namespace {

store::PlannedJob build_job(std::chrono::milliseconds timeout) {
    return store::PlannedJob{std::string(k_build_stage), -1, "[]",
                             static_cast<std::int64_t>(timeout.count()), "[]"};
}

}  // namespace

std::vector<store::PlannedJob> plan_jobs(const select::Selection& sel, const select::Rules& rules,
                                         std::optional<std::chrono::milliseconds> build_timeout) {
    std::vector<store::PlannedJob> jobs;
    if (build_timeout && !sel.tiers.empty()) jobs.push_back(build_job(*build_timeout));
    for (const auto& t : sel.tiers) {
        std::int64_t position = 0;
        for (std::size_t i = 0; i < rules.tiers.size(); ++i)
            if (rules.tiers[i].name == t.name) position = static_cast<std::int64_t>(i);
        const select::Tier* tier = rules.tier(t.name);
        jobs.push_back(
            store::PlannedJob{t.name, position, json(t.tests).dump(),
                              static_cast<std::int64_t>(tier ? tier->timeout.count() : 3'600'000),
                              json(tier ? tier->labels : std::vector<std::string>{}).dump()});
    }
    return jobs;
}

Planner::Planner(store::Writer& writer, std::filesystem::path db_path,
                 std::shared_ptr<const PlannerConfig> cfg)
    : m_writer(writer),
      m_db_path(db_path),
      m_cfg(std::move(cfg)),
      m_reader(db_path),
      m_lookups(std::make_unique<LookupPool>(k_lookups)),
      m_full_matrix(writer, db_path, [this](const std::string& ref) -> Result<std::string> {
          auto c = config();
          if (!c) return make_error(Errc::git, "no configuration");
          return vcs::newest_sha(c->sources.upstream, ref);
      }) {}

Planner::~Planner() {
    stop();
}

void Planner::start() {
    // The runs stored so far are the planner thread's; those stored from now on whose paths
    // need no look-up are planned with their commit (plan_with_commit(), writer thread).
    auto seen =
        m_writer.run_sync([this](store::Db& db) { m_seen_run = store::RunsRepo(db).last_id(); });
    if (!seen)
        spdlog::warn("planner: every run is planned on its thread: {}", seen.error().message);
    else
        m_started.store(true, std::memory_order_release);
    m_loop.start();
}

void Planner::notify() {
    m_loop.notify();
}

void Planner::notify_followups() {
    {
        std::lock_guard lk(m_mu);
        m_followups_due = true;
    }
    m_loop.notify();
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
    m_started.store(false, std::memory_order_release);  // the commits after plan nothing more
    m_loop.stop();
    wait_in_flight();  // their callbacks use this planner
}

void Planner::wait_in_flight() {
    std::unique_lock lk(m_mu);
    m_drained.wait(lk, [&] { return m_in_flight.empty(); });
}

std::optional<std::chrono::steady_clock::duration> Planner::pass() {
    bool followups = false;
    {
        std::lock_guard lk(m_mu);
        // Also every k_followup_look however busy the planner is: follow-ups that failed are
        // tried again when their back-off ends, and no commit says when that is.
        const auto now = std::chrono::steady_clock::now();
        followups =
            std::exchange(m_followups_due, false) || now - m_followups_looked >= k_followup_look;
        if (followups) m_followups_looked = now;
        m_failed.clear();
    }
    // What throws (the database unreadable for a moment, a bug) is logged by the loop, and the
    // next wake-up tries again.
    if (auto cfg = config(); cfg && cfg->rules) m_full_matrix.tick(*cfg->rules);
    for (;;) {
        // A burst's next runs are decided while the writer commits the batch before; none
        // waits for a commit unless follow-ups need the plans stored.
        while (submit_pending() > 0) {
            if (m_loop.stopping()) return std::nullopt;
        }
        if (!followups) break;
        // Followups may queue runs (bisection): those are planned in the same wake-up.
        wait_in_flight();
        if (follow_up() == 0) break;
    }
    return k_followup_look;
}

std::size_t Planner::follow_up() {
    auto cfg = config();
    if (!cfg || !cfg->rules) return 0;
    FollowupContext ctx{m_writer, m_db_path, *cfg->rules, cfg->sources, cfg->bisect};
    return m_followups.handle(ctx);
}

namespace {

/// A bisect run's one tier runs the bad run's tests (`tier_tests` of its inputs), so a tier
/// that passed on that SHA with them may be reused (docs/verdicts.md); its job reruns only the
/// failing ones (the dispatcher gives them as CRCR_RERUN_FILE).
void bisect_tests(select::Selection& sel, const json& inputs) {
    auto t = inputs.find("tier_tests");
    if (t == inputs.end() || !t->is_array()) return;
    std::vector<std::string> tests;
    for (const auto& v : *t)
        if (v.is_string()) tests.push_back(v);
    for (auto& tier : sel.tiers) tier.tests = tests;
}

/// A run's plan, decided from its changed paths, as RunsRepo::store_plan() takes it.
struct Plan {
    store::JsonText explained{nullptr};
    std::vector<store::PlannedJob> jobs;
    std::string nothing;
    std::string summary;  // for the log
};

Plan decide_plan(const select::RunRef& run, const select::ChangedPaths& changed,
                 const select::Rules& rules,
                 std::optional<std::chrono::milliseconds> build_timeout) {
    std::vector<std::string> requested;
    if (auto t = run.inputs.find("tiers"); t != run.inputs.end() && t->is_array()) {
        for (const auto& name : *t)
            if (name.is_string()) requested.push_back(name);
    }
    // A bisection of a build regression (docs/build.md) runs the build alone.
    if (run.event == RunEvent::bisect && build_timeout && requested.size() == 1 &&
        requested.front() == k_build_stage) {
        select::Selection sel;
        sel.source = changed.source;
        sel.changed_paths = changed.paths.size();
        sel.reason = "bisection of the build: the build alone";
        Plan plan;
        plan.summary = "sha=" + run.sha + " tiers=build (bisection of the build)";
        plan.explained = store::JsonText::serialised(sel.to_json_text());
        plan.jobs = {build_job(*build_timeout)};
        return plan;
    }
    auto sel = select::decide(rules, changed, run.event, requested);
    if (run.event == RunEvent::bisect) bisect_tests(sel, run.inputs);
    std::string tiers;
    for (const auto& t : sel.tiers) tiers += (tiers.empty() ? "" : ",") + t.name;
    Plan plan;
    plan.summary = "sha=" + run.sha + " source=" + std::string(select::to_string(sel.source)) +
                   " changed_paths=" + std::to_string(sel.changed_paths) +
                   " tiers=" + (tiers.empty() ? "-" : tiers);
    plan.explained = store::JsonText::serialised(sel.to_json_text());
    plan.jobs = plan_jobs(sel, rules, build_timeout);
    plan.nothing = "nothing to run: " + sel.reason;
    return plan;
}

}  // namespace

void Planner::plan_with_commit(store::Db& db) {
    m_planned_with_commit.clear();
    m_seen_pending.reset();
    try {
        store::RunsRepo runs(db);
        // The runs above m_seen_run are this transaction's. Before start() the dispatcher may
        // not be there to hear of the jobs: the planner's thread plans those runs.
        m_seen_pending = runs.last_id();
        if (!m_seen_run || !m_started.load(std::memory_order_acquire)) return;
        auto rows = runs.unplanned_after(*m_seen_run);
        if (rows.empty()) return;
        auto cfg = config();
        if (!cfg || !cfg->rules) return;
        for (auto& row : rows) {
            const std::int64_t id = row.id;
            try {
                auto run = run_ref(std::move(row));
                if (select::needs_lookup(run, cfg->sources))
                    continue;  // git or HTTPS: the planner's thread
                auto plan = decide_plan(run, select::resolve_changed_paths(run, cfg->sources),
                                        *cfg->rules, cfg->build_timeout);
                store::within_savepoint(db, [&] {
                    if (runs.store_plan(id, plan.explained, plan.jobs, plan.nothing,
                                        std::chrono::system_clock::now())) {
                        m_planned_with_commit.push_back("run_id=" + std::to_string(id) + " " +
                                                        plan.summary);
                    }
                });
            } catch (const std::exception& e) {
                // This run only, and not lost: the planner's thread plans it after the commit.
                spdlog::warn("planner: run_id={} left to the planner's thread: {}", id, e.what());
            }
        }
    } catch (const std::exception& e) {
        // What was planned stays in the transaction; the rest is the planner's thread's.
        spdlog::warn("planner: new runs left to the planner's thread: {}", e.what());
    }
}

void Planner::committed() {
    // Only now: had the commit failed, the ids it held would be given to the next runs.
    if (m_seen_pending) m_seen_run = m_seen_pending;
    if (m_planned_with_commit.empty()) return;
    for (const auto& p : m_planned_with_commit) spdlog::info("planned {} (with its run)", p);
    m_planned_with_commit.clear();
    if (m_on_planned) m_on_planned();
}

std::shared_future<select::ChangedPaths> Planner::start_lookup(
    const select::RunRef& run, const select::SourceSettings& sources, std::int64_t id) {
    try {
        return m_lookups
            ->submit([&run, &sources] { return select::resolve_changed_paths(run, sources); })
            .share();
    } catch (const std::system_error& e) {
        // No thread to spare: this run is looked up in turn, on the planner's thread.
        spdlog::warn("planner: run_id={} looked up on the planner's thread: {}", id, e.what());
        return {};
    }
}

bool Planner::submit_plan(std::int64_t id, std::function<void(store::Db&)> work,
                          std::shared_ptr<bool> stored, std::string summary) {
    {
        std::lock_guard lk(m_mu);
        m_in_flight.insert(id);
    }
    bool queued = m_writer.submit(std::move(work), [this, id, stored,
                                                    summary = std::move(summary)](Status status) {
        // On the writer's thread, after the commit.
        if (!status) {
            spdlog::error("planner: run_id={} could not be stored: {}", id, status.error().message);
        } else {
            spdlog::info("planned run_id={} {} {}", id, summary,
                         *stored ? "" : "(cancelled meanwhile)");
            if (m_on_planned) m_on_planned();
        }
        {
            std::lock_guard lk(m_mu);
            m_in_flight.erase(id);
            if (!status) m_failed.insert(id);
        }
        m_drained.notify_all();
    });
    if (!queued) {
        spdlog::warn("planner: the writer is overloaded; planning resumes later");
        std::lock_guard lk(m_mu);
        m_in_flight.erase(id);
        m_failed.insert(id);
    }
    return queued;
}

std::size_t Planner::submit_pending() {
    auto cfg = config();
    if (!cfg || !cfg->rules) return 0;
    std::set<std::int64_t> skip;
    {
        std::lock_guard lk(m_mu);
        skip = m_in_flight;
        skip.insert(m_failed.begin(), m_failed.end());
    }
    std::vector<std::int64_t> ids;
    auto runs = unplanned(m_reader, static_cast<int>(64 + skip.size()), ids);
    // Each plan is submitted as soon as it is decided, without waiting for the one before:
    // the writer commits whatever is queued together (one fsync for a burst of runs).
    std::size_t submitted = 0;
    // Changed paths from the GitHub API (100-300 ms a call) are looked up k_lookups runs ahead,
    // concurrently, not one run after the other (the HTTP client keeps as many connections per
    // origin). The mirror's stay on this thread, in run order: it is one repository on disk.
    // The look-ups use `runs` and `cfg`: every one still running is waited for before this
    // returns, however it returns.
    // Runs that would ask the same question (the same PR, SHA and inputs: a label added to a
    // PR, a redelivery under a new id, a relay retry) share one look-up in a pass: the API
    // answers with the PR's files at the time it is asked, the same for each of them, and
    // GitHub's rate limit is spent once.
    std::vector<std::shared_future<select::ChangedPaths>> lookups(runs.size());
    std::map<std::string, std::size_t> asked;  // lookup_key -> the run whose look-up answers it
    struct WaitForLookups {
        std::vector<std::shared_future<select::ChangedPaths>>& lookups;
        ~WaitForLookups() {
            for (auto& f : lookups)
                if (f.valid()) f.wait();
        }
    } wait_for_lookups{lookups};
    std::size_t ahead = 0;
    for (std::size_t i = 0; i < runs.size(); ++i) {
        for (; ahead < runs.size() && ahead < i + k_lookups; ++ahead) {
            if (skip.count(ids[ahead]) || !select::needs_github_lookup(runs[ahead], cfg->sources))
                continue;
            auto [same, first] = asked.try_emplace(lookup_key(runs[ahead]), ahead);
            if (first)
                lookups[ahead] = start_lookup(runs[ahead], cfg->sources, ids[ahead]);
            else
                lookups[ahead] = lookups[same->second];  // invalid if that run is looked up in turn
        }
        const std::int64_t id = ids[i];
        if (skip.count(id)) continue;
        std::function<void(store::Db&)> work;
        std::string summary;
        auto stored = std::make_shared<bool>(false);
        try {
            select::ChangedPaths changed =
                lookups[i].valid() ? lookups[i].get()
                                   : select::resolve_changed_paths(runs[i], cfg->sources);
            auto plan = decide_plan(runs[i], changed, *cfg->rules, cfg->build_timeout);
            summary = std::move(plan.summary);
            work = [id, stored, explained = std::move(plan.explained), jobs = std::move(plan.jobs),
                    nothing = std::move(plan.nothing)](store::Db& db) {
                *stored = store::RunsRepo(db).store_plan(id, explained, jobs, nothing,
                                                         std::chrono::system_clock::now());
            };
        } catch (const std::exception& e) {
            // This run only: the others are still planned, and it is tried again at the next
            // wake-up.
            spdlog::error("planner: run_id={} cannot be planned: {}", id, e.what());
            std::lock_guard lk(m_mu);
            m_failed.insert(id);
            continue;
        }
        if (!submit_plan(id, std::move(work), stored, std::move(summary))) break;
        ++submitted;
    }
    return submitted;
}

}  // namespace crcrd::sched
