// The configuration loader (docs/configuration.md) on arbitrary YAML: every error is a message,
// never a crash, an abort or a stack overflow.
#include <cstddef>
#include <cstdint>
#include <string>

#include "crcrd/config/config.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    std::string text(reinterpret_cast<const char*>(data), size);
    auto loaded = crcrd::config::parse(text, "/nonexistent/etc", "/nonexistent/etc/crcrd.yaml");
    if (!loaded.config && loaded.errors.empty()) __builtin_trap();
    return 0;
}
