// Normalisation of every accepted form (docs/ingest.md, "Forms and their fields") from arbitrary
// bodies: never a crash, and an accepted event always has a valid, lower-case SHA when it is to
// run.
#include <cstddef>
#include <cstdint>
#include <string>

#include "crcrd/core/sha.hpp"
#include "crcrd/ingest/event.hpp"

using namespace crcrd;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size < 1) return 0;
    static const char* k_events[] = {"repository_dispatch", "pull_request", "push", "ping", "", "issues"};
    const char* event = k_events[data[0] % 6];
    std::string_view body(reinterpret_cast<const char*>(data + 1), size - 1);
    auto e = ingest::normalize(event, body);
    if (e && e->intent == ingest::Intent::run) {
        if (!valid_sha(e->sha)) __builtin_trap();
        for (char c : e->sha)
            if (c >= 'A' && c <= 'F') __builtin_trap();
        if (e->pr && *e->pr < 1) __builtin_trap();
    }
    return 0;
}
