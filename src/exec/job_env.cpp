#include "crcrd/exec/job_env.hpp"

#include <fstream>

namespace crcrd::exec {

std::vector<std::string> job_environment(const JobContext& ctx, const std::map<std::string, std::string>& execution_env,
                                         const std::map<std::string, std::string>& slot_env) {
    std::map<std::string, std::string> vars = {
        {"PATH", "/usr/local/bin:/usr/bin:/bin"}, {"HOME", ctx.job_dir.string()}, {"LANG", "C.UTF-8"}};
    for (const auto& [k, v] : execution_env) vars[k] = v;
    for (const auto& [k, v] : slot_env) vars[k] = v;
    vars["CRCR_PYTORCH_SHA"] = ctx.pytorch_sha;
    if (ctx.pytorch_dir) vars["CRCR_PYTORCH_DIR"] = ctx.pytorch_dir->string();
    else vars.erase("CRCR_PYTORCH_DIR");
    vars["CRCR_TIER"] = ctx.tier;
    vars["CRCR_TESTS_FILE"] = ctx.tests_file.string();
    vars["CRCR_JUNIT_DIR"] = ctx.junit_dir.string();
    vars["CRCR_RUN_ID"] = std::to_string(ctx.run_id);
    vars["CRCR_JOB_ID"] = std::to_string(ctx.job_id);
    vars["CRCR_ATTEMPT"] = std::to_string(ctx.attempt);
    vars["CRCR_SLOT"] = ctx.slot;
    if (ctx.pr) vars["CRCR_PR"] = std::to_string(*ctx.pr);
    else vars.erase("CRCR_PR");
    std::vector<std::string> env;
    env.reserve(vars.size());
    for (const auto& [k, v] : vars) env.push_back(k + "=" + v);
    return env;
}

Status write_tests_file(const JobContext& ctx, const std::vector<std::string>& tests) {
    std::error_code ec;
    std::filesystem::create_directories(ctx.junit_dir, ec);
    if (ec) return make_error("infra", "cannot create " + ctx.junit_dir.string() + ": " + ec.message());
    std::ofstream out(ctx.tests_file, std::ios::trunc);
    if (!out) return make_error("infra", "cannot write " + ctx.tests_file.string());
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
    if (!out) return make_error("infra", "cannot write " + ctx.tests_file.string());
    return Ok{};
}

std::vector<std::string> bwrap_prefix(const SandboxSpec& spec) {
    std::vector<std::string> a = {"bwrap",        "--die-with-parent", "--unshare-pid", "--unshare-ipc",
                                  "--unshare-uts", "--ro-bind",         "/",             "/",
                                  "--dev",        "/dev",              "--proc",        "/proc",
                                  "--tmpfs",      "/tmp"};
    for (const auto& d : spec.hidden_dirs) {
        a.insert(a.end(), {"--tmpfs", d.string()});
    }
    for (const auto& f : spec.hidden_files) {
        a.insert(a.end(), {"--ro-bind-try", "/dev/null", f.string()});
    }
    for (const auto& d : spec.visible_dirs) a.insert(a.end(), {"--ro-bind", d.string(), d.string()});
    if (spec.pytorch_dir) a.insert(a.end(), {"--ro-bind", spec.pytorch_dir->string(), spec.pytorch_dir->string()});
    a.insert(a.end(), {"--bind", spec.job_dir.string(), spec.job_dir.string()});
    for (const auto& dev : spec.devices) a.insert(a.end(), {"--dev-bind-try", dev, dev});
    a.insert(a.end(), {"--chdir", spec.job_dir.string(), "--"});
    return a;
}

}  // namespace crcrd::exec
