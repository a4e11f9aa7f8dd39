#include "crcrd/app/daemon.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <malloc.h>
#include <sys/resource.h>
#include <pwd.h>
#include <unistd.h>
#include <systemd/sd-daemon.h>

#include <iostream>
#include <thread>
#include <vector>

#include "app/router.hpp"
#include "crcrd/config/config.hpp"
#include "crcrd/core/log.hpp"
#include "crcrd/http/server.hpp"
#include "crcrd/ingest/recovery.hpp"
#include "crcrd/ingest/webhook.hpp"
#include "crcrd/exec/job_env.hpp"
#include "crcrd/exec/local_executor.hpp"
#include "crcrd/github/auth.hpp"
#include "crcrd/core/files.hpp"
#include "crcrd/report/outbox.hpp"
#include "crcrd/report/sender.hpp"
#include "crcrd/sched/dispatcher.hpp"
#include "crcrd/sched/planner.hpp"
#include "crcrd/select/rules.hpp"
#include "crcrd/store/instance_lock.hpp"
#include "crcrd/store/retention.hpp"
#include "crcrd/store/schema.hpp"
#include "crcrd/store/writer.hpp"

namespace crcrd::app {

namespace asio = boost::asio;

namespace {

constexpr auto k_tuple = asio::as_tuple(asio::use_awaitable);

/// The config plus what it points at (secrets), or every error found.
/// What the sandbox hides: the configuration and state folders, and every secret file.
/// The folders the sandbox hides: the configuration's, the database's, the work root.
std::vector<std::filesystem::path> hidden_dirs(const config::Config& c) {
    std::vector<std::filesystem::path> dirs = {c.source.parent_path(), c.storage.path.parent_path()};
    if (!c.execution.work_root.empty()) dirs.push_back(c.execution.work_root);
    return dirs;
}

/// A command inside a folder the sandbox hides would need that folder unhidden (§4.1).
void check_command_visible(const config::Config& c, std::vector<std::string>& errors) {
    if (c.execution.isolation != "bwrap" || c.execution.command.empty()) return;
    const std::filesystem::path prog = c.execution.command.front();
    if (!prog.is_absolute()) return;  // looked up in the job's PATH
    for (const auto& d : hidden_dirs(c)) {
        if (exec::is_within(prog.parent_path(), d)) {
            errors.push_back("execution.command: " + prog.string() + " lies inside " + d.string() +
                             ", which the sandbox hides (the configuration, database or work folder); install the "
                             "test command elsewhere");
        }
    }
}

/// The account tests run as must exist where one is needed (§4.1): isolation user, or
/// bubblewrap under a daemon running as root.
void check_test_account(const config::Config& c, std::vector<std::string>& errors) {
    const auto& x = c.execution;
    if (x.command.empty() || !(x.isolation == "user" || (x.isolation == "bwrap" && ::geteuid() == 0))) return;
    const std::string name = x.user.value_or("nobody");
    if (!::getpwnam(name.c_str())) {
        errors.push_back("execution.user: no account '" + name + "' on this host (tests run as it" +
                         std::string(x.isolation == "bwrap" ? " when crcrd runs as root)" : ")"));
    }
}

sched::DispatcherSettings dispatcher_settings(const config::Config& c) {
    sched::DispatcherSettings d;
    d.device_wait = c.execution.device_wait;
    d.health_interval = c.execution.health_interval;
    d.lease_ttl = c.execution.lease_ttl;
    d.retry = sched::RetryPolicy{c.execution.infra_retries, c.execution.flaky_reruns};
    d.patterns = std::make_shared<const classify::Patterns>(
        classify::compile_patterns(c.classify.device_patterns, c.classify.infra_patterns));
    return d;
}

std::shared_ptr<const exec::LocalSettings> local_settings(const config::Config& c) {
    auto s = std::make_shared<exec::LocalSettings>();
    s->runners = c.runners;
    s->execution = c.execution;
    s->upstream = c.upstream;
    s->hidden_dirs = hidden_dirs(c);
    s->hidden_files = {c.source};
    for (const auto& r : c.ingest.secrets) s->hidden_files.push_back(r.file);
    for (const auto& r : c.ingest.standard_webhooks_secrets) s->hidden_files.push_back(r.file);
    if (c.server.tls) s->hidden_files.push_back(c.server.tls->key);
    if (c.report.github) {
        if (c.report.github->token_file) s->hidden_files.push_back(*c.report.github->token_file);
        if (c.report.github->private_key_file) s->hidden_files.push_back(*c.report.github->private_key_file);
    }
    if (c.report.crcr_callback && c.report.crcr_callback->token_file) {
        s->hidden_files.push_back(*c.report.crcr_callback->token_file);
    }
    return s;
}

ingest::RecoverySettings recovery_settings(const config::Config& c) {
    ingest::RecoverySettings r;
    r.recovery = *c.recovery;
    r.github = *c.report.github;  // config::parse requires it with recovery
    r.timeout = std::chrono::duration_cast<std::chrono::milliseconds>(c.report.timeout);
    return r;
}

report::OutboxSettings outbox_settings(const config::Config& c) {
    report::OutboxSettings o;
    o.context_prefix = c.report.prefix();
    o.github = c.report.github.has_value();
    o.file = c.report.file.has_value();
    o.callback = c.report.crcr_callback.has_value();
    o.target_url = c.report.target_url;
    if (o.target_url.empty() && !c.server.public_url.empty()) o.target_url = c.server.public_url + "/api/v1/runs/{run_id}";
    o.public_url = c.server.public_url;
    o.upstream_repo = c.trust.upstream_repo;
    if (c.report.crcr_callback) {
        o.workflow_name = c.report.crcr_callback->workflow_name;
        o.scheduled_event_type = c.report.crcr_callback->scheduled_event_type;
    }
    return o;
}

/// The reporters' credential files exist and hold what they should (a token; an RSA key).
void check_report_credentials(const config::ReportConfig& r, std::vector<std::string>& errors) {
    auto token = [&](const std::string& key, const std::filesystem::path& file) {
        auto text = read_file(file, 64 * 1024);
        if (!text) errors.push_back(key + ": " + text.error().message);
        else if (trim(*text).empty()) errors.push_back(key + ": " + file.string() + " is empty");
    };
    if (r.github && r.github->token_file) token("report.github.token_file", *r.github->token_file);
    if (r.github && r.github->private_key_file) {
        auto pem = read_file(*r.github->private_key_file, 1 << 20);
        if (!pem) {
            errors.push_back("report.github.private_key_file: " + pem.error().message);
        } else if (auto jwt = github::make_app_jwt(r.github->app_id.value_or(0), *pem, std::chrono::system_clock::now()); !jwt) {
            errors.push_back("report.github.private_key_file: " + jwt.error().message);
        }
    }
    if (r.crcr_callback && r.crcr_callback->token_file) token("report.crcr_callback.token_file", *r.crcr_callback->token_file);
    if (r.crcr_callback && !r.crcr_callback->token_command.empty()) {
        const auto& prog = r.crcr_callback->token_command.front();
        if (prog.find('/') != std::string::npos && ::access(prog.c_str(), X_OK) != 0) {
            errors.push_back("report.crcr_callback.token_command: " + prog + " is not an executable file");
        }
    }
}

/// The rules file's tier names, in order (none without a rules file).
std::vector<std::string> tier_names(const std::shared_ptr<const sched::PlannerConfig>& planner) {
    std::vector<std::string> out;
    if (planner && planner->rules)
        for (const auto& t : planner->rules->tiers) out.push_back(t.name);
    return out;
}

struct Checked {
    std::optional<config::Config> config;
    std::shared_ptr<const ingest::Policy> policy;
    std::shared_ptr<const sched::PlannerConfig> planner;  // null without selection.rules
    std::vector<std::string> errors;
};

Checked load_checked(const std::filesystem::path& path) {
    Checked out;
    auto loaded = config::load(path);
    if (!loaded.config) {
        out.errors = std::move(loaded.errors);
        return out;
    }
    auto ring = ingest::load_keyring(loaded.config->ingest, &out.errors);
    if (loaded.config->server.tls) {
        if (auto t = http::check_tls(*loaded.config->server.tls); !t) out.errors.push_back(t.error().message);
    }
    check_report_credentials(loaded.config->report, out.errors);
    check_command_visible(*loaded.config, out.errors);
    check_test_account(*loaded.config, out.errors);
    if (!loaded.config->selection.rules.empty()) {
        // Checked here so that --check-config and SIGHUP refuse a broken rules file too.
        auto rules = select::load_rules(loaded.config->selection.rules, &out.errors);
        if (rules) {
            auto pc = std::make_shared<sched::PlannerConfig>();
            pc->rules = std::make_shared<const select::Rules>(std::move(*rules));
            pc->sources.upstream = loaded.config->upstream;
            pc->sources.github = loaded.config->report.github;
            pc->sources.upstream_repo = loaded.config->trust.upstream_repo;
            out.planner = std::move(pc);
        }
    }
    if (!ring || !out.errors.empty()) return out;
    auto pol = std::make_shared<ingest::Policy>();
    pol->keys = std::move(*ring);
    pol->ingest = loaded.config->ingest;
    pol->trust = loaded.config->trust;
    pol->concurrency = loaded.config->selection.concurrency;
    pol->post_merge = loaded.config->selection.post_merge;
    pol->retry_after = loaded.config->storage.retry_after;
    out.policy = std::move(pol);
    out.config = std::move(loaded.config);
    return out;
}

void notify(const char* state) { sd_notify(0, state); }

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
    // One daemon per database, before anything touches a job, a slot or a process (§4.1).
    auto instance = store::InstanceLock::acquire(cfg.storage.path);
    if (!instance) {
        spdlog::critical("{}", instance.error().message);
        return 1;
    }
    store::OpenOptions db_opts;
    db_opts.busy_timeout_ms = static_cast<int>(cfg.storage.busy_timeout.count());
    auto db = store::Db::open(cfg.storage.path, db_opts);
    if (!db) {
        spdlog::critical("storage: {}", db.error().message);
        return 1;
    }
    if (auto m = store::migrate(**db); !m) {
        spdlog::critical("storage: {}", m.error().message);
        return 1;
    }
    store::WriterOptions writer_opts;
    writer_opts.max_pending = cfg.storage.max_pending_writes;
    writer_opts.checkpoint_path = cfg.storage.path;
    store::Writer writer(std::move(*db), writer_opts);
    // Reporting: every state change marks its run; the writer turns marks into outbox rows
    // inside the same commit, and the sender is woken once it is durable.
    report::OutboxHook outbox(outbox_settings(cfg));
    report::Sender sender(writer, cfg.storage.path, report::sender_settings(cfg.report));
    writer.set_commit_hooks([&outbox](store::Db& db) { outbox(db); }, [&sender] { sender.notify(); });
    // The writer's hooks use the outbox and the sender: on every way out, it stops first.
    struct StopWriterFirst {
        store::Writer& w;
        ~StopWriterFirst() { w.stop(); }
    } stop_writer_first{writer};
    sender.start();
    store::Pruner pruner(writer, std::chrono::duration_cast<std::chrono::milliseconds>(cfg.storage.retention),
                         std::chrono::duration_cast<std::chrono::milliseconds>(cfg.storage.rejected_retention),
                         std::chrono::duration_cast<std::chrono::milliseconds>(cfg.storage.prune_interval));
    pruner.start();
    ingest::WebhookHandler webhook(checked.policy, writer);
    sched::Planner planner(writer, cfg.storage.path, checked.planner);
    webhook.on_queued([&planner] { planner.notify(); });

