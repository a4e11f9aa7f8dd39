#include "crcrd/github/auth.hpp"

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include <memory>
#include <nlohmann/json.hpp>

#include "crcrd/core/crypto.hpp"
#include "crcrd/core/files.hpp"
#include "crcrd/http/client.hpp"

namespace crcrd::github {

using nlohmann::json;

http::Headers api_headers() {
    return {{"Accept", "application/vnd.github+json"}, {"X-GitHub-Api-Version", "2022-11-28"}};
}

Result<std::string> make_app_jwt(std::int64_t app_id, const std::string& private_key_pem,
                                 SystemTime now) {
    std::unique_ptr<BIO, decltype(&BIO_free)> bio(
        BIO_new_mem_buf(private_key_pem.data(), static_cast<int>(private_key_pem.size())),
        &BIO_free);
    if (!bio) return make_error(Errc::github_app, "out of memory");
    std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)> key(
        PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr), &EVP_PKEY_free);
    if (!key || EVP_PKEY_base_id(key.get()) != EVP_PKEY_RSA) {
        return make_error(Errc::github_app, "private_key_file is not a PEM RSA private key");
    }
    const auto secs =
        std::chrono::duration_cast<std::chrono::seconds>(now.time_since_epoch()).count();
    // GitHub allows at most 10 minutes; iat is back-dated for clock drift, as GitHub advises.
    const std::string header = crypto::base64url_encode(R"({"alg":"RS256","typ":"JWT"})");
    const std::string claims = crypto::base64url_encode(
        json{{"iat", secs - 60}, {"exp", secs + 540}, {"iss", std::to_string(app_id)}}.dump());
    const std::string input = header + "." + claims;
    std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), &EVP_MD_CTX_free);
    std::size_t len = 0;
    if (!ctx || EVP_DigestSignInit(ctx.get(), nullptr, EVP_sha256(), nullptr, key.get()) != 1 ||
        EVP_DigestSign(ctx.get(), nullptr, &len,
                       reinterpret_cast<const unsigned char*>(input.data()), input.size()) != 1) {
        return make_error(Errc::github_app, "cannot sign the JWT");
    }
    std::string sig(len, '\0');
    if (EVP_DigestSign(ctx.get(), reinterpret_cast<unsigned char*>(sig.data()), &len,
                       reinterpret_cast<const unsigned char*>(input.data()), input.size()) != 1) {
        return make_error(Errc::github_app, "cannot sign the JWT");
    }
    sig.resize(len);
    return input + "." + crypto::base64url_encode(sig);
}

Auth::Auth(config::GithubReportConfig cfg, std::chrono::milliseconds timeout)
    : m_cfg(std::move(cfg)), m_timeout(timeout) {}

void Auth::invalidate() {
    std::lock_guard lk(m_mu);
    m_app_token.clear();
}

Result<std::string> Auth::token() {
    std::lock_guard lk(m_mu);
    if (m_cfg.token_file) {
        // Read at every use (a few bytes, at most once a second): a token rotated in place is
        // picked up at once, whatever the file system's timestamp resolution.
        auto text = read_file(*m_cfg.token_file, 64 * 1024);
        if (!text) return make_error(Errc::github_auth, text.error().message);
        auto tok = trim(*text);
        if (tok.empty())
            return make_error(Errc::github_auth,
                              "token_file " + m_cfg.token_file->string() + " is empty");
        return tok;
    }
    const auto now = std::chrono::system_clock::now();
    if (!m_app_token.empty() && now < m_app_expires - std::chrono::minutes(5)) return m_app_token;
    auto pem = read_file(*m_cfg.private_key_file, 1 << 20);
    if (!pem) return make_error(Errc::github_app, pem.error().message);
    auto jwt = make_app_jwt(*m_cfg.app_id, *pem, now);
    if (!jwt) return jwt.error();
    auto headers = api_headers();
    headers.emplace_back("Authorization", "Bearer " + *jwt);
    http::ClientOptions opts;
    opts.ca_file = m_cfg.ca_file;
    opts.timeout = m_timeout;
    auto url = m_cfg.api_url + "/app/installations/" + std::to_string(*m_cfg.installation_id) +
               "/access_tokens";
    auto r = http::send("POST", url, headers, "", opts);
    if (!r) return make_error(Errc::github_app, "installation token: " + r.error().message);
    auto body = json::parse(r->body, nullptr, false);
    if (r->status != 201 || !body.is_object() || !body.contains("token") ||
        !body["token"].is_string()) {
        std::string msg =
            body.is_object() && body.contains("message") && body["message"].is_string()
                ? body["message"].get<std::string>()
                : r->body.substr(0, 200);
        return make_error(Errc::github_app,
                          "installation token: HTTP " + std::to_string(r->status) + ": " + msg);
    }
    m_app_token = body["token"];
    auto expires = parse_rfc3339(body.value("expires_at", ""));
    m_app_expires = expires.value_or(now + std::chrono::minutes(55));
    return m_app_token;
}

}  // namespace crcrd::github
