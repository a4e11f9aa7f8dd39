#include "app/settings.hpp"

#include <pwd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "crcrd/core/files.hpp"
#include "crcrd/core/subprocess.hpp"
#include "crcrd/exec/job_env.hpp"
#include "crcrd/exec/registry.hpp"
#include "crcrd/github/auth.hpp"
#include "crcrd/http/server.hpp"
#include "crcrd/select/rules.hpp"

namespace crcrd::app {

/// The folders the sandbox hides: the configuration's, the database's, the work root, and the
/// sockets that lead back to the daemon's user: the sandbox launcher's folder (the configured
/// one, and the package's, which a Slurm node on a packaged host has) and the D-Bus system
/// bus's. Those a host lacks are dropped where the command runs (exec::drop_absent_masks).
std::vector<std::filesystem::path> hidden_dirs(const config::Config& c) {
    std::vector<std::filesystem::path> dirs = {c.source.parent_path(),
                                               c.storage.path.parent_path()};
    if (!c.execution.work_root.empty()) dirs.push_back(c.execution.work_root);
    if (const auto* kind = exec::find_executor(c.execution.executor)) {
        for (auto& d : kind->hidden_dirs(c)) dirs.push_back(std::move(d));
    }
    if (c.execution.sandbox_socket) dirs.push_back(c.execution.sandbox_socket->parent_path());
    // Every build in the cache; a job gets its own (docs/build.md) bound back in.
    if (c.build) dirs.push_back(c.build->cache_dir);
    for (const char* d : {"/run/crcrd", "/run/dbus"}) {
        if (std::find(dirs.begin(), dirs.end(), d) == dirs.end()) dirs.emplace_back(d);
    }
    return dirs;
}

namespace {

/// A command inside a folder the sandbox hides would need that folder unhidden (docs/execution.md).
void check_command_visible(const config::Config& c, std::vector<std::string>& errors) {
    if (c.execution.isolation != config::Isolation::bwrap) return;
    auto check = [&](const char* key, const config::Strings& command) {
        if (command.empty()) return;
        const std::filesystem::path prog = command.front();
        if (!prog.is_absolute()) return;  // looked up in the job's PATH
        for (const auto& d : hidden_dirs(c)) {
            if (exec::is_within(prog.parent_path(), d)) {
                errors.push_back(std::string(key) + ": " + prog.string() + " lies inside " +
                                 d.string() +
                                 ", which the sandbox hides (the configuration, database, work or "
                                 "build cache folder); install the command elsewhere");
            }
        }
    };
    check("execution.command", c.execution.command);
    if (c.build) check("build.command", c.build->command);
}

}  // namespace

namespace {

/// The account tests run as must exist where one is needed (docs/execution.md): isolation user, or
/// bubblewrap under a daemon running as root.
void check_test_account(const config::Config& c, std::vector<std::string>& errors) {
    const auto& x = c.execution;
    if (x.command.empty() || !(x.isolation == config::Isolation::user ||
                               (x.isolation == config::Isolation::bwrap && ::geteuid() == 0)))
        return;
    const std::string name = x.user.value_or("nobody");
    if (!::getpwnam(name.c_str())) {
        errors.push_back("execution.user: no account '" + name + "' on this host (tests run as it" +
                         std::string(x.isolation == config::Isolation::bwrap
                                         ? " when crcrd runs as root)"
                                         : ")"));
    }
}

/// bubblewrap started by the daemon itself (no sandbox_socket, not root) must be able to make
/// its namespaces and mount /proc here: under the packaged crcrd.service it cannot, and every
/// job would end as an infrastructure error. One `bwrap ... true` with the jobs' own prefix.
void check_bwrap_here(const config::Config& c, std::vector<std::string>& errors) {
    const auto& x = c.execution;
    if (x.command.empty() || x.isolation != config::Isolation::bwrap || x.executor != "local" ||
        x.sandbox_socket || ::geteuid() == 0)
        return;
    // The probe is the jobs' own prefix (exec::bwrap_prefix), so that it cannot drift from
    // it, with an empty folder of its own as the job's folder.
    std::error_code ec;
    std::filesystem::path tmp = std::filesystem::temp_directory_path(ec);
    if (ec) tmp = "/tmp";  // $TMPDIR names no folder
    std::string dir = (tmp / "crcrd-bwrap-probe.XXXXXX").string();
    if (::mkdtemp(dir.data()) == nullptr) {
        errors.push_back("execution.isolation: cannot create a folder for the bubblewrap probe (" +
                         dir + ": " + std::strerror(errno) + ")");
        return;
    }
    exec::SandboxSpec spec;
    spec.job_dir = dir;
    spec.no_network = x.network == config::Network::none;
    auto argv = exec::bwrap_prefix(spec);
    argv.emplace_back("true");
    SubprocessOptions o;
    o.timeout = std::chrono::seconds(30);
    o.max_output = 4096;
    auto r = run_subprocess(argv, o);
    ::rmdir(dir.c_str());
    if (r && r->exit_code == 0) return;
    const std::string why = !r             ? r.error().message
                            : r->timed_out ? "timed out"
                                           : trim(r->err + r->out);
    errors.push_back(
        "execution.isolation: bubblewrap cannot make the jobs' sandbox here (" +
        why.substr(0, 300) +
        "); under the packaged crcrd.service set execution.sandbox_socket: /run/crcrd/sandbox.sock "
        "(docs/operations.md, \"The sandbox launcher\")");
}

}  // namespace

sched::DispatcherSettings dispatcher_settings(const config::Config& c) {
    sched::DispatcherSettings d;
    d.device_wait = c.execution.device_wait;
    d.health_interval = c.execution.health_interval;
    d.lease_ttl = c.execution.lease_ttl;
    d.retry = sched::RetryPolicy{c.execution.infra_retries, c.execution.flaky_reruns};
    d.rerun_failed_tests = c.execution.rerun == config::RerunScope::failed_tests;
    d.reuse_window =
        std::chrono::duration_cast<std::chrono::milliseconds>(c.selection.reuse_window);
    d.base_check_run = c.classify.base_check == config::BaseCheck::run;
    d.base_window = c.classify.base_check != config::BaseCheck::off
                        ? std::optional(std::chrono::duration_cast<std::chrono::milliseconds>(
                              c.classify.base_window))
                        : std::nullopt;
    d.patterns = std::make_shared<const classify::Patterns>(
        classify::compile_patterns(c.classify.device_patterns, c.classify.infra_patterns));
    if (c.build) {
        sched::BuildStageSettings b;
        b.build = *c.build;
        b.env = c.execution.env;
        b.backend_dir = c.execution.backend_dir;
        b.min_free_bytes = c.execution.min_free_bytes;
        b.upstream = c.upstream;
        d.build = std::move(b);
    }
    return d;
}

std::shared_ptr<const exec::ExecutorSettings> executor_settings(const config::Config& c) {
    auto s = std::make_shared<exec::ExecutorSettings>();
    s->runners = c.runners;
    s->execution = c.execution;
    s->upstream = c.upstream;
    s->build = c.build;
    s->hidden_dirs = hidden_dirs(c);
    s->hidden_files = {c.source};
    for (const auto& r : c.ingest.secrets) s->hidden_files.push_back(r.file);
    for (const auto& r : c.ingest.standard_webhooks_secrets) s->hidden_files.push_back(r.file);
    if (c.server.tls) s->hidden_files.push_back(c.server.tls->key);
    if (c.report.github) {
        if (c.report.github->token_file) s->hidden_files.push_back(*c.report.github->token_file);
        if (c.report.github->private_key_file)
            s->hidden_files.push_back(*c.report.github->private_key_file);
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
    if (o.target_url.empty() && !c.server.public_url.empty())
        o.target_url = c.server.public_url + "/ui/runs/{run_id}";
    o.public_url = c.server.public_url;
    o.upstream_repo = c.trust.upstream_repo;
    if (c.report.crcr_callback) {
        o.workflow_name = c.report.crcr_callback->workflow_name;
        o.scheduled_event_type = c.report.crcr_callback->scheduled_event_type;
    }
    return o;
}

namespace {

/// The reporters' credential files exist and hold what they should (a token; an RSA key).
void check_report_credentials(const config::ReportConfig& r, std::vector<std::string>& errors) {
    auto token = [&](const std::string& key, const std::filesystem::path& file) {
        auto text = read_file(file, 64 * 1024);
        if (!text)
            errors.push_back(key + ": " + text.error().message);
        else if (trim(*text).empty())
            errors.push_back(key + ": " + file.string() + " is empty");
    };
    if (r.github && r.github->token_file) token("report.github.token_file", *r.github->token_file);
    if (r.github && r.github->private_key_file) {
        auto pem = read_file(*r.github->private_key_file, 1 << 20);
        if (!pem) {
            errors.push_back("report.github.private_key_file: " + pem.error().message);
        } else if (auto jwt = github::make_app_jwt(r.github->app_id.value_or(0), *pem,
                                                   std::chrono::system_clock::now());
                   !jwt) {
            errors.push_back("report.github.private_key_file: " + jwt.error().message);
        }
    }
    if (r.crcr_callback && r.crcr_callback->token_file)
        token("report.crcr_callback.token_file", *r.crcr_callback->token_file);
    if (r.crcr_callback && !r.crcr_callback->token_command.empty()) {
        const auto& prog = r.crcr_callback->token_command.front();
        if (prog.find('/') != std::string::npos && ::access(prog.c_str(), X_OK) != 0) {
            errors.push_back("report.crcr_callback.token_command: " + prog +
                             " is not an executable file");
        }
    }
}

}  // namespace

/// The rules file's tier names, in order (none without a rules file).
std::vector<std::string> tier_names(const std::shared_ptr<const sched::PlannerConfig>& planner) {
    std::vector<std::string> out;
    if (planner && planner->rules)
        for (const auto& t : planner->rules->tiers) out.push_back(t.name);
    return out;
}

Checked load_checked(const std::filesystem::path& path) {
    Checked out;
    auto loaded = config::load(path, exec::executor_keys());
    if (!loaded.config) {
        out.errors = std::move(loaded.errors);
        return out;
    }
    auto ring = ingest::load_keyring(loaded.config->ingest, &out.errors);
    if (loaded.config->server.tls) {
        if (auto t = http::check_tls(*loaded.config->server.tls); !t)
            out.errors.push_back(t.error().message);
    }
    check_report_credentials(loaded.config->report, out.errors);
    check_command_visible(*loaded.config, out.errors);
    check_test_account(*loaded.config, out.errors);
    if (const auto* kind = exec::find_executor(loaded.config->execution.executor))
        kind->check(*loaded.config, out.errors);
    check_bwrap_here(*loaded.config, out.errors);
    if (!loaded.config->selection.rules.empty()) {
        // Checked here so that --check-config and SIGHUP refuse a broken rules file too.
        auto rules = select::load_rules(loaded.config->selection.rules, &out.errors);
        if (rules) {
            auto pc = std::make_shared<sched::PlannerConfig>();
            pc->rules = std::make_shared<const select::Rules>(std::move(*rules));
            pc->sources.upstream = loaded.config->upstream;
            pc->sources.github = loaded.config->report.github;
            if (pc->sources.github) {
                pc->sources.github_auth =
                    std::make_shared<github::Auth>(*pc->sources.github, std::chrono::seconds(30));
            }
            pc->sources.upstream_repo = loaded.config->trust.upstream_repo;
            pc->bisect = loaded.config->bisect;
            if (loaded.config->build)
                pc->build_timeout = std::chrono::duration_cast<std::chrono::milliseconds>(
                    loaded.config->build->timeout);
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

}  // namespace crcrd::app
