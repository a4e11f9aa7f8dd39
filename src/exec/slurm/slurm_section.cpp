#include "crcrd/exec/slurm/slurm_section.hpp"

#include "crcrd/config/yaml_map.hpp"

namespace crcrd::exec::slurm {

namespace {

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
    for (const auto& a : c->sbatch_args) {
        // crcrd sets these itself; an override would break collection or the environment.
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
    for (const auto& d : c->devices)
        if (d.empty() || d.front() != '/')
            m.error("devices", "'" + d + "' is not an absolute path");
    return c;
}

}  // namespace

config::ExecutorKeys keys() {
    return config::ExecutorKeys{"slurm", parse, true};
}

}  // namespace crcrd::exec::slurm
