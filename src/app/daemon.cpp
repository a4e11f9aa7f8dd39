#include "crcrd/app/daemon.hpp"

#include <malloc.h>
#include <pwd.h>
#include <sys/resource.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>
#include <atomic>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <iostream>
#include <thread>
#include <vector>

#include "app/commit_lookup.hpp"
#include "app/router.hpp"
#include "app/settings.hpp"
#include "crcrd/config/config.hpp"
#include "crcrd/core/files.hpp"
#include "crcrd/core/log.hpp"
#include "crcrd/exec/build.hpp"
#include "crcrd/exec/job_env.hpp"
#include "crcrd/exec/registry.hpp"
#include "crcrd/github/auth.hpp"
#include "crcrd/http/server.hpp"
#include "crcrd/ingest/recovery.hpp"
#include "crcrd/ingest/webhook.hpp"
#include "crcrd/report/outbox.hpp"
#include "crcrd/report/sender.hpp"
#include "crcrd/sched/dispatcher.hpp"
#include "crcrd/sched/planner.hpp"
#include "crcrd/select/rules.hpp"
#include "crcrd/store/events.hpp"
#include "crcrd/store/instance_lock.hpp"
#include "crcrd/store/retention.hpp"
#include "crcrd/store/schema.hpp"
#include "crcrd/store/writer.hpp"

namespace crcrd::app {

namespace asio = boost::asio;

namespace {

constexpr auto k_tuple = asio::as_tuple(asio::use_awaitable);

void notify(const char* state) {
    sd_notify(0, state);
}

/// Request bodies of tens of KiB are allocated and freed on every delivery. glibc's default
/// trims each thread arena back to the OS as soon as its top is free, which costs a
/// madvise and a TLB shootdown per request (measured: a fifth of the CPU under load). Keep
/// up to 64 MiB of free heap instead.
void tune_malloc() {
    mallopt(M_TRIM_THRESHOLD, 64 * 1024 * 1024);
    mallopt(M_MMAP_THRESHOLD, 4 * 1024 * 1024);
}

/// Each connection and the database take descriptors: allow as many as the hard limit does.
void raise_fd_limit() {
    rlimit rl{};
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
}

/// Runs `ioc` until it is stopped. An exception that escapes a handler (a bug: sessions and
/// handlers catch their own) is logged and the context goes on, instead of ending the daemon.
void run_context(asio::io_context& ioc) {
    for (;;) {
        try {
            ioc.run();
            return;
        } catch (const std::exception& e) {
            spdlog::error("network thread: uncaught exception: {}", e.what());
        } catch (...) {
            spdlog::error("network thread: uncaught exception");
        }
    }
}

}  // namespace

int check_config(const std::filesystem::path& path, std::ostream& err) {
    auto checked = load_checked(path);
    for (const auto& e : checked.errors) err << path.string() << ": " << e << "\n";
    return checked.errors.empty() ? 0 : 2;
}

namespace {

/// The slots an executor offers, as runners for the admin API's labels (Slurm's slurm-N).
std::vector<config::RunnerConfig> slot_runners(const exec::Executor& e) {
    std::vector<config::RunnerConfig> out;
    for (const auto& o : e.slots()) {
        config::RunnerConfig r;
        r.name = o.name;
        r.labels = o.labels;
        out.push_back(std::move(r));
    }
    return out;
}

/// The running daemon: every part, built once from the first checked configuration. apply()
/// hands each part its settings; it runs at start and, unchanged, on every reload.
class Daemon {
  public:
    Daemon(std::filesystem::path config_path, Checked checked, store::Writer& writer)
        : m_config_path(std::move(config_path)),
          m_cfg(*checked.config),
          m_writer(writer),
          m_outbox(outbox_settings(m_cfg)),
          m_sender(writer, m_cfg.storage.path, report::sender_settings(m_cfg.report)),
          m_pruner(
              writer,
              std::chrono::duration_cast<std::chrono::milliseconds>(m_cfg.storage.retention),
              std::chrono::duration_cast<std::chrono::milliseconds>(
                  m_cfg.storage.rejected_retention),
              std::chrono::duration_cast<std::chrono::milliseconds>(m_cfg.storage.prune_interval)),
          m_webhook(checked.policy, writer),
          m_planner(writer, m_cfg.storage.path, checked.planner),
          m_api(m_cfg.storage.path, m_cfg.admin.tokens, m_readers.get_executor(), writer) {
        for (std::uint32_t i = 0; i < m_cfg.server.threads; ++i) {
            m_contexts.push_back(std::make_unique<asio::io_context>(1));
            m_context_ptrs.push_back(m_contexts.back().get());
        }
        m_checked = std::move(checked);
    }
    /// On every way out, the parts stop before they are destroyed, the writer (whose hooks use
    /// the outbox and the sender) with them.
    ~Daemon() { stop(); }
    Daemon(const Daemon&) = delete;
    Daemon& operator=(const Daemon&) = delete;

