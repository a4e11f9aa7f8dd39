#include "crcrd/exec/prepare.hpp"

#include <grp.h>
#include <pwd.h>
#include <unistd.h>

#include <algorithm>

#include "crcrd/core/files.hpp"
#include "crcrd/core/subprocess.hpp"
#include "crcrd/core/time.hpp"
#include "crcrd/vcs/mirror.hpp"

namespace crcrd::exec {

using nlohmann::json;

namespace {

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
    if (::getpwnam_r(name.c_str(), &pw, buf.data(), buf.size(), &found) != 0 || !found)
        return std::nullopt;
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

std::string log_excerpt(const std::filesystem::path& path) {
    auto text = read_file(path, 256u << 20);
    return text ? *text : std::string();
}

}  // namespace

std::string first_line_of(const std::vector<std::string>& argv,
                          const std::optional<std::filesystem::path>& cwd) {
    if (argv.empty()) return {};
    SubprocessOptions o;
    o.timeout = std::chrono::seconds(30);
    o.max_output = 4096;
    o.cwd = cwd;
    auto r = run_subprocess(argv, o);
    if (!r || r->exit_code != 0) return {};
    return trim(r->out.substr(0, r->out.find('\n')));
}

Result<PreparedAttempt> prepare_attempt(const ExecutorSettings& s, const JobToRun& job,
                                        const SlotSpec& slot,
                                        const std::filesystem::path& log_dir) {
    const auto started = std::chrono::system_clock::now();
    auto ws = prepare_workspace(s.execution, s.upstream, job.job_id, job.sha);
    if (!ws) return ws.error();
    PreparedAttempt a;
    a.ws = std::move(*ws);
    auto fail = [&](const std::string& why) -> Result<PreparedAttempt> {
        release_workspace(a.ws, s.execution, s.upstream, true);
        return make_error(Errc::infra_error, why);
    };
    JobContext& ctx = a.ctx;
    ctx.run_id = job.run_id;
    ctx.job_id = job.job_id;
    ctx.attempt = job.attempt;
    ctx.tier = job.tier;
    ctx.pytorch_sha = job.sha;
    ctx.pytorch_dir = a.ws.checkout;
    ctx.pr = job.pr;
    ctx.slot = slot.name;
    ctx.job_dir = a.ws.job_dir;
    ctx.tests_file = a.ws.job_dir / "tests.txt";
    ctx.junit_dir = a.ws.job_dir / "junit";
    if (auto w = write_tests_file(ctx, job.tests); !w) return fail(w.error().message);
    if (!job.rerun_tests.empty()) {
        ctx.rerun_file = a.ws.job_dir / "rerun.txt";
        std::string ids;
        for (const auto& t : job.rerun_tests) ids += t + "\n";
        if (auto w = write_file_atomic(*ctx.rerun_file, ids); !w) return fail(w.error().message);
    }
    // The build stage (docs/build.md): a build fills its output folder; a tier reads the build.
    const config::Strings& command = job.build && s.build ? s.build->command : s.execution.command;
    std::vector<std::filesystem::path> ro_binds, rw_binds;
    if (job.build) {
        if (!s.build) return fail("build: is no longer configured");
        ctx.stage_env["CRCR_BUILD_OUT"] = job.build->out.string();
        rw_binds.push_back(job.build->out);
        if (s.execution.backend_dir)
            ctx.stage_env["CRCR_BACKEND_DIR"] = s.execution.backend_dir->string();
        if (job.build->nearest) {
            ctx.stage_env["CRCR_BUILD_NEAREST"] = job.build->nearest->string();
            ro_binds.push_back(*job.build->nearest);
        }
        if (s.build->ccache) {
            std::error_code made;
            std::filesystem::create_directories(s.build->ccache->dir, made);
            if (made)
                return fail("cannot create build.ccache.dir " + s.build->ccache->dir.string() +
                            ": " + made.message());
            ctx.stage_env["CCACHE_DIR"] = s.build->ccache->dir.string();
            ctx.stage_env["CCACHE_BASEDIR"] = a.ws.job_dir.parent_path().string();
            ctx.stage_env["CCACHE_MAXSIZE"] = std::to_string(s.build->ccache->max_size);
            rw_binds.push_back(s.build->ccache->dir);
        }
    } else if (job.build_dir) {
        ctx.stage_env["CRCR_BUILD_DIR"] = job.build_dir->string();
        ro_binds.push_back(*job.build_dir);
    }
    // The log lives beside the jobs' folders, so it outlives the workspace.
    std::error_code ec;
    std::filesystem::create_directories(log_dir, ec);

    ProcessSpec& p = a.process;
    p.env = job_environment(ctx, s.execution.env, slot.env);
    p.cwd = a.ws.job_dir;
    p.log_path = log_dir / (std::to_string(job.job_id) + ".log");
    p.max_log_bytes = s.execution.max_log_bytes;
    p.timeout = job.timeout;
    p.stall_timeout = job.build && s.build ? s.build->stall_timeout : s.execution.stall_timeout;
    // The account the command runs as when it must not be the daemon's (docs/execution.md):
    // isolation user, or bubblewrap under a daemon running as root.
    const bool root = ::geteuid() == 0;
    std::optional<Account> account;
    if (s.execution.isolation == config::Isolation::user ||
        (s.execution.isolation == config::Isolation::bwrap && root)) {
        account = lookup_account(s.execution.user.value_or("nobody"));
        if (!account)
            return fail("execution.user '" + s.execution.user.value_or("nobody") +
                        "' does not exist");
        // The job directory becomes the account's; the daemon's own files stay unreadable to it
        // (0600/0640 owned by the daemon's user, as deploy/crcrd.service sets up).
        hand_over(a.ws.job_dir, account->uid, account->gid);
        // A build's folders (empty output; the ccache folder, whose files the account made).
        for (const auto& d : rw_binds) (void)::lchown(d.c_str(), account->uid, account->gid);
    }
    if (s.execution.isolation == config::Isolation::user) {
        p.uid = account->uid;
        p.gid = account->gid;
        p.groups = account->groups;
    }
    if (s.execution.isolation == config::Isolation::bwrap) {
        SandboxSpec sb;
        sb.hidden_dirs = s.hidden_dirs;
        sb.hidden_files = s.hidden_files;
        sb.job_dir = a.ws.job_dir;
        sb.pytorch_dir = a.ws.checkout;
        sb.devices = slot.devices;
        sb.ro_binds = ro_binds;
        sb.rw_binds = rw_binds;
        sb.no_network = s.execution.network == config::Network::none;
        // The command's own folder (it may lie under /tmp, which the sandbox replaces); it is
        // never inside a hidden one (config::check refuses that).
        if (!command.empty() && command.front().front() == '/') {
            sb.command_dir = std::filesystem::path(command.front()).parent_path();
        }
        if (root) sb.run_as = SandboxSpec::Account{account->uid, account->gid};
        p.argv = bwrap_prefix(sb);
        // Under the packaged units bubblewrap starts in crcrd-sandbox@.service: this binary's
        // --sandbox-connect stands in for it (sandbox_launcher.hpp).
        if (s.execution.sandbox_socket && !root) {
            p.argv.insert(p.argv.begin(), {self_executable(), "--sandbox-connect",
                                           s.execution.sandbox_socket->string(), "--"});
        }
    }
    p.argv.insert(p.argv.end(), command.begin(), command.end());

    const auto& x = s.execution;
    a.metadata = {{"pytorch_sha", job.sha},
                  {"backend_sha",
                   x.backend_dir ? json(vcs::head_of(*x.backend_dir).value_or("")) : json(nullptr)},
                  {"driver_version", x.driver_version_command.empty()
                                         ? json(nullptr)
                                         : json(first_line_of(x.driver_version_command))},
                  {"device_model", slot.device_model ? json(*slot.device_model) : json(nullptr)},
                  {"slot", slot.name},
                  {"tests", job.tests},
                  {"isolation", x.isolation},
                  {"started_at", rfc3339(started)}};
    if (job.build) a.metadata["build_key"] = job.build->key;
    if (job.build_dir) a.metadata["build_dir"] = job.build_dir->string();
    return a;
}

void collect_attempt(const ExecutorSettings& s, const PreparedAttempt& a, const ProcessResult& proc,
                     bool cancelled, RawOutcome& out) {
    out.log_path = a.process.log_path.string();
    out.exit_code = proc.exit_code;
    out.signal = proc.signal;
    out.timed_out = out.timed_out || proc.timed_out;
    out.stalled = proc.stalled;
    out.cancelled = cancelled && !out.timed_out && !proc.stalled;
    if (auto results = read_junit_dir(a.ctx.junit_dir)) {
        out.results = std::move(*results);
    } else {
        out.junit_error = results.error().message;
    }
    out.log_text = log_excerpt(out.log_path);
    out.metadata = a.metadata;
    out.metadata["finished_at"] = now_rfc3339();
    out.metadata["duration_s"] = static_cast<double>(proc.duration.count()) / 1000.0;
    out.metadata["output_bytes"] = proc.output_bytes;
    out.metadata["log_truncated"] = proc.log_truncated;
    // A workspace is kept for a look when anything but a clean pass happened.
    const bool clean = proc.exit_code == 0 && !proc.signal && !out.cancelled && !out.timed_out &&
                       !proc.stalled && !out.junit_error && !out.infra_failure &&
                       count(out.results).failed == 0;
    release_workspace(a.ws, s.execution, s.upstream, !clean);
}

}  // namespace crcrd::exec
