#include "crcrd/exec/slurm/node_job.hpp"

#include <signal.h>

#include <iostream>

#include "crcrd/core/files.hpp"
#include "crcrd/exec/job_env.hpp"

namespace crcrd::exec::slurm {

using nlohmann::json;

json spec_json(const ProcessSpec& p) {
    json j = {{"argv", p.argv},
              {"env", p.env},
              {"cwd", p.cwd.string()},
              {"log_path", p.log_path.string()},
              {"max_log_bytes", p.max_log_bytes},
              {"timeout_ms", p.timeout.count()},
              {"stall_timeout_ms", p.stall_timeout.count()},
              {"kill_grace_ms", p.kill_grace.count()},
              {"groups", p.groups}};
    j["uid"] = p.uid ? json(*p.uid) : json(nullptr);
    j["gid"] = p.gid ? json(*p.gid) : json(nullptr);
    return j;
}

Result<ProcessSpec> spec_from_json(const json& j) {
    try {
        ProcessSpec p;
        p.argv = j.at("argv").get<std::vector<std::string>>();
        p.env = j.at("env").get<std::vector<std::string>>();
        p.cwd = j.at("cwd").get<std::string>();
        p.log_path = j.at("log_path").get<std::string>();
        p.max_log_bytes = j.at("max_log_bytes").get<std::uint64_t>();
        p.timeout = std::chrono::milliseconds(j.at("timeout_ms").get<std::int64_t>());
        p.stall_timeout = std::chrono::milliseconds(j.at("stall_timeout_ms").get<std::int64_t>());
        p.kill_grace = std::chrono::milliseconds(j.at("kill_grace_ms").get<std::int64_t>());
        p.groups = j.at("groups").get<std::vector<gid_t>>();
        if (!j.at("uid").is_null()) p.uid = j.at("uid").get<uid_t>();
        if (!j.at("gid").is_null()) p.gid = j.at("gid").get<gid_t>();
        if (p.argv.empty()) return make_error(Errc::bad_spec, "the spec has no argv");
        return p;
    } catch (const json::exception& e) {
        return make_error(Errc::bad_spec, std::string("the spec is malformed: ") + e.what());
    }
}

json result_json(const ProcessResult& r) {
    return {{"exit_code", r.exit_code ? json(*r.exit_code) : json(nullptr)},
            {"signal", r.signal ? json(*r.signal) : json(nullptr)},
            {"timed_out", r.timed_out},
            {"stalled", r.stalled},
            {"output_bytes", r.output_bytes},
            {"log_truncated", r.log_truncated},
            {"duration_ms", r.duration.count()}};
}

ProcessResult result_from_json(const json& j) {
    ProcessResult r;
    if (j.contains("exit_code") && j["exit_code"].is_number_integer())
        r.exit_code = j["exit_code"].get<int>();
    if (j.contains("signal") && j["signal"].is_number_integer()) r.signal = j["signal"].get<int>();
    r.timed_out = j.value("timed_out", false);
    r.stalled = j.value("stalled", false);
    r.output_bytes = j.value("output_bytes", std::uint64_t{0});
    r.log_truncated = j.value("log_truncated", false);
    r.duration = std::chrono::milliseconds(j.value("duration_ms", std::int64_t{0}));
    return r;
}

std::filesystem::path result_path_for(const std::filesystem::path& spec) {
    return spec.parent_path() / "result.json";
}

int run_node_job(const std::filesystem::path& spec_path) {
    auto text = read_file(spec_path, 16 << 20);
    if (!text) {
        std::cerr << "crcrd --slurm-job: " << text.error().message << "\n";
        return 70;
    }
    json j = json::parse(*text, nullptr, false);
    auto spec = j.is_discarded()
                    ? Result<ProcessSpec>(make_error(Errc::bad_spec, "the spec is not JSON"))
                    : spec_from_json(j);
    if (!spec) {
        std::cerr << "crcrd --slurm-job: " << spec_path.string() << ": " << spec.error().message
                  << "\n";
        return 70;
    }
    // The daemon's host chose what to hide; what this node does not have needs no hiding (and
    // bubblewrap could not mount over it).
    drop_absent_masks(spec->argv);
    // Slurm's SIGTERM (scancel, its time limit) ends this process; the job's init dies with it
    // and takes the command's group along. No result is written then: Slurm's state says why.
    auto r = run_supervised(*spec);
    if (!r) {
        std::cerr << "crcrd --slurm-job: cannot start the test command: " << r.error().message
                  << "\n";
        return 70;
    }
    if (auto w = write_file_atomic(result_path_for(spec_path), result_json(*r).dump()); !w) {
        std::cerr << "crcrd --slurm-job: " << w.error().message << "\n";
        return 70;
    }
    if (r->exit_code) return *r->exit_code;
    return 128 + r->signal.value_or(SIGKILL);
}

}  // namespace crcrd::exec::slurm
