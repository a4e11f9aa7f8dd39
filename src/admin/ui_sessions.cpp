#include "ui_sessions.hpp"

#include <algorithm>

#include "crcrd/core/crypto.hpp"

namespace crcrd::admin {

std::string UiSessions::create(const std::string& token_name) {
    std::string id = crypto::base64url_encode(crypto::random_bytes(32));
    UiSession s{token_name, crypto::base64url_encode(crypto::random_bytes(32)),
                std::chrono::steady_clock::now() + m_ttl};
    std::lock_guard lk(m_mu);
    const auto now = std::chrono::steady_clock::now();
    std::erase_if(m_by_digest, [&](const auto& kv) { return kv.second.expires <= now; });
    while (m_by_digest.size() >= m_capacity) {
        auto oldest = std::min_element(
            m_by_digest.begin(), m_by_digest.end(),
            [](const auto& a, const auto& b) { return a.second.expires < b.second.expires; });
        m_by_digest.erase(oldest);
    }
    m_by_digest.emplace(crypto::sha256_hex(id), std::move(s));
    return id;
}

std::optional<UiSession> UiSessions::find(std::string_view id) {
    if (id.empty()) return std::nullopt;
    const std::string digest = crypto::sha256_hex(id);
    std::lock_guard lk(m_mu);
    auto it = m_by_digest.find(digest);
    if (it == m_by_digest.end()) return std::nullopt;
    if (it->second.expires <= std::chrono::steady_clock::now()) {
        m_by_digest.erase(it);
        return std::nullopt;
    }
    return it->second;
}

void UiSessions::remove(std::string_view id) {
    const std::string digest = crypto::sha256_hex(id);
    std::lock_guard lk(m_mu);
    m_by_digest.erase(digest);
}

}  // namespace crcrd::admin
