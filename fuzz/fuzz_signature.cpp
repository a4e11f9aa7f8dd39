// Both signature schemes (docs/ingest.md, "Signatures") on arbitrary headers and bodies: never
// a crash, and never a match for a signature the target did not make with the key.
#include <cstddef>
#include <cstdint>
#include <string>

#include "crcrd/ingest/signature.hpp"

using namespace crcrd;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    std::string_view in(reinterpret_cast<const char*>(data), size);
    // Fields separated by NUL: header (or signature list), id, timestamp, body.
    std::string_view f[4];
    for (int i = 0; i < 3; ++i) {
        auto nul = in.find('\0');
        f[i] = in.substr(0, nul);
        in = nul == std::string_view::npos ? std::string_view() : in.substr(nul + 1);
    }
    f[3] = in;
    const std::vector<ingest::NamedKey> github = {{"a", "It's a Secret to Everybody"}, {"b", "rotated"}};
    auto g = ingest::verify_github(f[0], f[3], github);
    if (g && f[0] != ingest::sign_github("It's a Secret to Everybody", f[3]) && f[0] != ingest::sign_github("rotated", f[3])) {
        // A header that is not byte-for-byte ours may still be ours in upper-case hex.
        std::string lower(f[0]);
        for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        if (lower != ingest::sign_github("It's a Secret to Everybody", f[3]) && lower != ingest::sign_github("rotated", f[3])) {
            __builtin_trap();
        }
    }
    auto key = ingest::decode_whsec(f[1]);
    const std::vector<ingest::NamedKey> standard = {{"s", "0123456789abcdef0123456789abcdef"}};
    (void)ingest::verify_standard(f[1], f[2], f[0], f[3], standard, 1'700'000'000, std::chrono::seconds(300));
    (void)key;
    return 0;
}
