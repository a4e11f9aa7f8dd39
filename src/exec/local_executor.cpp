#include "crcrd/exec/local_executor.hpp"

#include <grp.h>
#include <signal.h>
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

struct Account {
    uid_t uid;
    gid_t gid;
    std::vector<gid_t> groups;
};

/// The user's uid, primary group and supplementary groups (e.g. one that may open /dev/vfio).
std::optional<Account> lookup_account(const std::string& name) {
    struct passwd pw {};
    struct passwd* found = nullptr;
    std::vector<char> buf(16384);
    if (::getpwnam_r(name.c_str(), &pw, buf.data(), buf.size(), &found) != 0 || !found) return std::nullopt;
    Account a{pw.pw_uid, pw.pw_gid, {}};
    int n = 64;
    a.groups.resize(static_cast<std::size_t>(n));
    if (::getgrouplist(name.c_str(), pw.pw_gid, a.groups.data(), &n) < 0) {
        a.groups.resize(static_cast<std::size_t>(n));
        ::getgrouplist(name.c_str(), pw.pw_gid, a.groups.data(), &n);
    }
    a.groups.resize(static_cast<std::size_t>(std::max(n, 0)));
    return a;
}

/// Makes the job directory and what is in it the account's (nothing in it follows a link).
void hand_over(const std::filesystem::path& job_dir, uid_t uid, gid_t gid) {
    std::error_code ignored;
    for (auto it = std::filesystem::recursive_directory_iterator(job_dir, ignored);
         it != std::filesystem::recursive_directory_iterator(); it.increment(ignored)) {
        (void)::lchown(it->path().c_str(), uid, gid);
    }
    (void)::lchown(job_dir.c_str(), uid, gid);
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

std::vector<SlotOffer> LocalExecutor::slots() const {
    auto s = settings();
    std::vector<SlotOffer> out;
    for (const auto& r : s->runners) out.push_back(SlotOffer{r.name, r.labels});
    return out;
}

RawOutcome LocalExecutor::run(const JobToRun& job, const std::atomic<bool>& cancel,
                              const std::function<void(std::int64_t)>& on_running) {
    auto s = settings();
    RawOutcome out;
    const auto* slot = runner(*s, job.slot);
    if (!slot) {
        out.not_run = "slot " + job.slot + " is no longer configured";
        return out;
    }
    // The device first: a failing health check takes the slot offline and the job waits.
    out.health = health_check(*slot);
    if (!out.health["ok"].get<bool>()) {
        out.slot_unhealthy = true;
        return out;
    }
    const auto started = std::chrono::system_clock::now();
    auto ws = prepare_workspace(s->execution, s->upstream, job.job_id, job.sha);
    if (!ws) {
        out.not_run = ws.error().message;
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
        out.not_run = w.error().message;
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
    // The account the command runs as when it must not be the daemon's (§4.1): isolation
    // user, or bubblewrap under a daemon running as root.
    const bool root = ::geteuid() == 0;
    std::optional<Account> account;
    if (s->execution.isolation == "user" || (s->execution.isolation == "bwrap" && root)) {
        account = lookup_account(s->execution.user.value_or("nobody"));
        if (!account) {
            out.not_run = "execution.user '" + s->execution.user.value_or("nobody") + "' does not exist";
            release_workspace(*ws, s->execution, s->upstream, true);
            return out;
        }
        // The job directory becomes the account's; the daemon's own files stay unreadable to it
        // (0600/0640 owned by the daemon's user, as deploy/crcrd.service sets up).
        hand_over(ws->job_dir, account->uid, account->gid);
    }
    if (s->execution.isolation == "user") {
        p.uid = account->uid;
        p.gid = account->gid;
        p.groups = account->groups;
    }
    if (s->execution.isolation == "bwrap") {
        SandboxSpec sb;
        sb.hidden_dirs = s->hidden_dirs;
        sb.hidden_files = s->hidden_files;
        sb.job_dir = ws->job_dir;
        sb.pytorch_dir = ws->checkout;
        sb.devices = slot->devices;
        sb.no_network = s->execution.network == "none";
        // The command's own folder (it may lie under /tmp, which the sandbox replaces); it is
        // never inside a hidden one (config::check refuses that).
        if (!s->execution.command.empty() && s->execution.command.front().front() == '/') {
            sb.command_dir = std::filesystem::path(s->execution.command.front()).parent_path();
        }
        if (root) sb.run_as = SandboxSpec::Account{account->uid, account->gid};
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
    if (!proc) {
        out.not_run = "cannot start the test command: " + proc.error().message;
        release_workspace(*ws, s->execution, s->upstream, true);
        return out;
    }
    out.exit_code = proc->exit_code;
    out.signal = proc->signal;
    out.timed_out = proc->timed_out;
    out.stalled = proc->stalled;
    out.cancelled = cancel.load() && !proc->timed_out && !proc->stalled;
    if (auto results = read_junit_dir(ctx.junit_dir)) {
        out.results = std::move(*results);
    } else {
        out.junit_error = results.error().message;
    }
    out.log_text = log_excerpt(out.log_path);
    out.metadata["finished_at"] = now_rfc3339();
    out.metadata["duration_s"] = static_cast<double>(proc->duration.count()) / 1000.0;
    out.metadata["output_bytes"] = proc->output_bytes;
    out.metadata["log_truncated"] = proc->log_truncated;
    // A workspace is kept for a look when anything but a clean pass happened.
    const bool clean = proc->exit_code == 0 && !proc->signal && !out.cancelled && !proc->timed_out && !proc->stalled && !out.junit_error &&
                       count(out.results).failed == 0;
    release_workspace(*ws, s->execution, s->upstream, !clean);
    return out;
}

namespace {

/// Whether the process `pid` runs with CRCR_JOB_ID=<job_id> in its environment.
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

}  // namespace

int LocalExecutor::abandon(std::int64_t job_id) {
    // The job's init died with the previous daemon; the command and anything it detached may not have.
    int killed = 0;
    std::error_code ec;
    for (std::filesystem::directory_iterator it("/proc", ec), end; it != end; it.increment(ec)) {
        const std::string name = it->path().filename().string();
        if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
        if (is_job_process(name, job_id) && ::kill(static_cast<pid_t>(std::stol(name)), SIGKILL) == 0) ++killed;
    }
    return killed;
}

}  // namespace crcrd::exec
