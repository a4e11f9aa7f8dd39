#include "crcrd/core/sha.hpp"

#include <algorithm>
#include <cctype>

namespace crcrd {

bool valid_sha(std::string_view sha) {
    return sha.size() == 40 && std::all_of(sha.begin(), sha.end(), ::isxdigit) &&
           !std::all_of(sha.begin(), sha.end(), [](char c) { return c == '0'; });
}

}  // namespace crcrd
