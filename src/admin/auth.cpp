#include "crcrd/admin/auth.hpp"

#include "crcrd/core/crypto.hpp"

namespace crcrd::admin {

std::optional<Caller> authenticate(std::optional<std::string_view> authorization,
                                   const std::vector<config::AdminToken>& tokens) {
    if (!authorization) return std::nullopt;
    constexpr std::string_view k_bearer = "Bearer ";
    std::string_view value = *authorization;
    if (value.size() <= k_bearer.size() || value.substr(0, k_bearer.size()) != k_bearer)
        return std::nullopt;
    const std::string digest = crypto::sha256_hex(value.substr(k_bearer.size()));
    std::optional<Caller> found;
    for (const auto& t : tokens) {
        if (crypto::constant_time_equal(digest, t.sha256) && !found) {
            found = Caller{t.name, t.role == "admin" ? Role::admin : Role::read};
        }
    }
    return found;
}

}  // namespace crcrd::admin
