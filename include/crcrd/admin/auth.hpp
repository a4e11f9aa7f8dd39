#pragma once
// Bearer tokens of the admin API (docs/operations.md): stored as SHA-256, roles read and admin.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "crcrd/config/config.hpp"

namespace crcrd::admin {

enum class Role { read, admin };

struct Caller {
    std::string name;
    Role role = Role::read;
};

/// The caller whose token's SHA-256 matches `authorization` ("Bearer <token>"), or nullopt.
/// Every configured token is compared, in constant time, whatever matched first.
std::optional<Caller> authenticate(std::optional<std::string_view> authorization,
                                   const std::vector<config::AdminToken>& tokens);

}  // namespace crcrd::admin