    // Execution: only with a command and runner slots.
    exec::LocalExecutor executor(local_settings(cfg));
    std::unique_ptr<sched::Dispatcher> dispatcher;
    if (!cfg.execution.command.empty() && !cfg.runners.empty()) {
        if (cfg.execution.work_root.empty()) {
            std::cerr << config_path.string() << ": execution.work_root: required with execution.command\n";
            return 2;
        }
        dispatcher = std::make_unique<sched::Dispatcher>(writer, cfg.storage.path, executor, dispatcher_settings(cfg));
        if (auto s = dispatcher->sync_slots(); !s) {
            spdlog::critical("storage: {}", s.error().message);
            return 1;
        }
        if (auto s = dispatcher->recover(); !s) {
            spdlog::critical("storage: {}", s.error().message);
            return 1;
        }
        dispatcher->start();
        spdlog::info("execution: {} runner slot(s), isolation={}, work_root={}", cfg.runners.size(),
                     cfg.execution.isolation, cfg.execution.work_root.string());
    }
    planner.start();

    // One single-threaded io_context per network thread: Asio then takes no locks, and each
    // connection lives on one thread. contexts[0] also runs signals, timers and the acceptor.
    std::vector<std::unique_ptr<asio::io_context>> contexts;
    std::vector<asio::io_context*> context_ptrs;
    for (std::uint32_t i = 0; i < cfg.server.threads; ++i) {
        contexts.push_back(std::make_unique<asio::io_context>(1));
        context_ptrs.push_back(contexts.back().get());
    }
    asio::io_context& ioc = *contexts.front();
    asio::thread_pool readers(2);  // blocking reads of the admin API
    admin::Api api(cfg.storage.path, cfg.admin.tokens, readers.get_executor(), writer);
    api.set_runners(cfg.runners);
    api.set_metrics_public(cfg.admin.metrics_public);
    api.set_tiers(tier_names(checked.planner));
    api.on_queued([&planner] { planner.notify(); });
    // Missed-delivery recovery (§1.6), when a hook is configured.
    std::unique_ptr<ingest::Recovery> recovery;
    if (cfg.recovery) {
        recovery = std::make_unique<ingest::Recovery>(writer, cfg.storage.path, recovery_settings(cfg));
        api.on_recovery_run([&recovery] { recovery->run_now(); });
    }
    // With admin.listen, the admin API, /metrics and the dashboard move to a listener of their
    // own (e.g. on loopback or a management network) and the public one serves the webhook.
    const bool split = cfg.admin.listen.has_value();
    Router router(cfg.server.webhook_path, webhook, api, writer, split ? Router::Serves::webhook : Router::Serves::everything);
    Router admin_router(cfg.server.webhook_path, webhook, api, writer, Router::Serves::admin);
    http::Server server(context_ptrs, cfg.server, [&router](http::Request& r) { return router.route(r); });
    std::unique_ptr<http::Server> admin_server;
    if (split) {
        config::ServerConfig admin_cfg = cfg.server;
        admin_cfg.host = cfg.admin.listen_host;
        admin_cfg.port = cfg.admin.listen_port;
        admin_server = std::make_unique<http::Server>(context_ptrs, admin_cfg,
                                                      [&admin_router](http::Request& r) { return admin_router.route(r); });
    }
    // Signals are taken over before the listener announces itself: a SIGHUP sent as soon as
    // the daemon is up must reload, not end the process (SIGHUP's default action).
    asio::signal_set signals(ioc, SIGTERM, SIGINT, SIGHUP);
    if (auto s = server.start(); !s) {
        spdlog::critical("{}", s.error().message);
        return s.error().code == "config" ? 2 : 1;
    }
    spdlog::info("crcrd {} listening on {} (webhook {}) storage={}", CRCRD_VERSION, server.url(),
                 cfg.server.webhook_path, cfg.storage.path.string());
    if (admin_server) {
        if (auto s = admin_server->start(); !s) {
            spdlog::critical("admin.listen: {}", s.error().message);
            return s.error().code == "config" ? 2 : 1;
        }
        spdlog::info("admin API, /metrics and /ui/ on {}", admin_server->url());
    }

