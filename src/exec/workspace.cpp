#include "crcrd/exec/workspace.hpp"

#include <sys/statvfs.h>

#include "crcrd/vcs/mirror.hpp"

namespace crcrd::exec {

std::uint64_t free_bytes(const std::filesystem::path& path) {
    struct statvfs v {};
    if (::statvfs(path.c_str(), &v) != 0) return 0;
    return static_cast<std::uint64_t>(v.f_bavail) * v.f_frsize;
}

Result<Workspace> prepare_workspace(const config::ExecutionConfig& exec,
                                    const config::UpstreamConfig& upstream, std::int64_t job_id,
                                    const std::string& sha) {
    std::error_code ec;
    std::filesystem::create_directories(exec.work_root, ec);
    if (ec)
        return make_error(Errc::infra_error,
                          "cannot create " + exec.work_root.string() + ": " + ec.message());
    const auto avail = free_bytes(exec.work_root);
    if (avail < exec.min_free_bytes) {
        return make_error(Errc::infra_error,
                          "only " + std::to_string(avail >> 20) + " MiB free on " +
                              exec.work_root.string() + ", execution.min_free_bytes asks for " +
                              std::to_string(exec.min_free_bytes >> 20) + " MiB");
    }
    Workspace ws;
    ws.job_dir = exec.work_root / "jobs" / std::to_string(job_id);
    std::filesystem::remove_all(ws.job_dir, ec);
    std::filesystem::create_directories(ws.job_dir, ec);
    if (ec)
        return make_error(Errc::infra_error,
                          "cannot create " + ws.job_dir.string() + ": " + ec.message());
    if (!upstream.mirror.empty()) {
        auto dest = exec.work_root / "checkouts" / std::to_string(job_id);
        vcs::remove_checkout(upstream, dest);  // a leftover of an earlier attempt
        if (auto s = vcs::add_checkout(upstream, dest, sha); !s) {
            return make_error(Errc::infra_error,
                              "checkout of " + sha + " failed: " + s.error().message);
        }
        ws.checkout = dest;
    }
    return ws;
}

void release_workspace(const Workspace& ws, const config::ExecutionConfig& exec,
                       const config::UpstreamConfig& upstream, bool failed) {
    if (failed && exec.keep_failed_workspaces) return;
    if (ws.checkout) vcs::remove_checkout(upstream, *ws.checkout);
    std::error_code ec;
    std::filesystem::remove_all(ws.job_dir, ec);
}

}  // namespace crcrd::exec
