#include "crcrd/sched/dispatcher.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <map>
#include <set>

#include "crcrd/core/time.hpp"
#include "crcrd/sched/attempt_end.hpp"
#include "crcrd/sched/jobs.hpp"
#include "crcrd/store/bisections.hpp"
#include "crcrd/store/builds.hpp"
#include "crcrd/store/jobs.hpp"
#include "crcrd/store/runs.hpp"
#include "crcrd/store/slots.hpp"

namespace crcrd::sched {

using nlohmann::json;
using std::chrono::system_clock;

namespace {

exec::JobToRun to_run(const store::JobForRun& j) {
    exec::JobToRun r;
    r.job_id = j.job_id;
    r.run_id = j.run_id;
    r.attempt = j.attempt;
    r.tier = j.tier;
    r.sha = j.sha;
    r.pr = j.pr;
    r.tests = j.tests;
    r.labels = j.labels;
    r.timeout = std::chrono::milliseconds(j.timeout_ms);
    return r;
}

/// The job as a worker runs it; a job whose row is gone is a broken invariant.
exec::JobToRun load_job(store::Db& db, std::int64_t id) {
    auto j = store::JobsRepo(db).load(id);
    if (!j) throw std::runtime_error("job " + std::to_string(id) + " has no row");
    return to_run(*j);
}

bool covers(const std::vector<std::string>& have, const std::vector<std::string>& need) {
    return std::all_of(need.begin(), need.end(), [&](const std::string& l) {
        return std::find(have.begin(), have.end(), l) != have.end();
    });
}

/// Leases the first free, undrained slot on offer whose labels cover the job's, a build slot
/// for a build job and a runner slot for a tier's; its name, or nullopt when none is free.
std::optional<std::string> lease(store::Db& db, const std::vector<exec::SlotOffer>& offers,
                                 const exec::JobToRun& job, std::chrono::milliseconds ttl,
                                 SystemTime now, bool build = false) {
    store::SlotsRepo slots(db);
    for (const auto& name : slots.free_undrained()) {
        auto offer = std::find_if(offers.begin(), offers.end(),
                                  [&](const auto& o) { return o.name == name; });
        if (offer == offers.end() || offer->build != build || !covers(offer->labels, job.labels))
            continue;
        if (slots.take(name, job.job_id, now + ttl)) return name;
    }
    return std::nullopt;
}

/// Gives the job's slot back, or takes it offline until `health_interval` from now.
void release(store::Db& db, const exec::JobToRun& job, bool unhealthy,
             const std::optional<exec::Health>& health, std::chrono::milliseconds health_interval,
             SystemTime now) {
    store::SlotsRepo slots(db);
    const auto record =
        health ? std::optional<store::JsonText>(store::JsonText(health->to_json())) : std::nullopt;
    if (unhealthy) {
        slots.take_offline(job.slot, record.value_or(store::JsonText(nullptr)),
                           now + health_interval);
        return;
    }
    slots.give_back(job.slot, job.job_id, record);
}

/// The policy attempts end under now.
EndPolicy end_policy(const DispatcherSettings& cfg, SystemTime now, bool stopping = false) {
    return EndPolicy{cfg.retry, cfg.base_window, cfg.base_check_run, stopping, now};
}

/// An attempt that ended before anything of it was judged: how and why.
Judged ended(Conclusion conclusion, std::string reason) {
    Judged j;
    j.conclusion = conclusion;
    j.reason = std::move(reason);
    return j;
}

}  // namespace

Dispatcher::Dispatcher(store::Writer& writer, std::filesystem::path db_path,
                       exec::Executor& executor, DispatcherSettings settings,
                       const core::Clock& clock)
    : m_writer(writer),
      m_db_path(std::move(db_path)),
      m_executor(executor),
      m_settings(std::move(settings)),
      m_clock(clock) {}

Dispatcher::~Dispatcher() {
    stop();
}

void Dispatcher::set_settings(DispatcherSettings settings) {
    {
        std::lock_guard lk(m_mu);
        m_settings = std::move(settings);
    }
    notify();
}

DispatcherSettings Dispatcher::settings() {
    std::lock_guard lk(m_mu);
    return m_settings;
}

std::vector<std::string> Dispatcher::offered_slot_names() const {
    std::vector<std::string> names;
    for (const auto& o : m_executor.slots()) names.push_back(o.name);
    return names;
}

Status Dispatcher::sync_slots() {
    const auto names = offered_slot_names();
    auto s = m_writer.run_sync([&names](store::Db& db) { store::SlotsRepo(db).sync(names); });
    notify();
    return s;
}

void Dispatcher::resync_slots() {
    m_writer.submit(
        [names = offered_slot_names()](store::Db& db) { store::SlotsRepo(db).sync(names); },
        [this](Status s) {
            if (!s) spdlog::error("slots: {}", s.error().message);
            notify();
        });
}

Status Dispatcher::recover() {
    const auto cfg = settings();
    // What was left open, read first: asking the executor (Slurm's commands) happens outside
    // the write, which would otherwise hold the writer for as long as Slurm takes to answer.
    std::vector<store::OpenAttempt> left;
    auto read = m_writer.run_sync([&](store::Db& db) { left = store::JobsRepo(db).left_open(); });
    if (!read) return read;
    std::map<std::int64_t, std::string> outside;
    const auto recipe = build_recipe(cfg);  // git: outside the write
    for (const auto& open : left)
        if (auto external = m_executor.adoptable(open.id, open.external_id))
            outside[open.id] = *external;
    std::vector<std::pair<exec::JobToRun, std::string>> adopted;
    auto s = m_writer.run_sync([&](store::Db& db) {
        adopted.clear();
        store::JobsRepo jobs(db);
        store::SlotsRepo slots(db);
        slots.free_all_busy();
        for (const auto& open : left) {
            auto job = load_job(db, open.id);
            // An attempt that goes on outside the daemon (a Slurm job) is adopted, not repeated.
            if (auto it = outside.find(open.id); it != outside.end()) {
                job.slot = open.slot.value_or("");
                if (!job.slot.empty() &&
                    !slots.take(job.slot, job.job_id, m_clock.now() + cfg.lease_ttl)) {
                    spdlog::warn(
                        "job_id={} slot {} is no longer offered; the adopted job runs without it",
                        open.id, job.slot);
                }
                if (cfg.build && recipe) resume_build(db, *cfg.build, *recipe, job);
                jobs.mark_running(open.id, 0, it->second, m_clock.now());
                spdlog::info("job_id={} run_id={} adopted: it goes on as {}", open.id, job.run_id,
                             it->second);
                adopted.emplace_back(std::move(job), it->second);
                continue;
            }
            if (int n = m_executor.abandon(open.id); n > 0) {
                spdlog::warn("job_id={} killed {} stray process(es) of the previous daemon",
                             open.id, n);
            }
            end_attempt(db, job, AttemptOrigin::lost,
                        ended(Conclusion::infra_error, "daemon restarted"),
                        end_policy(cfg, m_clock.now()));
            spdlog::warn("job_id={} run_id={} ended infra_error: daemon restarted", open.id,
                         job.run_id);
        }
        if (cfg.build) {
            std::vector<exec::JobToRun> jobs_adopted;
            for (const auto& a : adopted) jobs_adopted.push_back(a.first);
            recover_builds(db, *cfg.build, m_clock.now(), jobs_adopted);
        }
    });
    if (s) {
        std::lock_guard lk(m_mu);
        m_adopted = std::move(adopted);
    }
    return s;
}

std::optional<exec::BuildKeyInputs> Dispatcher::build_recipe(const DispatcherSettings& cfg) {
    if (!cfg.build) return std::nullopt;
    const auto now = std::chrono::steady_clock::now();
    if (!m_recipe || now - m_recipe_at >= std::chrono::seconds(1)) {
        m_recipe = exec::build_recipe(cfg.build->build, cfg.build->env, cfg.build->backend_dir);
        m_recipe_at = now;
    }
    return m_recipe;
}

void Dispatcher::start() {
    {
        std::lock_guard lk(m_mu);
        for (auto& [job, external] : m_adopted) {
            auto flag = std::make_shared<std::atomic<bool>>(false);
            m_running[job.job_id] = flag;
            if (!spawn_worker(
                    [this, job, flag, external = external] { work(job, flag, external); })) {
                // No thread now: the next start adopts it again.
                m_running.erase(job.job_id);
                spdlog::error("job_id={} cannot be watched now: no thread", job.job_id);
            }
        }
        m_adopted.clear();
    }
    m_loop.start();
}

void Dispatcher::notify() {
    m_loop.notify();
}

void Dispatcher::stop() {
    m_loop.request_stop();
    // Attempts that go on without the daemon (Slurm) are left to run, to be adopted at the next
    // start; the others are ended.
    if (!m_executor.detach_on_stop()) {
        std::lock_guard lk(m_mu);
        for (auto& [id, flag] : m_running) flag->store(true);
    }
    m_loop.join();
    std::list<Worker> workers;
    {
        std::lock_guard lk(m_mu);
        workers.swap(m_workers);
    }
    for (auto& w : workers)
        if (w.thread.joinable()) w.thread.join();
}

bool Dispatcher::spawn_worker(std::function<void()> fn) {
    for (auto it = m_workers.begin(); it != m_workers.end();) {
        if (it->done->load()) {
            it->thread.join();
            it = m_workers.erase(it);
        } else {
            ++it;
        }
    }
    auto done = std::make_shared<std::atomic<bool>>(false);
    try {
        std::thread t([fn = std::move(fn), done] {
            try {
                fn();
            } catch (const std::exception& e) {
                spdlog::error("dispatcher worker: uncaught exception: {}", e.what());
            } catch (...) {
                spdlog::error("dispatcher worker: uncaught exception");
            }
            done->store(true);
        });
        m_workers.push_back(Worker{std::move(t), done});
        return true;
    } catch (const std::system_error& e) {
        spdlog::error("dispatcher: cannot start a worker thread: {}", e.what());
        return false;
    }
}

std::optional<std::chrono::steady_clock::duration> Dispatcher::pass() {
    dispatch_once();
    // Every 500 ms, and at the latest when the next offline slot is due for its recheck.
    std::lock_guard lk(m_mu);
    std::chrono::steady_clock::duration wait = std::chrono::milliseconds(500);
    if (m_next_recheck != std::chrono::steady_clock::time_point::max())
        wait = std::min(wait, m_next_recheck - std::chrono::steady_clock::now());
    return wait;
}

namespace {

/// Renews the leases of the jobs running in this process; a lease whose job is not running here
/// (a worker lost to a bug, a row edited by hand) lapses: its slot is freed and its job ended.
void end_lapsed_leases(store::Db& db, const std::set<std::int64_t>& running,
                       const DispatcherSettings& cfg, SystemTime now) {
    store::SlotsRepo slots(db);
    for (auto id : running) slots.renew_lease(id, now + cfg.lease_ttl);
    for (const auto& [slot, job_id] : slots.lapsed(now)) {
        if (job_id && running.count(*job_id)) continue;
        slots.free_busy(slot);
        if (job_id) {
            auto job = load_job(db, *job_id);
            end_attempt(db, job, AttemptOrigin::lost,
                        ended(Conclusion::infra_error, "the lease of slot " + slot + " expired"),
                        end_policy(cfg, now));
        }
        spdlog::warn("slot={} job_id={} lease expired: slot freed, job ended infra_error", slot,
                     job_id ? std::to_string(*job_id) : std::string("-"));
    }
}

/// The tests job `id`'s attempt runs when not all of its tier's: a rerun's failed tests (with
/// execution.rerun: failed_tests), a bisect run's failing tests, a base check's tests.
void narrow_tests(store::Db& db, exec::JobToRun& job, const DispatcherSettings& cfg) {
    store::JobsRepo jobs(db);
    if (cfg.rerun_failed_tests) job.rerun_tests = jobs.failed_in_rerun_source(job.job_id);
    // A bisect run runs only the failing tests it bisects (docs/verdicts.md), a base check only
    // those it checks (docs/verdicts.md), whatever `rerun` says.
    if (job.rerun_tests.empty())
        job.rerun_tests = store::BisectionsRepo(db).tests_for_job(job.job_id);
    if (auto checked = jobs.base_check_tests(job.job_id); !checked.empty())
        job.rerun_tests = std::move(checked);
}

/// A startable build job (docs/build.md): passes from the cache, waits on the job that builds
/// its key, or leases a build slot (appended to `started`); it never waits for a device. True
/// when it passed (its run's first tier may start at once).
bool start_build_job(store::Db& db, const std::vector<exec::SlotOffer>& offers,
                     const DispatcherSettings& cfg, const exec::BuildKeyInputs& recipe,
                     exec::JobToRun job, SystemTime now, std::vector<exec::JobToRun>& started) {
    auto step = step_build_job(db, *cfg.build, recipe, job, now);
    if (step.kind == BuildStep::Kind::passed) {
        spdlog::info("job_id={} run_id={} build from the cache", job.job_id, job.run_id);
        return true;
    }
    if (step.kind == BuildStep::Kind::known) {
        // A base check whose base's build is known: it ends now, as if it had built.
        end_attempt(db, job, AttemptOrigin::ran, std::move(step.known), end_policy(cfg, now));
        return true;
    }
    if (step.kind == BuildStep::Kind::wait) return false;
    if (auto slot = lease(db, offers, job, cfg.lease_ttl, now, true)) {
        job.slot = *slot;
        job.build = std::move(step.spec);
        store::JobsRepo(db).mark_leased(job.job_id, *slot);
        store::BuildsRepo(db).mark_running(job.build->key, job.job_id, now);
        store::RunsRepo(db).mark_running(job.run_id);
        started.push_back(std::move(job));
    }
    return false;
}

/// Each startable job is reused (its tier passed on this SHA with these tests), leased a free
/// slot whose labels cover its own (appended to `started`), ended device_unavailable once it
/// waited device_wait, or left waiting. True when a job was reused (its run's next tier may
/// start at once).
bool lease_startable(store::Db& db, const std::vector<exec::SlotOffer>& offers,
                     const DispatcherSettings& cfg,
                     const std::optional<exec::BuildKeyInputs>& recipe, SystemTime now,
                     std::vector<exec::JobToRun>& started) {
    store::SlotsRepo slots(db);
    store::JobsRepo jobs(db);
    bool reused = false;
    // With every slot busy (a backlog), a job can only be reused or have waited too long:
    // nothing else of it is read.
    bool any_free = !slots.free_undrained().empty();
    auto waited_too_long = [&](std::int64_t id) {
        return now - parse_rfc3339(jobs.waiting_since(id)).value_or(now) > cfg.device_wait;
    };
    for (auto id : startable_jobs(db)) {
        std::optional<exec::JobToRun> loaded;
        if (cfg.build && recipe) {
            loaded = load_job(db, id);
            if (loaded->tier == k_build_stage) {
                reused =
                    start_build_job(db, offers, cfg, *recipe, std::move(*loaded), now, started) ||
                    reused;
                continue;
            }
        }
        // A tier that already passed on this SHA with these tests (docs/verdicts.md): no device
        // time. (Never for the rerun of a failed tier: that is the failure's own check.)
        if (cfg.reuse_window.count() > 0 && jobs.failed_in_rerun_source(id).empty()) {
            if (auto from = jobs.reusable(id, now - cfg.reuse_window)) {
                jobs.mark_reused(id, from->first, from->second);
                finish_job(db, id, Conclusion::passed,
                           "reused from run " + std::to_string(from->first), std::nullopt, now);
                spdlog::info("job_id={} reused job {} of run {}", id, from->second, from->first);
                reused = true;
                continue;
            }
        }
        if (!any_free && !waited_too_long(id)) continue;
        auto job = loaded ? std::move(*loaded) : load_job(db, id);
        if (job.tier == k_build_stage) {
            // Planned with a build stage the configuration no longer has.
            finish_job(db, id, Conclusion::passed, "build: is no longer configured", std::nullopt,
                       now);
            reused = true;
            continue;
        }
        if (cfg.build) job.build_dir = run_build_dir(db, *cfg.build, job.run_id);
        narrow_tests(db, job, cfg);
        if (auto slot = lease(db, offers, job, cfg.lease_ttl, now)) {
            job.slot = *slot;
            jobs.mark_leased(id, *slot);
            store::RunsRepo(db).mark_running(job.run_id);
            started.push_back(std::move(job));
            any_free = !slots.free_undrained().empty();
        } else if (waited_too_long(id)) {
            const std::string why =
                "no healthy runner slot with labels " + json(job.labels).dump() + " within " +
                std::to_string(
                    std::chrono::duration_cast<std::chrono::seconds>(cfg.device_wait).count()) +
                "s";
            end_attempt(db, job, AttemptOrigin::no_device,
                        ended(Conclusion::device_unavailable, why), end_policy(cfg, now));
        }
    }
    return reused;
}

}  // namespace

void Dispatcher::dispatch_once() {
    Decided d;
    std::set<std::int64_t> running;
    {
        std::lock_guard lk(m_mu);
        for (const auto& [id, flag] : m_running) running.insert(id);
    }
    const auto cfg = settings();
    const auto offers = m_executor.slots();
    const auto recipe = build_recipe(cfg);
    auto s = m_writer.run_sync([&](store::Db& db) {
        const auto now = m_clock.now();
        end_lapsed_leases(db, running, cfg, now);
        d.reused = lease_startable(db, offers, cfg, recipe, now, d.started);
        // Jobs cancelled meanwhile (superseded, PR closed, operator) whose process still runs.
        store::JobsRepo jobs(db);
        for (auto id : running)
            if (jobs.state(id) == JobState::cancelled) d.cancelled.push_back(id);
        store::SlotsRepo slots(db);
        d.due = slots.due_for_recheck(now);
        if (auto at = slots.next_recheck_at(now)) d.next_recheck = parse_rfc3339(*at);
    });
    if (!s) {
        spdlog::warn("dispatcher: {}", s.error().message);
        return;
    }
    act_on(d, cfg.health_interval);
}

void Dispatcher::act_on(const Decided& d, std::chrono::milliseconds health_interval) {
    std::lock_guard lk(m_mu);
    if (d.reused) m_loop.notify();  // the run's next tier may start now: look again at once
    m_next_recheck = std::chrono::steady_clock::time_point::max();
    if (d.next_recheck) {
        m_next_recheck = std::chrono::steady_clock::now() +
                         std::max(std::chrono::milliseconds(0),
                                  std::chrono::duration_cast<std::chrono::milliseconds>(
                                      *d.next_recheck - m_clock.now()));
    }
    for (auto id : d.cancelled)
        if (auto it = m_running.find(id); it != m_running.end()) it->second->store(true);
    std::vector<exec::JobToRun> not_started;
    for (const auto& job : d.started) {
        auto flag = std::make_shared<std::atomic<bool>>(false);
        m_running[job.job_id] = flag;
        spdlog::info("job_id={} run_id={} tier={} attempt={} leased slot={}", job.job_id,
                     job.run_id, job.tier, job.attempt, job.slot);
        if (!spawn_worker([this, job, flag] { work(job, flag); })) {
            m_running.erase(job.job_id);
            not_started.push_back(job);
        }
    }
    for (const auto& slot : d.due) {
        if (m_rechecking[slot]) continue;
        m_rechecking[slot] = true;
        if (!spawn_worker([this, slot] { recheck(slot); })) m_rechecking[slot] = false;
    }
    if (!not_started.empty()) {
        // No thread for them now: back to the queue, their slots free again.
        m_writer.submit(
            [not_started, health_interval, now = m_clock.now()](store::Db& db) {
                for (const auto& job : not_started) {
                    store::JobsRepo(db).requeue_leased(job.job_id);
                    release(db, job, false, std::nullopt, health_interval, now);
                }
            },
            [](Status) {});
    }
}

void Dispatcher::recheck(const std::string& slot) {
    const exec::Health h = m_executor.check_health(slot);
    const bool ok = h.ok;
    const auto interval = settings().health_interval;
    auto s = m_writer.run_sync([&](store::Db& db) {
        store::SlotsRepo(db).record_recheck(slot, ok, store::JsonText(h.to_json()),
                                            m_clock.now() + interval);
    });
    spdlog::log(ok ? spdlog::level::info : spdlog::level::warn, "slot={} health recheck {}", slot,
                ok ? "passed: back online" : "failed");
    {
        std::lock_guard lk(m_mu);
        m_rechecking[slot] = false;
    }
    notify();  // back online: jobs may start; still offline: its next recheck is scheduled
}

void Dispatcher::work(exec::JobToRun job, std::shared_ptr<std::atomic<bool>> cancel,
                      std::optional<std::string> adopt) {
    const auto cfg = settings();
    exec::RawOutcome raw;
    Judged outcome;
    try {
        exec::AttemptHooks hooks;
        // Leased -> running and the start are one decision: a job cancelled since its lease
        // (superseded, closed, by an operator) is never started.
        hooks.may_start = [this, id = job.job_id] {
            bool claimed = false;
            auto s = m_writer.run_sync([&](store::Db& db) {
                claimed = store::JobsRepo(db).claim_start(id, m_clock.now());
            });
            return s && claimed;
        };
        hooks.on_running = [this, id = job.job_id](const exec::Started& st) {
            m_writer.submit(
                [id, st, now = m_clock.now()](store::Db& db) {
                    store::JobsRepo(db).mark_running(id, st.pgid, st.external_id, now);
                },
                [](Status) {});
        };
        if (job.build && cfg.build && !adopt) {
            if (auto made = prepare_build_attempt(*cfg.build, job); !made)
                throw std::runtime_error(made.error().message);
        }
        raw = adopt ? m_executor.adopt(job, *adopt, *cancel, hooks)
                    : m_executor.run(job, *cancel, hooks);
        if (raw.not_started) {
            // Whoever cancelled the job ended it; only the slot is given back.
            spdlog::info("job_id={} run_id={} not started: cancelled since its lease", job.job_id,
                         job.run_id);
            const auto interval = cfg.health_interval;
            auto s = m_writer.run_sync([&](store::Db& db) {
                release(db, job, false, raw.health, interval, m_clock.now());
            });
            if (!s)
                spdlog::error("job_id={} slot {} not given back: {}", job.job_id, job.slot,
                              s.error().message);
            {
                std::lock_guard lk(m_mu);
                m_running.erase(job.job_id);
            }
            notify();
            return;
        }
        if (raw.detached) {
            // The daemon stops and the attempt goes on outside it: nothing to record; the next
            // start adopts it (its slot stays busy until then).
            spdlog::info(
                "job_id={} run_id={} left running outside the daemon ({}) for the next start",
                job.job_id, job.run_id,
                raw.external.is_null() ? std::string("-") : raw.external.dump());
            std::lock_guard lk(m_mu);
            m_running.erase(job.job_id);
            return;
        }
        if (!raw.slot_unhealthy) outcome = judge(raw, *cfg.patterns);
    } catch (const std::exception& e) {
        // A bug or an exhausted resource, never the test's doing: the job ends (and is retried)
        // instead of holding its slot forever.
        raw = exec::RawOutcome{};
        outcome =
            Judged{Conclusion::infra_error, std::string("crcrd could not run the job: ") + e.what(),
                   std::nullopt, json::object()};
        spdlog::error("job_id={} run failed: {}", job.job_id, e.what());
    }
    // A slot that failed its health check before the start: not an attempt, the job waits.
    const bool requeue = raw.slot_unhealthy;
    // A build's output is checked and published before its end is stored (docs/build.md).
    std::optional<std::int64_t> built;
    if (!requeue && job.build && cfg.build)
        built = finish_build_attempt(*cfg.build, job, raw, outcome);
    std::vector<std::string> evicted;
    bool unhealthy = raw.slot_unhealthy;
    std::optional<exec::Health> health = raw.health;
    if (requeue) outcome.reason = "health check of " + job.slot + " failed";
    std::optional<exec::Health> after;
    if (!requeue && raw.health_after) {
        // After a stall or timeout (docs/execution.md): the devices were released and the slot
        // checked, or not.
        after = raw.health_after;
    } else if (!requeue && outcome.conclusion == Conclusion::device_unavailable) {
        // A device-class failure: the health check decides whether the slot goes offline.
        after = m_executor.check_health(job.slot);
    }
    if (after) {
        health = after;
        unhealthy = !after->ok;
        outcome.evidence["health_after"] = after->to_json();
    }
    const bool stopping = m_loop.stopping();
    std::optional<EndPlan> plan;  // nullopt: the attempt had ended already (cancelled), or requeued
    auto store_outcome = [&](store::Db& db) {
        store::JobsRepo jobs(db);
        if (requeue) {
            jobs.requeue_open(job.job_id);
        } else {
            exec::TestCounts c = exec::count(raw.results);
            std::vector<store::TestRow> tests;
            tests.reserve(raw.results.size());
            for (const auto& t : raw.results)
                tests.push_back(store::TestRow{t.name, t.outcome, t.duration_s, t.message});
            jobs.record_results(job.job_id, tests, store::JsonText(raw.metadata), raw.log_path,
                                store::JsonText(json{{"passed", c.passed},
                                                     {"failed", c.failed},
                                                     {"skipped", c.skipped},
                                                     {"flaky", 0}}),
                                store::JsonText(outcome.evidence));
            // A rerun's results are its own tests and those carried over from the attempts
            // before. (A base check ran on another SHA: nothing of the PR's attempts is its
            // result.)
            std::int64_t carried = 0;
            if (job.attempt > 1 && jobs.base_check_tests(job.job_id).empty())
                carried = jobs.carry_earlier_results(job.job_id);
            plan = end_attempt(db, job, AttemptOrigin::ran, outcome,
                               end_policy(cfg, m_clock.now(), stopping), carried);
            settle_build(db, job, plan, outcome, built, m_clock.now());
            if (cfg.build) evicted = choose_evictions(db, *cfg.build, m_clock.now());
        }
        release(db, job, unhealthy, health, cfg.health_interval, m_clock.now());
    };
    // An outcome is never dropped: when it cannot be stored (a full disk, an I/O error) it is
    // tried again, with growing pauses, until it is stored or the daemon stops (the job is then
    // still running in the database, and the next start ends it "daemon restarted").
    auto s = m_writer.run_sync(store_outcome);
    for (auto pause = std::chrono::milliseconds(250); !s;
         pause = std::min(pause * 2, std::chrono::milliseconds(30'000))) {
        spdlog::error("job_id={} outcome not stored, again in {} ms: {}", job.job_id, pause.count(),
                      s.error().message);
        if (!m_loop.sleep_for(pause)) break;
        s = m_writer.run_sync(store_outcome);
    }
    if (plan) {
        spdlog::log(
            plan->conclusion == Conclusion::passed ? spdlog::level::info : spdlog::level::warn,
            "job_id={} run_id={} tier={} attempt={} slot={} ended {}: {}", job.job_id, job.run_id,
            job.tier, job.attempt, job.slot, to_string(plan->conclusion), plan->reason);
    } else {
        spdlog::info("job_id={} run_id={} tier={} attempt={} slot={} {} ({}: {})", job.job_id,
                     job.run_id, job.tier, job.attempt, job.slot,
                     requeue ? "requeued" : "had ended already", to_string(outcome.conclusion),
                     outcome.reason);
    }
    if (!s)
        spdlog::error("job_id={} outcome not stored before the stop: {}", job.job_id,
                      s.error().message);
    for (const auto& key : evicted) {
        exec::remove_build(cfg.build->build.cache_dir, key);
        spdlog::info("build={} evicted from the cache", key.substr(0, 12));
    }
    {
        std::lock_guard lk(m_mu);
        m_running.erase(job.job_id);
    }
    notify();
}

}  // namespace crcrd::sched