    bool stopping = false;
    asio::co_spawn(
        ioc,
        [&]() -> asio::awaitable<void> {
            for (;;) {
                auto [ec, sig] = co_await signals.async_wait(k_tuple);
                if (ec) co_return;
                if (sig == SIGHUP) {
                    notify("RELOADING=1");
                    auto next = load_checked(config_path);
                    if (next.errors.empty()) {
                        webhook.set_policy(next.policy);
                        planner.set_config(next.planner);
                        api.set_tokens(next.config->admin.tokens);
                        api.set_runners(next.config->runners);
                        api.set_metrics_public(next.config->admin.metrics_public);
                        api.set_tiers(tier_names(next.planner));
                        executor.set_settings(local_settings(*next.config));
                        outbox.set(outbox_settings(*next.config));
                        sender.set_settings(report::sender_settings(next.config->report));
                        if (recovery && next.config->recovery) recovery->set_settings(recovery_settings(*next.config));
                        if (next.config->server.tls) {
                            for (auto* srv : {&server, admin_server.get()}) {
                                if (!srv) continue;
                                if (auto t = srv->reload_tls(*next.config->server.tls); !t) {
                                    spdlog::error("reload: {}", t.error().message);
                                }
                            }
                        }
                        if (dispatcher) {
                            dispatcher->set_settings(dispatcher_settings(*next.config));
                            dispatcher->resync_slots();
                        }
                        spdlog::info("reloaded {}: secrets={} standard_secrets={}", config_path.string(),
                                     next.policy->keys.github.size(), next.policy->keys.standard.size());
                    } else {
                        for (const auto& e : next.errors) spdlog::error("reload refused: {}", e);
                        spdlog::error("reload refused: keeping the running configuration");
                    }
                    notify("READY=1");
                    continue;
                }
                if (stopping) continue;
                stopping = true;
                spdlog::info("signal {}: draining (at most {})", sig, format_duration(cfg.server.drain_timeout));
                notify("STOPPING=1");
                // Both listeners drain; the contexts stop when the last of them is done.
                auto drains = std::make_shared<int>(admin_server ? 2 : 1);
                auto done = [&contexts, drains](std::size_t left) {
                    if (left) spdlog::warn("drain deadline passed with {} connections open", left);
                    if (--*drains == 0)
                        for (auto& c : contexts) c->stop();
                };
                server.drain(cfg.server.drain_timeout, done);
                if (admin_server) admin_server->drain(cfg.server.drain_timeout, done);
                signals.cancel();
                co_return;
            }
        },
        asio::detached);