    /// Starts everything, serves until SIGTERM/SIGINT, stops everything; the exit code.
    int run() {
        if (int rc = start_metrics(); rc != 0) return rc;
        // A new run whose changed paths need no look-up is planned inside the commit that
        // stores it (its jobs queued with it). Reporting: every state change marks its run; the
        // writer turns marks into outbox rows inside the same commit (the new jobs' statuses
        // too), and the sender is woken once it is durable.
        // Each hook has a savepoint of its own: the outbox's failure does not undo the plans.
        m_writer.set_commit_hooks({[this](store::Db& db) { m_planner.plan_with_commit(db); },
                                   [this](store::Db& db) { m_outbox(db); }},
                                  [this] {
                                      // Only a commit that appended outbox rows wakes the
                                      // lanes; each lane's own outcomes and waits are its own.
                                      if (m_outbox.take_appended()) m_sender.notify();
                                      m_planner.committed();
                                  });
        m_api.on_outbox_lanes([this] { return report::lanes_json(m_sender.lanes()); });
        m_sender.start();
        m_pruner.start();
        if (int rc = create_execution(); rc != 0) return rc;
        if (m_cfg.recovery) {
            m_recovery = std::make_unique<ingest::Recovery>(m_writer, m_cfg.storage.path,
                                                            recovery_settings(m_cfg));
            m_api.on_recovery_run([this] { m_recovery->run_now(); });
        }
        apply(m_checked);  // the dispatcher's settings too, before it recovers anything
        if (int rc = start_execution(); rc != 0) return rc;
        // Planned jobs are leased at once, not at the dispatcher's next look (up to 500 ms).
        m_planner.on_planned([this] {
            if (m_dispatcher) m_dispatcher->notify();
        });
        m_planner.start();
        if (int rc = start_listeners(); rc != 0) return rc;
        serve_signals();
        start_timers();
        notify("READY=1");
        // After the listener: what recovery asks GitHub to redeliver comes back as webhooks.
        if (m_recovery) m_recovery->start();
        run_network();
        return 0;
    }

  private:
    /// The counters of /metrics: the writer hands each commit's events to them, and one writer
    /// item installs the event triggers and reads the totals they start from, so that no
    /// commit is counted twice or missed. Non-zero: the exit code.
    int start_metrics() {
        auto& metrics = m_api.metrics_registry();
        m_writer.set_event_sink([this, &metrics](const std::vector<store::Event>& events) {
            metrics.record(events);
            // Every new run (webhook, manual, retry, the post-merge run of a cancel) is planned
            // from the commit that stored it, on the writer's thread: not after the thread that
            // answers its request gets round to it (under a burst, milliseconds later). The
            // runs table's insert trigger emits run_created, so no path can miss it.
            // A run that ended with work left for the planner (bisection, the selection-miss
            // audit) wakes it for its follow-ups the same way.
            // A job that ended outside the dispatcher (superseded, its PR closed, cancelled by
            // an operator) wakes it: a command still running for it is stopped at once, not at
            // the dispatcher's next look.
            bool created = false, followup = false, job_ended = false;
            for (const auto& e : events) {
                created = created || e.kind == store::EventKind::run_created;
                followup = followup || e.kind == store::EventKind::followup;
                job_ended = job_ended || e.kind == store::EventKind::job_finished;
            }
            if (auto* d = m_wake_dispatcher.load(); d && job_ended) d->notify();
            if (followup)
                m_planner.notify_followups();
            else if (created)
                m_planner.notify();
        });
        store::EventTotals totals;
        auto seeded = m_writer.run_sync([&totals](store::Db& db) {
            store::install_event_triggers(db);
            totals = store::read_event_totals(db);
        });
        if (!seeded) {
            spdlog::critical("storage: {}", seeded.error().message);
            return 1;
        }
        metrics.seed(totals);
        return 0;
    }

