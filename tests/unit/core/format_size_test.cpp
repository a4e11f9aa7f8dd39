// format_size (core/units.hpp): a byte count as the build pages and crcrctl show it.
#include <gtest/gtest.h>

#include "crcrd/core/units.hpp"

namespace crcrd {
namespace {

TEST(Units, SizesForPeopleInTheLargestUnitWithOneDecimalRoundedDown) {
    const std::pair<std::uint64_t, const char*> cases[] = {
        {0, "0 B"},
        {48, "48 B"},
        {1023, "1023 B"},
        {1024, "1.0 KiB"},
        {1536, "1.5 KiB"},
        {700'000, "683.5 KiB"},
        {1024 * 1024 - 1, "1023.9 KiB"},  // rounded down: never "1024.0 KiB"
        {1024 * 1024, "1.0 MiB"},
        {50ULL << 30, "50.0 GiB"},
        {(3ULL << 40) + (1ULL << 39), "3.5 TiB"},
        {5000ULL << 40, "5000.0 TiB"},  // no unit above TiB
    };
    for (const auto& [bytes, want] : cases) EXPECT_EQ(format_size(bytes), want) << bytes;
}

}  // namespace
}  // namespace crcrd