    // Summaries of rejection floods, once their minute ended.
    asio::steady_timer reject_summaries(ioc);
    asio::co_spawn(
        ioc,
        [&]() -> asio::awaitable<void> {
            for (;;) {
                reject_summaries.expires_after(std::chrono::seconds(10));
                auto [ec] = co_await reject_summaries.async_wait(k_tuple);
                if (ec || stopping) co_return;
                webhook.flush_reject_log();
            }
        },
        asio::detached);

    std::uint64_t watchdog_usec = 0;
    asio::steady_timer watchdog(ioc);
    if (sd_watchdog_enabled(0, &watchdog_usec) > 0 && watchdog_usec > 0) {
        asio::co_spawn(
            ioc,
            [&]() -> asio::awaitable<void> {
                for (;;) {
                    notify("WATCHDOG=1");
                    watchdog.expires_after(std::chrono::microseconds(watchdog_usec / 2));
                    auto [ec] = co_await watchdog.async_wait(k_tuple);
                    if (ec || stopping) co_return;
                }
            },
            asio::detached);
    }
    notify("READY=1");
    // After the listener: what recovery asks GitHub to redeliver comes back as webhooks.
    if (recovery) recovery->start();

    // Worker contexts have no work of their own between connections: keep them running.
    std::vector<asio::executor_work_guard<asio::io_context::executor_type>> guards;
    std::vector<std::thread> threads;
    for (std::size_t i = 1; i < contexts.size(); ++i) {
        guards.emplace_back(contexts[i]->get_executor());
        threads.emplace_back([c = contexts[i].get()] { run_context(*c); });
    }
    run_context(ioc);
    for (auto& t : threads) t.join();
    readers.join();
    if (dispatcher) dispatcher->stop();
    planner.stop();
    pruner.stop();
    if (recovery) recovery->stop();
    sender.stop();
    writer.stop();
    spdlog::info("stopped");
    return 0;
}

}  // namespace crcrd::app
