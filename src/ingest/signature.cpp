#include "crcrd/ingest/signature.hpp"

#include <charconv>

#include "crcrd/core/crypto.hpp"
#include "crcrd/core/files.hpp"

namespace crcrd::ingest {

namespace {

Error unauthorized(std::string detail) {
    return make_error(Errc::unauthorized, std::move(detail));
}

void load_list(const std::vector<config::SecretRef>& refs, const std::string& key, bool whsec,
               std::vector<NamedKey>& out, std::vector<std::string>& errors) {
    for (std::size_t i = 0; i < refs.size(); ++i) {
        std::string where = "ingest." + key + "[" + std::to_string(i) + "].file";
        auto text = read_file(refs[i].file, 64 * 1024);
        if (!text) {
            errors.push_back(where + ": " + text.error().message);
            continue;
        }
        std::string value = trim(std::move(*text));
        if (value.empty()) {
            errors.push_back(where + ": " + refs[i].file.string() + " is empty");
            continue;
        }
        if (whsec) {
            auto k = decode_whsec(value);
            if (!k) {
                errors.push_back(where + ": " + refs[i].file.string() + ": " + k.error().message);
                continue;
            }
            value = std::move(*k);
        }
        out.push_back(NamedKey{refs[i].id, std::move(value)});
    }
}

}  // namespace

Result<KeyRing> load_keyring(const config::IngestConfig& cfg, std::vector<std::string>* errors) {
    std::vector<std::string> errs;
    KeyRing ring;
    load_list(cfg.secrets, "secrets", false, ring.github, errs);
    load_list(cfg.standard_webhooks_secrets, "standard_webhooks_secrets", true, ring.standard,
              errs);
    if (!errs.empty()) {
        std::string first = errs.front();
        if (errors) errors->insert(errors->end(), errs.begin(), errs.end());
        return make_error(Errc::config, first);
    }
    return ring;
}

Result<std::string> decode_whsec(std::string_view text) {
    if (text.rfind("whsec_", 0) == 0) text.remove_prefix(6);
    auto raw = crypto::base64_decode(text);
    if (!raw || raw->size() < 16) {
        return make_error(
            Errc::config,
            "not a Standard Webhooks secret (whsec_ followed by base64 of at least 16 bytes)");
    }
    return *raw;
}

Result<std::string> verify_github(std::string_view header, std::string_view body,
                                  const std::vector<NamedKey>& keys) {
    if (header.empty()) return unauthorized("missing X-Hub-Signature-256");
    constexpr std::string_view k_prefix = "sha256=";
    if (header.substr(0, k_prefix.size()) != k_prefix || header.size() != k_prefix.size() + 64) {
        return unauthorized("malformed X-Hub-Signature-256 (expected sha256=<64 hex>)");
    }
    auto given = crypto::hex_decode(header.substr(k_prefix.size()));
    if (!given) return unauthorized("malformed X-Hub-Signature-256 (expected sha256=<64 hex>)");
    // Every key is tried, so the time taken does not reveal which one matched.
    const NamedKey* match = nullptr;
    for (const auto& k : keys) {
        if (crypto::constant_time_equal(crypto::hmac_sha256(k.key, body), *given) && !match)
            match = &k;
    }
    if (!match) return unauthorized("signature does not match");
    return match->id;
}

std::string sign_github(std::string_view key, std::string_view body) {
    return "sha256=" + crypto::hex_encode(crypto::hmac_sha256(key, body));
}

Result<std::string> verify_standard(std::string_view id, std::string_view timestamp,
                                    std::string_view signatures, std::string_view body,
                                    const std::vector<NamedKey>& keys, std::int64_t now,
                                    std::chrono::seconds max_skew) {
    if (id.empty() || timestamp.empty() || signatures.empty()) {
        return unauthorized("missing webhook-id, webhook-timestamp or webhook-signature");
    }
    std::int64_t ts = 0;
    auto [p, ec] = std::from_chars(timestamp.data(), timestamp.data() + timestamp.size(), ts);
    if (ec != std::errc() || p != timestamp.data() + timestamp.size()) {
        return unauthorized("webhook-timestamp is not Unix seconds");
    }
    if (ts < now - max_skew.count() || ts > now + max_skew.count()) {
        return unauthorized("webhook-timestamp is outside the allowed clock skew");
    }
    std::string signed_content;
    signed_content.reserve(id.size() + timestamp.size() + body.size() + 2);
    signed_content.append(id).append(".").append(timestamp).append(".").append(body);

    std::vector<std::string> given;
    std::size_t pos = 0;
    while (pos < signatures.size()) {
        std::size_t end = signatures.find(' ', pos);
        if (end == std::string_view::npos) end = signatures.size();
        std::string_view item = signatures.substr(pos, end - pos);
        pos = end + 1;
        if (item.substr(0, 3) != "v1,") continue;  // other versions are skipped, as the spec says
        if (auto raw = crypto::base64_decode(item.substr(3))) given.push_back(std::move(*raw));
    }
    if (given.empty()) return unauthorized("webhook-signature has no v1 signature");

    const NamedKey* match = nullptr;
    for (const auto& k : keys) {
        std::string expected = crypto::hmac_sha256(k.key, signed_content);
        for (const auto& g : given) {
            if (crypto::constant_time_equal(expected, g) && !match) match = &k;
        }
    }
    if (!match) return unauthorized("signature does not match");
    return match->id;
}

std::string sign_standard(std::string_view key, std::string_view id, std::int64_t timestamp,
                          std::string_view body) {
    std::string content =
        std::string(id) + "." + std::to_string(timestamp) + "." + std::string(body);
    return "v1," + crypto::base64_encode(crypto::hmac_sha256(key, content));
}

}  // namespace crcrd::ingest
