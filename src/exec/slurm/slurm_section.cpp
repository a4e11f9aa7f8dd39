#include "crcrd/exec/slurm/slurm_section.hpp"

#include "crcrd/config/config.hpp"
#include "crcrd/config/yaml_map.hpp"

namespace crcrd::exec::slurm {

namespace {

/// crcrd sets these itself; an override would break collection or the environment.
void check_sbatch_args(config::YamlMap& m, const std::vector<std::string>& args) {
    for (const auto& a : args) {
        for (const char* own :
             {"--export", "--parsable", "--output", "--error", "--job-name", "--comment", "--chdir",
              "--wrap", "--requeue", "--no-requeue", "--time", "--partition", "--gres"}) {
            if (a == own || a.rfind(std::string(own) + "=", 0) == 0)
                m.error("sbatch_args", "'" + a + "' is set by crcrd");
        }
        for (const char* own : {"-o", "-e", "-J", "-D", "-t", "-p"}) {
            if (a.rfind(own, 0) == 0) m.error("sbatch_args", "'" + a + "' is set by crcrd");
        }
    }
}

/// `p` is strictly inside `root` (both as written, normalised).
bool inside(const std::filesystem::path& p, const std::filesystem::path& root) {
    const auto a = p.lexically_normal();
    const auto r = root.lexically_normal();
    auto rel = a.lexically_relative(r);
    return !rel.empty() && rel != "." && *rel.begin() != "..";
}

/// `build.partition` and `build.sbatch_args`; the build's folders must be on the shared root,
/// where the nodes write them and the daemon publishes them.
std::shared_ptr<const config::ExecutorSection> parse_build(config::YamlMap& m,
                                                           const config::BuildConfig& b,
                                                           const config::ExecutionConfig& x) {
    auto c = std::make_shared<SlurmBuildSection>();
    m.get("partition", c->partition, true);
    m.get("sbatch_args", c->sbatch_args);
    check_sbatch_args(m, c->sbatch_args);
    const auto* sl = x.section<SlurmSection>();
    if (!sl || sl->shared_root.empty()) return c;
    if (!inside(b.cache_dir, sl->shared_root)) {
        m.error("cache_dir", "must be inside execution.slurm.shared_root (" +
                                 sl->shared_root.string() + "): the nodes build into it");
    }
    for (const char* own : {"jobs", "checkouts", "control", "logs"}) {
        const auto folder = sl->shared_root / own;
        if (b.cache_dir.lexically_normal() == folder.lexically_normal() ||
            inside(b.cache_dir, folder))
            m.error("cache_dir", "must not be in " + folder.string() + " (crcrd's own folder)");
    }
    if (b.ccache && !inside(b.ccache->dir, sl->shared_root)) {
        m.error("ccache", "dir must be inside execution.slurm.shared_root (" +
                              sl->shared_root.string() + "): the nodes' builds use it");
    }
    return c;
}

std::shared_ptr<const config::ExecutorSection> parse(config::YamlMap& m) {
    auto c = std::make_shared<SlurmSection>();
    m.get("partition", c->partition, true);
    m.get("gres_per_label", c->gres_per_label);
    m.get("sbatch_args", c->sbatch_args);
    m.get_path("shared_root", c->shared_root, true);
    m.get("poll_interval", c->poll_interval);
    m.get("max_submitted", c->max_submitted);
    m.get("cancel_pending_on_stop", c->cancel_pending_on_stop);
    m.get_path("node_binary", c->node_binary);
    m.get("devices", c->devices);
    if (c->poll_interval < std::chrono::milliseconds(100))
        m.error("poll_interval", "must be at least 100ms");
    if (c->max_submitted == 0 || c->max_submitted > 10000)
        m.error("max_submitted", "must be between 1 and 10000");
    for (const auto& [label, gres] : c->gres_per_label) {
        if (gres.empty() || gres.find_first_of(" \t\n,") != std::string::npos) {
            m.error("gres_per_label",
                    "'" + label + "': one GRES such as \"aiu:1\", without spaces or commas");
        }
    }
    check_sbatch_args(m, c->sbatch_args);
    for (const auto& d : c->devices)
        if (d.empty() || d.front() != '/')
            m.error("devices", "'" + d + "' is not an absolute path");
    return c;
}

}  // namespace

config::ExecutorKeys keys() {
    return config::ExecutorKeys{"slurm", parse, true, {"partition", "sbatch_args"}, parse_build};
}

}  // namespace crcrd::exec::slurm