    /// Every part's reloadable settings from `c`.
    void apply(const Checked& c) {
        const config::Config& cfg = *c.config;
        m_webhook.set_policy(c.policy);
        m_planner.set_config(c.planner);
        m_api.set_tokens(cfg.admin.tokens);
        m_api.set_metrics_public(cfg.admin.metrics_public);
        m_api.set_ui(cfg.admin.ui_public, cfg.trust.upstream_repo);
        m_api.set_tiers(tier_names(c.planner));
        m_commits->set_upstream(cfg.upstream);  // what it remembers stays across reloads
        m_api.set_trunk(cfg.bisect.refs, [c = m_commits](const std::vector<std::string>& shas) {
            return c->lookup(shas);
        });
        if (cfg.build) {
            m_api.set_build_cache([dir = cfg.build->cache_dir](const std::string& key) {
                exec::remove_build(dir, key);
            });
        } else {
            m_api.set_build_cache(nullptr);
        }
        if (cfg.execution.executor != m_cfg.execution.executor) {
            spdlog::error("reload: execution.executor stays {} until the next start",
                          m_cfg.execution.executor);
        }
        // (The executor chosen at start stays; its settings follow the file.)
        if (m_executor && cfg.execution.executor == m_cfg.execution.executor) {
            m_executor->set_settings(executor_settings(cfg));
        }
        if (m_executor)
            m_api.set_runners(slot_runners(*m_executor));  // after the executor's reload
        m_outbox.set(outbox_settings(cfg));
        m_sender.set_settings(report::sender_settings(cfg.report));
        if (m_recovery && cfg.recovery) m_recovery->set_settings(recovery_settings(cfg));
        if (m_dispatcher) m_dispatcher->set_settings(dispatcher_settings(cfg));
    }

    /// The dispatcher, only with a command and runner slots; apply() gives it its settings.
    /// Non-zero: the exit code.
    int create_execution() {
        const auto* kind = exec::find_executor(m_cfg.execution.executor);
        if (!kind) return 2;  // the configuration refused it
        m_executor = kind->make(executor_settings(m_cfg));
        m_api.on_cluster([this] { return m_executor->cluster(); });
        if (m_cfg.execution.command.empty() || (kind->slots_from_runners && m_cfg.runners.empty()))
            return 0;
        if (kind->needs_work_root && m_cfg.execution.work_root.empty()) {
            std::cerr << m_config_path.string()
                      << ": execution.work_root: required with execution.command\n";
            return 2;
        }
        m_dispatcher = std::make_unique<sched::Dispatcher>(
            m_writer, m_cfg.storage.path, *m_executor, sched::DispatcherSettings{});
        return 0;
    }

    /// Slots synced, what a previous daemon left ended, the dispatcher started. Non-zero: the
    /// exit code.
    int start_execution() {
        if (!m_dispatcher) return 0;
        for (auto step : {&sched::Dispatcher::sync_slots, &sched::Dispatcher::recover}) {
            if (auto s = ((*m_dispatcher).*step)(); !s) {
                spdlog::critical("storage: {}", s.error().message);
                return 1;
            }
        }
        m_dispatcher->start();
        m_wake_dispatcher.store(m_dispatcher.get());
        spdlog::info("execution: {}",
                     exec::find_executor(m_cfg.execution.executor)->describe(m_cfg));
        return 0;
    }

