#pragma once
// Webhook signatures (docs/ingest.md): GitHub's X-Hub-Signature-256 and Standard Webhooks v1.
// Verification works on the raw body, before any JSON parsing, in constant time per key.

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "crcrd/config/config.hpp"
#include "crcrd/core/result.hpp"

namespace crcrd::ingest {

/// One active secret. `key` is the HMAC key: the raw file content for GitHub, the decoded
/// base64 after `whsec_` for Standard Webhooks. Never logged; only `id` is.
struct NamedKey {
    std::string id;
    std::string key;
};

/// All secrets active at one moment (several during a rotation).
struct KeyRing {
    std::vector<NamedKey> github;
    std::vector<NamedKey> standard;
};

/// Reads every secret file the config names. Errors name the key path and file, never the
/// content: "ingest.secrets[0].file: cannot open /etc/crcrd/webhook.secret: ...".
Result<KeyRing> load_keyring(const config::IngestConfig& cfg, std::vector<std::string>* errors);

/// Decodes a Standard Webhooks secret "whsec_<base64>" (the prefix is optional).
Result<std::string> decode_whsec(std::string_view text);

/// Checks `header` ("sha256=<64 hex>") against HMAC-SHA256(body) under every key. Returns the
/// id of the matching key; errors (code "unauthorized") say missing, malformed or wrong.
Result<std::string> verify_github(std::string_view header, std::string_view body,
                                  const std::vector<NamedKey>& keys);

/// "sha256=<hex>" for `body` under `key`.
std::string sign_github(std::string_view key, std::string_view body);

/// Standard Webhooks v1: `signatures` is the space-separated "v1,<base64>" list; the signed
/// content is "<id>.<timestamp>.<body>"; a timestamp further than `max_skew` from `now`
/// (Unix seconds) is refused. Returns the matching key id, or "unauthorized".
Result<std::string> verify_standard(std::string_view id, std::string_view timestamp,
                                    std::string_view signatures, std::string_view body,
                                    const std::vector<NamedKey>& keys, std::int64_t now,
                                    std::chrono::seconds max_skew);

/// "v1,<base64>" for the given id, timestamp and body under the decoded `key`.
std::string sign_standard(std::string_view key, std::string_view id, std::int64_t timestamp,
                          std::string_view body);

}  // namespace crcrd::ingest
