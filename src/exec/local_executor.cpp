#include "crcrd/exec/local_executor.hpp"

#include <pwd.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>

#include "crcrd/core/files.hpp"
#include "crcrd/core/subprocess.hpp"
#include "crcrd/core/time.hpp"
#include "crcrd/exec/supervisor.hpp"
#include "crcrd/exec/workspace.hpp"

namespace crcrd::exec {

using nlohmann::json;

namespace {

bool covers(const std::vector<std::string>& have, const std::vector<std::string>& need) {
    return std::all_of(need.begin(), need.end(),
                       [&](const std::string& l) { return std::find(have.begin(), have.end(), l) != have.end(); });
}

std::string first_line_of(const std::vector<std::string>& argv, const std::optional<std::filesystem::path>& cwd = {}) {
    if (argv.empty()) return {};
    SubprocessOptions o;
    o.timeout = std::chrono::seconds(30);
    o.max_output = 4096;
    o.cwd = cwd;
    auto r = run_subprocess(argv, o);
    if (!r || r->exit_code != 0) return {};
    return trim(r->out.substr(0, r->out.find('\n')));
}

std::string log_excerpt(const std::filesystem::path& path) {
    auto text = read_file(path, 256u << 20);
    return text ? *text : std::string();
}

}  // namespace

LocalExecutor::LocalExecutor(std::shared_ptr<const LocalSettings> settings) : m_settings(std::move(settings)) {}

void LocalExecutor::set_settings(std::shared_ptr<const LocalSettings> settings) {
    std::lock_guard lk(m_mu);
    m_settings = std::move(settings);
}

std::shared_ptr<const LocalSettings> LocalExecutor::settings() const {
    std::lock_guard lk(m_mu);
    return m_settings;
}

const config::RunnerConfig* LocalExecutor::runner(const LocalSettings& s, const std::string& name) const {
    for (const auto& r : s.runners)
        if (r.name == name) return &r;
    return nullptr;
}

void LocalExecutor::sync_slots(store::Db& db, const std::vector<config::RunnerConfig>& runners) {
    auto& add = db.cached("INSERT INTO slots (name) VALUES (?) ON CONFLICT (name) DO NOTHING");
    for (const auto& r : runners) {
        add.reset();
        add.bind(1, r.name);
        add.run();
    }
    std::string names;
    auto list = db.prepare("SELECT name FROM slots WHERE state <> 'busy'");
    std::vector<std::string> gone;
    while (list.step()) {
        std::string n = list.text(0);
        if (std::none_of(runners.begin(), runners.end(), [&](const auto& r) { return r.name == n; })) gone.push_back(n);
    }
    auto& del = db.cached("DELETE FROM slots WHERE name = ?");
    for (const auto& n : gone) {
        del.reset();
        del.bind(1, n);
        del.run();
    }
}

json LocalExecutor::health_check(const config::RunnerConfig& r) {
    json h = {{"ok", true}, {"at", now_rfc3339()}, {"exit_status", nullptr}, {"output", ""}};
    if (r.health_check.empty()) return h;
    SubprocessOptions o;
    o.timeout = std::chrono::seconds(60);
    o.max_output = 4096;
    auto res = run_subprocess(r.health_check, o);
    if (!res) {
        h["ok"] = false;
        h["output"] = res.error().message;
        return h;
    }
    h["ok"] = res->exit_code == 0 && !res->timed_out;
    h["exit_status"] = res->exit_code;
    h["output"] = trim(res->out + res->err).substr(0, 1000);
    return h;
}

json LocalExecutor::check_health(const std::string& slot) {
    auto s = settings();
    const auto* r = runner(*s, slot);
    if (!r) return json{{"ok", false}, {"at", now_rfc3339()}, {"output", "no such runner in the configuration"}};
    return health_check(*r);
}

std::optional<std::string> LocalExecutor::lease(store::Db& db, const JobToRun& job) {
    auto s = settings();
    auto& free = db.cached("SELECT name FROM slots WHERE state = 'idle' AND drained = 0 ORDER BY name");
    std::vector<std::string> names;
    while (free.step()) names.push_back(free.text(0));
    free.reset();
    for (const auto& name : names) {
        const auto* r = runner(*s, name);
        if (!r || !covers(r->labels, job.labels)) continue;
        auto& take = db.cached(
            "UPDATE slots SET state = 'busy', job_id = ?, lease_expires_at = ? WHERE name = ? AND state = 'idle'");
        take.bind(1, job.job_id)
            .bind(2, rfc3339(std::chrono::system_clock::now() + s->execution.lease_ttl))
            .bind(3, name);
        take.run();
        if (db.changes() == 1) return name;
    }
    return std::nullopt;
}

void LocalExecutor::release(store::Db& db, const JobToRun& job, const JobOutcome& outcome) {
    auto s = settings();
    if (outcome.slot_unhealthy) {
        auto& off = db.cached(
            "UPDATE slots SET state = 'offline', job_id = NULL, lease_expires_at = NULL, last_health = ?, "
            "next_health_at = ? WHERE name = ?");
        off.bind(1, outcome.health.dump())
            .bind(2, rfc3339(std::chrono::system_clock::now() + s->execution.health_interval))
            .bind(3, job.slot);
        off.run();
        return;
    }
    auto& idle = db.cached(
        "UPDATE slots SET state = 'idle', job_id = NULL, lease_expires_at = NULL, "
        "last_health = coalesce(?, last_health) WHERE name = ? AND job_id = ?");
    idle.bind(1, outcome.health.is_null() ? std::optional<std::string>() : outcome.health.dump())
        .bind(2, job.slot)
        .bind(3, job.job_id);
    idle.run();
}

JobOutcome LocalExecutor::run(const JobToRun& job, const std::atomic<bool>& cancel,
                              const std::function<void(std::int64_t)>& on_running) {
    auto s = settings();
    JobOutcome out;
    const auto* slot = runner(*s, job.slot);
    if (!slot) {
        out.conclusion = "infra_error";
        out.reason = "slot " + job.slot + " is no longer configured";
        return out;
    }
    // The device first: a failing health check takes the slot offline and the job waits.
    out.health = health_check(*slot);
    if (!out.health["ok"].get<bool>()) {
        out.requeue = true;
        out.slot_unhealthy = true;
        out.reason = "health check of " + slot->name + " failed";
        return out;
    }
    const auto started = std::chrono::system_clock::now();
    auto ws = prepare_workspace(s->execution, s->upstream, job.job_id, job.sha);
    if (!ws) {
        out.conclusion = "infra_error";
        out.reason = ws.error().message;
        return out;
    }
    JobContext ctx;
    ctx.run_id = job.run_id;
    ctx.job_id = job.job_id;
    ctx.attempt = job.attempt;
    ctx.tier = job.tier;
    ctx.pytorch_sha = job.sha;
    ctx.pytorch_dir = ws->checkout;
    ctx.pr = job.pr;
    ctx.slot = slot->name;
    ctx.job_dir = ws->job_dir;
    ctx.tests_file = ws->job_dir / "tests.txt";
    ctx.junit_dir = ws->job_dir / "junit";
    if (auto w = write_tests_file(ctx, job.tests); !w) {
        out.conclusion = "infra_error";
        out.reason = w.error().message;
        release_workspace(*ws, s->execution, s->upstream, true);
        return out;
    }
    // The log lives beside the jobs' folders, so it outlives the workspace.
    auto logs = s->execution.work_root / "logs";
    std::error_code ec;
    std::filesystem::create_directories(logs, ec);
    out.log_path = (logs / (std::to_string(job.job_id) + ".log")).string();

    ProcessSpec p;
    p.env = job_environment(ctx, s->execution.env, slot->env);
    p.cwd = ws->job_dir;
    p.log_path = out.log_path;
    p.max_log_bytes = s->execution.max_log_bytes;
    p.timeout = job.timeout;
    p.stall_timeout = s->execution.stall_timeout;
    p.on_start = [&](pid_t pgid) { on_running(pgid); };
    if (s->execution.isolation == "user") {
        // A dedicated account: the daemon's files must not be readable by it (0600/0640
        // owned by the daemon's user, as deploy/crcrd.service sets up).
        const struct passwd* pw = s->execution.user ? ::getpwnam(s->execution.user->c_str()) : nullptr;
        if (!pw) {
            out.conclusion = "infra_error";
            out.reason = "execution.user '" + s->execution.user.value_or("") + "' does not exist";
            release_workspace(*ws, s->execution, s->upstream, true);
            return out;
        }
        p.uid = pw->pw_uid;
        p.gid = pw->pw_gid;
        std::error_code ignored;
        for (const auto& e : std::filesystem::recursive_directory_iterator(ws->job_dir, ignored)) {
            (void)::lchown(e.path().c_str(), pw->pw_uid, pw->pw_gid);
        }
        (void)::chown(ws->job_dir.c_str(), pw->pw_uid, pw->pw_gid);
    }
    if (s->execution.isolation == "bwrap") {
        SandboxSpec sb;
        sb.hidden_dirs = s->hidden_dirs;
        sb.hidden_files = s->hidden_files;
        sb.job_dir = ws->job_dir;
        sb.pytorch_dir = ws->checkout;
        sb.devices = slot->devices;
        // The command's own folder stays visible when it lies in a hidden one (the demo's).
        if (!s->execution.command.empty()) {
            auto cmd_dir = std::filesystem::path(s->execution.command.front()).parent_path();
            for (const auto& d : s->hidden_dirs) {
                auto rel = cmd_dir.lexically_relative(d);
                if (!rel.empty() && *rel.begin() != "..") sb.visible_dirs.push_back(cmd_dir);
            }
        }
        p.argv = bwrap_prefix(sb);
    }
    p.argv.insert(p.argv.end(), s->execution.command.begin(), s->execution.command.end());

    out.metadata = {{"pytorch_sha", job.sha},
                    {"backend_sha", s->execution.backend_dir
                                        ? json(first_line_of({"git", "-C", s->execution.backend_dir->string(), "rev-parse", "HEAD"}))
                                        : json(nullptr)},
                    {"driver_version", s->execution.driver_version_command.empty()
                                           ? json(nullptr)
                                           : json(first_line_of(s->execution.driver_version_command))},
                    {"device_model", slot->device_model ? json(*slot->device_model) : json(nullptr)},
                    {"slot", slot->name},
                    {"tests", job.tests},
                    {"isolation", s->execution.isolation},
                    {"started_at", rfc3339(started)}};

    auto proc = run_supervised(p, &cancel);
    classify::Evidence ev;
    if (!proc) {
        out.conclusion = "infra_error";
        out.reason = "cannot start the test command: " + proc.error().message;
        release_workspace(*ws, s->execution, s->upstream, true);
        return out;
    }
    ev.exit_code = proc->exit_code;
    ev.signal = proc->signal;
    ev.timed_out = proc->timed_out;
    ev.stalled = proc->stalled;
    ev.cancelled = cancel.load() && !proc->timed_out && !proc->stalled;
    auto results = read_junit_dir(ctx.junit_dir);
    if (results) {
        out.results = std::move(*results);
    } else {
        ev.junit_error = results.error().message;
    }
    auto counts = count(out.results);
    ev.tests_total = out.results.size();
    ev.tests_failed = counts.failed;
    ev.log_text = log_excerpt(out.log_path);
    auto verdict = classify::decide(ev, s->patterns);
    out.conclusion = verdict.conclusion;
    out.reason = verdict.reason;
    out.exit_status = proc->exit_code ? proc->exit_code : (proc->signal ? std::optional<int>(128 + *proc->signal) : std::nullopt);
    json failed_tests = json::array();
    for (const auto& t : out.results) {
        if (t.outcome == "failed" && failed_tests.size() < 100) failed_tests.push_back(t.name);
    }
    out.evidence = {{"exit_status", proc->exit_code ? json(*proc->exit_code) : json(nullptr)},
                    {"signal", proc->signal ? json(*proc->signal) : json(nullptr)},
                    {"timed_out", proc->timed_out},
                    {"stalled", proc->stalled},
                    {"tests_total", ev.tests_total},
                    {"failed_tests", failed_tests},
                    {"log_lines", verdict.log_line ? json::array({*verdict.log_line}) : json::array()},
                    {"junit_error", ev.junit_error ? json(*ev.junit_error) : json(nullptr)}};
    if (out.conclusion == "device_unavailable") {
        // A device-class failure: the health check decides whether the slot goes offline.
        out.health = health_check(*slot);
        out.slot_unhealthy = !out.health["ok"].get<bool>();
        out.evidence["health_after"] = out.health;
    }
    out.metadata["finished_at"] = now_rfc3339();
    out.metadata["duration_s"] = static_cast<double>(proc->duration.count()) / 1000.0;
    out.metadata["output_bytes"] = proc->output_bytes;
    out.metadata["log_truncated"] = proc->log_truncated;
    release_workspace(*ws, s->execution, s->upstream, out.conclusion != "passed");
    return out;
}

}  // namespace crcrd::exec
