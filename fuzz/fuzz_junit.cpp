// JUnit XML as a test may write it (docs/security.md, "What a test process can reach"): never
// a crash or a stack overflow.
#include <cstddef>
#include <cstdint>
#include <string>

#include "crcrd/exec/junit.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    std::string xml(reinterpret_cast<const char*>(data), size);
    auto r = crcrd::exec::parse_junit(xml, "fuzz.xml");
    if (r) {
        for (const auto& t : *r) {
            if (t.outcome == crcrd::TestOutcome::flaky) __builtin_trap();  // never from JUnit
            if (t.message.size() > 4096) __builtin_trap();
        }
    }
    return 0;
}
