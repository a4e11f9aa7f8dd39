#include <gtest/gtest.h>

#include "crcrd/core/sha.hpp"

namespace crcrd {
namespace {

TEST(Sha, ValidIsFortyHexNotAllZeros) {
    struct Case {
        const char* sha;
        bool valid;
    };
    for (const auto& c : std::vector<Case>{
             {"ec26c3e57ca3a959ca5aad62de7213c562f8c821", true},
             {"EC26C3E57CA3A959CA5AAD62DE7213C562F8C821", true},
             {"0000000000000000000000000000000000000001", true},
             {"0000000000000000000000000000000000000000", false},
             {"ec26c3e", false},
             {"ec26c3e57ca3a959ca5aad62de7213c562f8c82g", false},
             {"ec26c3e57ca3a959ca5aad62de7213c562f8c8210", false},
             {"main", false},
             {"", false},
         }) {
        EXPECT_EQ(valid_sha(c.sha), c.valid) << c.sha;
    }
}

}  // namespace
}  // namespace crcrd