    /// The public listener and, with admin.listen, the admin one (the API, /metrics and the
    /// dashboard move there; the public one serves the webhook). Non-zero: the exit code.
    int start_listeners() {
        const bool split = m_cfg.admin.listen.has_value();
        m_router =
            std::make_unique<Router>(m_cfg.server.webhook_path, m_webhook, m_api, m_writer,
                                     split ? Router::Serves::webhook : Router::Serves::everything);
        m_server = std::make_unique<http::Server>(
            m_context_ptrs, m_cfg.server, [this](http::Request& r) { return m_router->route(r); });
        if (split) {
            m_admin_router = std::make_unique<Router>(m_cfg.server.webhook_path, m_webhook, m_api,
                                                      m_writer, Router::Serves::admin);
            config::ServerConfig admin_cfg = m_cfg.server;
            admin_cfg.host = m_cfg.admin.listen_host;
            admin_cfg.port = m_cfg.admin.listen_port;
            m_admin_server = std::make_unique<http::Server>(
                m_context_ptrs, admin_cfg,
                [this](http::Request& r) { return m_admin_router->route(r); });
        }
        // Signals are taken over before the listener announces itself: a SIGHUP sent as soon
        // as the daemon is up must reload, not end the process (SIGHUP's default action).
        m_signals = std::make_unique<asio::signal_set>(ioc(), SIGTERM, SIGINT, SIGHUP);
        if (auto s = m_server->start(); !s) {
            spdlog::critical("{}", s.error().message);
            return s.error().code == Errc::config ? 2 : 1;
        }
        spdlog::info("crcrd {} listening on {} (webhook {}) storage={}", CRCRD_VERSION,
                     m_server->url(), m_cfg.server.webhook_path, m_cfg.storage.path.string());
        if (m_admin_server) {
            if (auto s = m_admin_server->start(); !s) {
                spdlog::critical("admin.listen: {}", s.error().message);
                return s.error().code == Errc::config ? 2 : 1;
            }
            spdlog::info("admin API, /metrics and /ui/ on {}", m_admin_server->url());
        }
        return 0;
    }

    /// SIGHUP reloads; SIGTERM/SIGINT drain both listeners and stop the network threads.
    void serve_signals() {
        asio::co_spawn(
            ioc(),
            [this]() -> asio::awaitable<void> {
                for (;;) {
                    auto [ec, sig] = co_await m_signals->async_wait(k_tuple);
                    if (ec) co_return;
                    if (sig == SIGHUP) {
                        reload();
                        continue;
                    }
                    if (m_stopping) continue;
                    drain(sig);
                    co_return;
                }
            },
            asio::detached);
    }

    void reload() {
        notify("RELOADING=1");
        auto next = load_checked(m_config_path);
        if (next.errors.empty()) {
            apply(next);
            if (next.config->server.tls) {
                for (auto* srv : {m_server.get(), m_admin_server.get()}) {
                    if (!srv) continue;
                    if (auto t = srv->reload_tls(*next.config->server.tls); !t)
                        spdlog::error("reload: {}", t.error().message);
                }
            }
            if (m_dispatcher) m_dispatcher->resync_slots();
            spdlog::info("reloaded {}: secrets={} standard_secrets={}", m_config_path.string(),
                         next.policy->keys.github.size(), next.policy->keys.standard.size());
        } else {
            for (const auto& e : next.errors) spdlog::error("reload refused: {}", e);
            spdlog::error("reload refused: keeping the running configuration");
        }
        notify("READY=1");
    }

    void drain(int sig) {
        m_stopping = true;
        spdlog::info("signal {}: draining (at most {})", sig,
                     format_duration(m_cfg.server.drain_timeout));
        notify("STOPPING=1");
        // Both listeners drain; the contexts stop when the last of them is done.
        auto drains = std::make_shared<int>(m_admin_server ? 2 : 1);
        auto done = [this, drains](std::size_t left) {
            if (left) spdlog::warn("drain deadline passed with {} connections open", left);
            if (--*drains == 0)
                for (auto& c : m_contexts) c->stop();
        };
        m_server->drain(m_cfg.server.drain_timeout, done);
        if (m_admin_server) m_admin_server->drain(m_cfg.server.drain_timeout, done);
        m_signals->cancel();
    }

    /// Rejection-flood summaries once their minute ended, and systemd's watchdog when asked for.
    void start_timers() {
        m_reject_summaries = std::make_unique<asio::steady_timer>(ioc());
        asio::co_spawn(
            ioc(),
            [this]() -> asio::awaitable<void> {
                for (;;) {
                    m_reject_summaries->expires_after(std::chrono::seconds(10));
                    auto [ec] = co_await m_reject_summaries->async_wait(k_tuple);
                    if (ec || m_stopping) co_return;
                    m_webhook.flush_reject_log();
                    m_api.flush_refused_log();
                }
            },
            asio::detached);
        std::uint64_t usec = 0;
        if (sd_watchdog_enabled(0, &usec) <= 0 || usec == 0) return;
        m_watchdog = std::make_unique<asio::steady_timer>(ioc());
        asio::co_spawn(
            ioc(),
            [this, usec]() -> asio::awaitable<void> {
                for (;;) {
                    notify("WATCHDOG=1");
                    m_watchdog->expires_after(std::chrono::microseconds(usec / 2));
                    auto [ec] = co_await m_watchdog->async_wait(k_tuple);
                    if (ec || m_stopping) co_return;
                }
            },
            asio::detached);
    }

