// The configuration loader (docs/configuration.md) on arbitrary YAML: every error is a message,
// never a crash, an abort or a stack overflow.
#include <cstddef>
#include <cstdint>
#include <string>

#include "crcrd/config/config.hpp"
#include "crcrd/exec/slurm/slurm_section.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    std::string text(reinterpret_cast<const char*>(data), size);
    // The executors' keys as exec::executor_keys() lists them; written out here because the
    // fuzz build compiles only the sources the targets reach (the Slurm section's parser).
    static const std::vector<crcrd::config::ExecutorKeys> executors = {{"local", nullptr, false, {}, nullptr},
                                                                        crcrd::exec::slurm::keys()};
    auto loaded = crcrd::config::parse(text, "/nonexistent/etc", executors, "/nonexistent/etc/crcrd.yaml");
    if (!loaded.config && loaded.errors.empty()) __builtin_trap();
    return 0;
}
