#include "crcrd/exec/job_env.hpp"

#include <algorithm>
#include <fstream>

namespace crcrd::exec {

std::vector<std::string> job_environment(const JobContext& ctx,
                                         const std::map<std::string, std::string>& execution_env,
                                         const std::map<std::string, std::string>& slot_env) {
    std::map<std::string, std::string> vars = {{"PATH", "/usr/local/bin:/usr/bin:/bin"},
                                               {"HOME", ctx.job_dir.string()},
                                               {"LANG", "C.UTF-8"}};
    for (const auto& [k, v] : execution_env) vars[k] = v;
    for (const auto& [k, v] : slot_env) vars[k] = v;
    vars["CRCR_PYTORCH_SHA"] = ctx.pytorch_sha;
    if (ctx.pytorch_dir)
        vars["CRCR_PYTORCH_DIR"] = ctx.pytorch_dir->string();
    else
        vars.erase("CRCR_PYTORCH_DIR");
    vars["CRCR_TIER"] = ctx.tier;
    vars["CRCR_TESTS_FILE"] = ctx.tests_file.string();
    vars["CRCR_JUNIT_DIR"] = ctx.junit_dir.string();
    vars["CRCR_RUN_ID"] = std::to_string(ctx.run_id);
    vars["CRCR_JOB_ID"] = std::to_string(ctx.job_id);
    vars["CRCR_ATTEMPT"] = std::to_string(ctx.attempt);
    vars["CRCR_SLOT"] = ctx.slot;
    if (ctx.rerun_file)
        vars["CRCR_RERUN_FILE"] = ctx.rerun_file->string();
    else
        vars.erase("CRCR_RERUN_FILE");
    if (ctx.pr)
        vars["CRCR_PR"] = std::to_string(*ctx.pr);
    else
        vars.erase("CRCR_PR");
    for (const char* k :
         {"CRCR_BUILD_OUT", "CRCR_BUILD_DIR", "CRCR_BUILD_NEAREST", "CRCR_BACKEND_DIR"})
        vars.erase(k);
    for (const auto& [k, v] : ctx.stage_env) vars[k] = v;
    std::vector<std::string> env;
    env.reserve(vars.size());
    for (const auto& [k, v] : vars) env.push_back(k + "=" + v);
    return env;
}

Status write_tests_file(const JobContext& ctx, const std::vector<std::string>& tests) {
    std::error_code ec;
    std::filesystem::create_directories(ctx.junit_dir, ec);
    if (ec)
        return make_error(Errc::infra,
                          "cannot create " + ctx.junit_dir.string() + ": " + ec.message());
    std::ofstream out(ctx.tests_file, std::ios::trunc);
    if (!out) return make_error(Errc::infra, "cannot write " + ctx.tests_file.string());
    constexpr std::string_view k_var = "${PYTORCH_DIR}";
    for (std::string t : tests) {
        if (ctx.pytorch_dir) {
            for (auto pos = t.find(k_var); pos != std::string::npos; pos = t.find(k_var, pos)) {
                t.replace(pos, k_var.size(), ctx.pytorch_dir->string());
                pos += ctx.pytorch_dir->string().size();
            }
        }
        out << t << "\n";
    }
    out.flush();
    if (!out) return make_error(Errc::infra, "cannot write " + ctx.tests_file.string());
    return Ok{};
}

std::vector<std::string> bwrap_prefix(const SandboxSpec& spec) {
    std::vector<std::string> a = {"bwrap",         "--die-with-parent", "--new-session",
                                  "--unshare-pid", "--unshare-ipc",     "--unshare-uts"};
    if (spec.no_network) a.push_back("--unshare-net");
    if (!spec.run_as) {
        // Not root: a user namespace of the daemon's uid, no capabilities, no way to make a
        // nested user namespace whose capabilities could undo the mounts.
        a.insert(a.end(), {"--unshare-user", "--disable-userns", "--cap-drop", "ALL"});
    }
    a.insert(a.end(), {"--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--perms", "1777",
                       "--tmpfs", "/tmp"});
    // A bind inside a tmpfs needs its parent folders made there: traversable (0755) by the
    // command's uid, whatever the modes on the host (bubblewrap would copy a 0700).
    auto bind = [&](const char* how, const std::filesystem::path& p) {
        a.insert(a.end(), {"--perms", "0755", "--dir", p.parent_path().string(), how, p.string(),
                           p.string()});
    };
    if (spec.command_dir) bind("--ro-bind", *spec.command_dir);
    for (const auto& d : spec.hidden_dirs) a.insert(a.end(), {"--tmpfs", d.string()});
    if (spec.pytorch_dir) bind("--ro-bind", *spec.pytorch_dir);
    bind("--bind", spec.job_dir);
    for (const auto& p : spec.ro_binds) bind("--ro-bind", p);
    for (const auto& p : spec.rw_binds) bind("--bind", p);
    for (const auto& dev : spec.devices) a.insert(a.end(), {"--dev-bind-try", dev, dev});
    // Last, so that no bind above can bring a hidden file back.
    for (const auto& f : spec.hidden_files)
        a.insert(a.end(), {"--ro-bind-try", "/dev/null", f.string()});
    a.insert(a.end(), {"--chdir", spec.job_dir.string(), "--"});
    if (spec.run_as) {
        // bubblewrap ran as root to mount; the command runs as the unprivileged account, its
        // capabilities (effective, permitted, inheritable, ambient, bounding) all dropped.
        a.insert(a.end(), {"setpriv", "--reuid=" + std::to_string(spec.run_as->uid),
                           "--regid=" + std::to_string(spec.run_as->gid), "--init-groups",
                           "--inh-caps=-all", "--ambient-caps=-all", "--bounding-set=-all", "--"});
    }
    return a;
}

void drop_absent_masks(std::vector<std::string>& argv) {
    // bubblewrap's own arguments, up to its "--": it is argv[0], or follows the launcher's
    // client (`crcrd --sandbox-connect SOCKET -- bwrap ...`).
    auto names_bwrap = [&](std::size_t at) {
        return at < argv.size() && std::filesystem::path(argv[at]).filename() == "bwrap";
    };
    std::size_t i = 0;
    if (!names_bwrap(0)) {
        i = static_cast<std::size_t>(std::find(argv.begin(), argv.end(), "--") - argv.begin()) + 1;
        if (!names_bwrap(i)) return;
    }
    std::vector<std::string> out(argv.begin(), argv.begin() + static_cast<std::ptrdiff_t>(i));
    for (; i < argv.size() && argv[i] != "--"; ++i) {
        std::error_code ec;
        // --tmpfs <dir> (not /tmp) and --ro-bind-try /dev/null <file> hide what the daemon's host
        // has.
        if (argv[i] == "--tmpfs" && i + 1 < argv.size() && argv[i + 1] != "/tmp" &&
            !std::filesystem::exists(argv[i + 1], ec)) {
            ++i;
            continue;
        }
        if (argv[i] == "--ro-bind-try" && i + 2 < argv.size() && argv[i + 1] == "/dev/null" &&
            !std::filesystem::exists(argv[i + 2], ec)) {
            i += 2;
            continue;
        }
        out.push_back(argv[i]);
    }
    out.insert(out.end(), argv.begin() + static_cast<std::ptrdiff_t>(i), argv.end());
    argv = std::move(out);
}

bool is_within(const std::filesystem::path& path, const std::filesystem::path& dir) {
    auto rel = path.lexically_normal().lexically_relative(dir.lexically_normal());
    return !rel.empty() && *rel.begin() != "..";
}

}  // namespace crcrd::exec