    /// Runs every network thread until the drain stopped them.
    void run_network() {
        // Worker contexts have no work of their own between connections: keep them running.
        std::vector<asio::executor_work_guard<asio::io_context::executor_type>> guards;
        std::vector<std::thread> threads;
        for (std::size_t i = 1; i < m_contexts.size(); ++i) {
            guards.emplace_back(m_contexts[i]->get_executor());
            threads.emplace_back([c = m_contexts[i].get()] { run_context(*c); });
        }
        run_context(ioc());
        for (auto& t : threads) t.join();
    }

    void stop() {
        if (m_stopped) return;
        m_stopped = true;
        m_readers.join();
        m_wake_dispatcher.store(nullptr);
        if (m_dispatcher) m_dispatcher->stop();
        m_planner.stop();
        m_pruner.stop();
        if (m_recovery) m_recovery->stop();
        m_sender.stop();
        m_writer.stop();
        spdlog::info("stopped");
    }

    /// contexts[0] also runs signals, timers and the acceptors.
    asio::io_context& ioc() { return *m_contexts.front(); }

    std::filesystem::path m_config_path;
    const config::Config m_cfg;  // the first configuration: what a reload cannot change
    Checked m_checked;
    store::Writer& m_writer;
    report::OutboxHook m_outbox;
    report::Sender m_sender;
    store::Pruner m_pruner;
    ingest::WebhookHandler m_webhook;
    sched::Planner m_planner;
    // The executor the configuration chose at start (a reload cannot change which).
    std::unique_ptr<exec::Executor> m_executor;
    std::unique_ptr<sched::Dispatcher> m_dispatcher;
    /// The dispatcher, once started, for the writer's thread to wake (null before and after).
    std::atomic<sched::Dispatcher*> m_wake_dispatcher{nullptr};
    // One single-threaded io_context per network thread: Asio then takes no locks, and each
    // connection lives on one thread.
    std::vector<std::unique_ptr<asio::io_context>> m_contexts;
    std::vector<asio::io_context*> m_context_ptrs;
    asio::thread_pool m_readers{2};  // blocking reads of the admin API
    admin::Api m_api;
    std::shared_ptr<CommitLookup> m_commits = std::make_shared<CommitLookup>();
    std::unique_ptr<ingest::Recovery> m_recovery;
    std::unique_ptr<Router> m_router, m_admin_router;
    std::unique_ptr<http::Server> m_server, m_admin_server;
    std::unique_ptr<asio::signal_set> m_signals;
    std::unique_ptr<asio::steady_timer> m_reject_summaries, m_watchdog;
    bool m_stopping = false;
    bool m_stopped = false;
};

}  // namespace

int run(const std::filesystem::path& config_path) {
    auto checked = load_checked(config_path);
    if (!checked.errors.empty()) {
        for (const auto& e : checked.errors) std::cerr << config_path.string() << ": " << e << "\n";
        return 2;
    }
    const config::Config& cfg = *checked.config;
    log::init(cfg.log_level);
    raise_fd_limit();
    tune_malloc();
    std::error_code fs_ec;
    std::filesystem::create_directories(cfg.storage.path.parent_path(), fs_ec);
    // One daemon per database, before anything touches a job, a slot or a process
    // (docs/execution.md).
    auto instance = store::InstanceLock::acquire(cfg.storage.path);
    if (!instance) {
        spdlog::critical("{}", instance.error().message);
        return 1;
    }
    store::WriterOptions writer_opts;
    writer_opts.max_pending = cfg.storage.max_pending_writes;
    writer_opts.checkpoint_path = cfg.storage.path;
    auto opened = store::open_writer(
        cfg.storage.path, static_cast<int>(cfg.storage.busy_timeout.count()), writer_opts);
    if (!opened) {
        spdlog::critical("storage: {}", opened.error().message);
        return 1;
    }
    // The writer outlives the daemon's parts: they submit work until they stop.
    auto writer = std::move(*opened);
    Daemon daemon(config_path, std::move(checked), *writer);
    return daemon.run();
}

}  // namespace crcrd::app
