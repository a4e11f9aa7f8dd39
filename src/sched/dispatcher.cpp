#include "crcrd/sched/dispatcher.hpp"

#include <signal.h>
#include <spdlog/spdlog.h>

#include <filesystem>
#include <future>
#include <set>

#include "crcrd/core/files.hpp"
#include "crcrd/core/time.hpp"
#include "crcrd/sched/jobs.hpp"

namespace crcrd::sched {

using nlohmann::json;
using std::chrono::system_clock;

namespace {

exec::JobToRun load_job(store::Db& db, std::int64_t id) {
    auto& st = db.cached(
        "SELECT j.id, j.run_id, j.attempt, j.tier, r.sha, r.pr, j.tests, j.labels, j.timeout_ms "
        "FROM jobs j JOIN runs r ON r.id = j.run_id WHERE j.id = ?");
    st.bind(1, id);
    st.step();
    exec::JobToRun j;
    j.job_id = st.int64(0);
    j.run_id = st.int64(1);
    j.attempt = static_cast<int>(st.int64(2));
    j.tier = st.text(3);
    j.sha = st.text(4);
    j.pr = st.opt_int64(5);
    auto tests = json::parse(st.text(6), nullptr, false);
    if (tests.is_array()) j.tests = tests.get<std::vector<std::string>>();
    auto labels = json::parse(st.text(7), nullptr, false);
    if (labels.is_array()) j.labels = labels.get<std::vector<std::string>>();
    j.timeout = std::chrono::milliseconds(st.int64(8));
    st.reset();
    return j;
}

/// When the job became startable: the end of its run's previous tier, or its creation.
system_clock::time_point waiting_since(store::Db& db, std::int64_t id) {
    auto& st = db.cached(
        "SELECT coalesce((SELECT max(p.finished_at) FROM jobs p WHERE p.run_id = j.run_id AND p.position < j.position), "
        "j.created_at) FROM jobs j WHERE j.id = ?");
    st.bind(1, id);
    st.step();
    std::string at = st.text(0);
    st.reset();
    return parse_rfc3339(at).value_or(system_clock::now());
}

/// Completed attempts of the job's tier in its run whose class is one of `classes`.
std::int64_t earlier_attempts(store::Db& db, std::int64_t job_id, const char* classes_sql) {
    auto& st = db.cached(std::string("SELECT count(*) FROM jobs e JOIN jobs j ON e.run_id = j.run_id AND e.position = j.position "
                                     "WHERE j.id = ? AND e.id <> j.id AND e.state = 'completed' AND e.conclusion IN (") +
                         classes_sql + ")");
    st.bind(1, job_id);
    st.step();
    auto n = st.int64(0);
    st.reset();
    return n;
}

/// A pass after a failed attempt of the same tier: the tests that failed before and passed
/// now are marked flaky. Returns how many.
std::int64_t mark_flaky(store::Db& db, std::int64_t job_id) {
    auto& prev = db.cached(
        "SELECT e.id FROM jobs e JOIN jobs j ON e.run_id = j.run_id AND e.position = j.position "
        "WHERE j.id = ? AND e.id <> j.id AND e.state = 'completed' AND e.conclusion = 'regression' ORDER BY e.id DESC LIMIT 1");
    prev.bind(1, job_id);
    if (!prev.step()) {
        prev.reset();
        return 0;
    }
    const auto before = prev.int64(0);
    prev.reset();
    auto& upd = db.cached(
        "UPDATE test_results SET outcome = 'flaky' WHERE job_id = ? AND outcome = 'passed' AND name IN "
        "(SELECT name FROM test_results WHERE job_id = ? AND outcome = 'failed')");
    upd.bind(1, job_id).bind(2, before);
    upd.run();
    auto flaky = static_cast<std::int64_t>(db.changes());
    auto& failed_before = db.cached("SELECT count(*) FROM test_results WHERE job_id = ? AND outcome = 'failed'");
    failed_before.bind(1, before);
    failed_before.step();
    const auto n_before = failed_before.int64(0);
    failed_before.reset();
    // Failures whose names do not appear in the rerun still count as flaky: the tier passed.
    flaky = std::max(flaky, n_before);
    auto& counts = db.cached(
        "UPDATE jobs SET counts = json_set(coalesce(counts, '{}'), '$.flaky', ?, '$.passed', "
        "(SELECT count(*) FROM test_results WHERE job_id = ? AND outcome = 'passed')) WHERE id = ?");
    counts.bind(1, flaky).bind(2, job_id).bind(3, job_id);
    counts.run();
    return flaky;
}

/// Ends an attempt (docs/classification.md): an infra-class failure is retried while
/// `infra_retries` allow; a regression is rerun while `flaky_reruns` allow; a pass after a
/// regression of the same tier is `flaky`; anything else is final.
void end_attempt(store::Db& db, const exec::JobToRun& job, const std::string& conclusion, const std::string& reason,
                 std::optional<int> exit_status, const DispatcherSettings& s) {
    const bool infra = conclusion == "infra_error" || conclusion == "device_unavailable";
    if (infra && earlier_attempts(db, job.job_id, "'infra_error','device_unavailable'") < s.infra_retries) {
        retry_job(db, job.job_id, conclusion, reason, exit_status);
        return;
    }
    if (conclusion == "regression") {
        const auto reruns = earlier_attempts(db, job.job_id, "'regression'");
        if (reruns < s.flaky_reruns) {
            retry_job(db, job.job_id, conclusion, reason + "; rerun to tell a flaky test", exit_status);
            return;
        }
        if (reruns > 0) {
            finish_job(db, job.job_id, conclusion, reason + ", again on rerun", exit_status);
            return;
        }
    }
    if (conclusion == "passed") {
        if (auto flaky = mark_flaky(db, job.job_id); flaky > 0) {
            finish_job(db, job.job_id, "flaky",
                       std::to_string(flaky) + (flaky == 1 ? " test" : " tests") + " failed, then passed on rerun",
                       exit_status);
            return;
        }
    }
    finish_job(db, job.job_id, conclusion, reason, exit_status);
}

/// Whether the process `pid` runs with CRCR_JOB_ID=<job_id> in its environment: the job's
/// command, bubblewrap, and whatever the command started, even in a session of its own.
bool is_job_process(const std::string& pid, std::int64_t job_id) {
    auto env = read_file("/proc/" + pid + "/environ", 1 << 20);
    if (!env) return false;
    const std::string needle = "CRCR_JOB_ID=" + std::to_string(job_id);
    std::size_t pos = 0;
    while (pos < env->size()) {
        auto end = env->find('\0', pos);
        if (env->compare(pos, (end == std::string::npos ? env->size() : end) - pos, needle) == 0) return true;
        if (end == std::string::npos) break;
        pos = end + 1;
    }
    return false;
}

/// Kills what a previous daemon's job left running (its init died with that daemon; the
/// command and anything it detached may not have). Returns how many processes.
int kill_leftovers(std::int64_t job_id) {
    int killed = 0;
    std::error_code ec;
    for (std::filesystem::directory_iterator it("/proc", ec), end; it != end; it.increment(ec)) {
        const std::string name = it->path().filename().string();
        if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
        if (is_job_process(name, job_id) && ::kill(static_cast<pid_t>(std::stol(name)), SIGKILL) == 0) ++killed;
    }
    return killed;
}

}  // namespace

Dispatcher::Dispatcher(store::Writer& writer, std::filesystem::path db_path, exec::Executor& executor,
                       DispatcherSettings settings)
    : m_writer(writer), m_db_path(std::move(db_path)), m_executor(executor), m_settings(settings) {}

Dispatcher::~Dispatcher() { stop(); }

Status Dispatcher::recover() {
    const auto settings = m_settings;
    return m_writer.run_sync([settings](store::Db& db) {
        auto st = db.prepare("SELECT id, pgid FROM jobs WHERE state IN ('leased','running')");
        std::vector<std::pair<std::int64_t, std::optional<std::int64_t>>> left;
        while (st.step()) left.emplace_back(st.int64(0), st.opt_int64(1));
        for (const auto& [id, pgid] : left) {
            if (int n = kill_leftovers(id); n > 0) {
                spdlog::warn("job_id={} killed {} stray process(es) of the previous daemon", id, n);
            }
            auto job = load_job(db, id);
            end_attempt(db, job, "infra_error", "daemon restarted", std::nullopt, settings);
            spdlog::warn("job_id={} run_id={} ended infra_error: daemon restarted", id, job.run_id);
        }
        db.exec("UPDATE slots SET state = 'idle', job_id = NULL, lease_expires_at = NULL WHERE state = 'busy'");
    });
}

void Dispatcher::start() {
    m_thread = std::thread([this] { loop(); });
}

void Dispatcher::notify() {
    {
        std::lock_guard lk(m_mu);
        m_pending = true;
    }
    m_cv.notify_one();
}

void Dispatcher::stop() {
    {
        std::lock_guard lk(m_mu);
        if (m_stopping && !m_thread.joinable()) return;
        m_stopping = true;
        for (auto& [id, flag] : m_running) flag->store(true);
    }
    m_cv.notify_all();
    m_stop_cv.notify_all();
    if (m_thread.joinable()) m_thread.join();
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

void Dispatcher::loop() {
    for (;;) {
        {
            std::unique_lock lk(m_mu);
            // At the latest when the next offline slot is due for its recheck.
            const auto until = std::min(std::chrono::steady_clock::now() + std::chrono::milliseconds(500), m_next_recheck);
            m_cv.wait_until(lk, until, [&] { return m_stopping || m_pending; });
            if (m_stopping) return;
            m_pending = false;
        }
        try {
            dispatch_once();
        } catch (const std::exception& e) {
            spdlog::error("dispatcher: {}", e.what());
        }
    }
}

void Dispatcher::dispatch_once() {
    std::vector<exec::JobToRun> started;
    std::vector<std::int64_t> cancelled;
    std::vector<std::string> due;
    std::optional<system_clock::time_point> next_recheck;
    std::set<std::int64_t> running;
    {
        std::lock_guard lk(m_mu);
        for (const auto& [id, flag] : m_running) running.insert(id);
    }
    const auto device_wait = m_settings.device_wait;
    const auto ttl = m_settings.lease_ttl;
    auto s = m_writer.run_sync([&](store::Db& db) {
        const auto now = system_clock::now();
        // A lease lives while its job runs in this process; one whose job is not running here
        // (a worker lost to a bug, a row edited by hand) expires and its job is ended.
        auto& renew = db.cached("UPDATE slots SET lease_expires_at = ? WHERE state = 'busy' AND job_id = ?");
        for (auto id : running) {
            renew.reset();
            renew.bind(1, rfc3339(now + ttl)).bind(2, id);
            renew.run();
        }
        auto& expired = db.cached("SELECT name, job_id FROM slots WHERE state = 'busy' AND lease_expires_at < ?");
        expired.bind(1, rfc3339(now));
        std::vector<std::pair<std::string, std::optional<std::int64_t>>> lapsed;
        while (expired.step()) lapsed.emplace_back(expired.text(0), expired.opt_int64(1));
        expired.reset();
        for (const auto& [slot, job_id] : lapsed) {
            if (job_id && running.count(*job_id)) continue;
            auto& free = db.cached(
                "UPDATE slots SET state = 'idle', job_id = NULL, lease_expires_at = NULL WHERE name = ? AND state = 'busy'");
            free.bind(1, slot);
            free.run();
            if (job_id) {
                auto job = load_job(db, *job_id);
                end_attempt(db, job, "infra_error", "the lease of slot " + slot + " expired", std::nullopt, m_settings);
            }
            spdlog::warn("slot={} job_id={} lease expired: slot freed, job ended infra_error", slot,
                         job_id ? std::to_string(*job_id) : std::string("-"));
        }
        for (auto id : startable_jobs(db)) {
            auto job = load_job(db, id);
            if (auto slot = m_executor.lease(db, job)) {
                job.slot = *slot;
                auto& upd = db.cached("UPDATE jobs SET state = 'leased', slot = ? WHERE id = ?");
                upd.bind(1, *slot).bind(2, id);
                upd.run();
                auto& run = db.cached("UPDATE runs SET state = 'running' WHERE id = ? AND state = 'queued'");
                run.bind(1, job.run_id);
                run.run();
                started.push_back(std::move(job));
            } else if (now - waiting_since(db, id) > device_wait) {
                std::string labels = json(job.labels).dump();
                finish_job(db, id, "device_unavailable",
                           "no healthy runner slot with labels " + labels + " within " +
                               std::to_string(std::chrono::duration_cast<std::chrono::seconds>(device_wait).count()) + "s");
            }
        }
        // Jobs cancelled meanwhile (superseded, PR closed, operator) whose process still runs.
        auto& st = db.cached("SELECT state FROM jobs WHERE id = ?");
        for (auto id : running) {
            st.reset();
            st.bind(1, id);
            if (st.step() && st.text(0) == "cancelled") cancelled.push_back(id);
        }
        st.reset();
        auto& off = db.cached("SELECT name FROM slots WHERE state = 'offline' AND next_health_at <= ?");
        off.bind(1, rfc3339(now));
        while (off.step()) due.push_back(off.text(0));
        off.reset();
        auto& next = db.cached("SELECT min(next_health_at) FROM slots WHERE state = 'offline' AND next_health_at > ?");
        next.bind(1, rfc3339(now));
        if (next.step() && next.opt_text(0)) {
            if (auto at = parse_rfc3339(*next.opt_text(0))) next_recheck = *at;
        }
        next.reset();
    });
    if (!s) {
        spdlog::warn("dispatcher: {}", s.error().message);
        return;
    }
    std::lock_guard lk(m_mu);
    m_next_recheck = std::chrono::steady_clock::time_point::max();
    if (next_recheck) {
        m_next_recheck = std::chrono::steady_clock::now() +
                         std::max(std::chrono::milliseconds(0), std::chrono::duration_cast<std::chrono::milliseconds>(
                                                                     *next_recheck - system_clock::now()));
    }
    for (auto id : cancelled)
        if (auto it = m_running.find(id); it != m_running.end()) it->second->store(true);
    std::vector<exec::JobToRun> not_started;
    for (auto& job : started) {
        auto flag = std::make_shared<std::atomic<bool>>(false);
        m_running[job.job_id] = flag;
        spdlog::info("job_id={} run_id={} tier={} attempt={} leased slot={}", job.job_id, job.run_id, job.tier,
                     job.attempt, job.slot);
        if (!spawn_worker([this, job, flag] { work(job, flag); })) {
            m_running.erase(job.job_id);
            not_started.push_back(job);
        }
    }
    for (const auto& slot : due) {
        if (m_rechecking[slot]) continue;
        m_rechecking[slot] = true;
        if (!spawn_worker([this, slot] { recheck(slot); })) m_rechecking[slot] = false;
    }
    if (!not_started.empty()) {
        // No thread for them now: back to the queue, their slots free again.
        m_writer.submit(
            [this, not_started](store::Db& db) {
                auto& back = db.cached("UPDATE jobs SET state = 'queued', slot = NULL WHERE id = ? AND state = 'leased'");
                for (const auto& job : not_started) {
                    back.reset();
                    back.bind(1, job.job_id);
                    back.run();
                    m_executor.release(db, job, exec::JobOutcome{});
                }
            },
            [](Status) {});
    }
}

void Dispatcher::recheck(const std::string& slot) {
    json h = m_executor.check_health(slot);
    const bool ok = h.value("ok", false);
    const auto interval = m_settings.health_interval;
    auto s = m_writer.run_sync([&](store::Db& db) {
        auto& st = db.cached(
            "UPDATE slots SET state = CASE WHEN ? THEN 'idle' ELSE 'offline' END, last_health = ?, next_health_at = ? "
            "WHERE name = ? AND state = 'offline'");
        st.bind(1, std::int64_t{ok}).bind(2, h.dump()).bind(3, rfc3339(system_clock::now() + interval)).bind(4, slot);
        st.run();
    });
    spdlog::log(ok ? spdlog::level::info : spdlog::level::warn, "slot={} health recheck {}", slot, ok ? "passed: back online" : "failed");
    {
        std::lock_guard lk(m_mu);
        m_rechecking[slot] = false;
    }
    notify();  // back online: jobs may start; still offline: its next recheck is scheduled
}

void Dispatcher::work(exec::JobToRun job, std::shared_ptr<std::atomic<bool>> cancel) {
    exec::JobOutcome outcome;
    try {
        outcome = m_executor.run(job, *cancel, [this, id = job.job_id](std::int64_t pgid) {
            m_writer.submit(
                [id, pgid](store::Db& db) {
                    auto& st = db.cached(
                        "UPDATE jobs SET state = 'running', pgid = ?, started_at = ? WHERE id = ? AND state = 'leased'");
                    st.bind(1, pgid).bind(2, now_rfc3339()).bind(3, id);
                    st.run();
                },
                [](Status) {});
        });
    } catch (const std::exception& e) {
        // A bug or an exhausted resource, never the test's doing: the job ends (and is retried)
        // instead of holding its slot forever.
        outcome = exec::JobOutcome{};
        outcome.conclusion = "infra_error";
        outcome.reason = std::string("crcrd could not run the job: ") + e.what();
        spdlog::error("job_id={} run failed: {}", job.job_id, e.what());
    }
    bool stopping;
    {
        std::lock_guard lk(m_mu);
        stopping = m_stopping;
    }
    if (stopping && outcome.conclusion == "cancelled") {
        outcome.conclusion = "infra_error";
        outcome.reason = "daemon stopped while the job ran";
    }
    auto store_outcome = [&](store::Db& db) {
        if (outcome.requeue) {
            auto& back = db.cached("UPDATE jobs SET state = 'queued', slot = NULL WHERE id = ? AND state IN ('leased','running')");
            back.bind(1, job.job_id);
            back.run();
        } else {
            auto& ins = db.cached("INSERT INTO test_results (job_id, name, outcome, duration_s, message) VALUES (?,?,?,?,?)");
            exec::TestCounts c = exec::count(outcome.results);
            for (const auto& t : outcome.results) {
                ins.reset();
                ins.bind(1, job.job_id).bind(2, t.name).bind(3, t.outcome);
                ins.bind(4, t.duration_s).bind(5, t.message);
                ins.run();
            }
            auto& upd = db.cached("UPDATE jobs SET metadata = ?, log_path = ?, counts = ?, evidence = ? WHERE id = ?");
            upd.bind(1, outcome.metadata.dump())
                .bind(2, outcome.log_path)
                .bind(3, json{{"passed", c.passed}, {"failed", c.failed}, {"skipped", c.skipped}, {"flaky", 0}}.dump())
                .bind(4, outcome.evidence.dump())
                .bind(5, job.job_id);
            upd.run();
            end_attempt(db, job, outcome.conclusion, outcome.reason, outcome.exit_status, m_settings);
        }
        m_executor.release(db, job, outcome);
    };
    // An outcome is never dropped: when it cannot be stored (a full disk, an I/O error) it is
    // tried again, with growing pauses, until it is stored or the daemon stops (the job is then
    // still running in the database, and the next start ends it "daemon restarted").
    auto s = m_writer.run_sync(store_outcome);
    for (auto pause = std::chrono::milliseconds(250); !s; pause = std::min(pause * 2, std::chrono::milliseconds(30'000))) {
        spdlog::error("job_id={} outcome not stored, again in {} ms: {}", job.job_id, pause.count(), s.error().message);
        {
            std::unique_lock lk(m_mu);
            if (m_stop_cv.wait_for(lk, pause, [&] { return m_stopping; })) break;
        }
        s = m_writer.run_sync(store_outcome);
    }
    spdlog::log(outcome.conclusion == "passed" ? spdlog::level::info : spdlog::level::warn,
                "job_id={} run_id={} tier={} attempt={} slot={} ended {}: {}", job.job_id, job.run_id, job.tier,
                job.attempt, job.slot, outcome.requeue ? "requeued" : outcome.conclusion, outcome.reason);
    if (!s) spdlog::error("job_id={} outcome not stored before the stop: {}", job.job_id, s.error().message);
    {
        std::lock_guard lk(m_mu);
        m_running.erase(job.job_id);
    }
    notify();
}

}  // namespace crcrd::sched
