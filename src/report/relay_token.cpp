#include "crcrd/report/relay_token.hpp"

#include "crcrd/core/files.hpp"
#include "crcrd/core/subprocess.hpp"

namespace crcrd::report {

Result<std::string> RelayToken::token() {
    if (m_cfg.token_file) {
        auto text = read_file(*m_cfg.token_file, 64 * 1024);
        if (!text) return make_error(Errc::relay_token, text.error().message);
        auto t = trim(*text);
        if (t.empty())
            return make_error(Errc::relay_token, m_cfg.token_file->string() + " is empty");
        return t;
    }
    std::lock_guard lk(m_mu);
    if (!m_cached.empty() && std::chrono::steady_clock::now() - m_fetched < m_cfg.token_ttl)
        return m_cached;
    SubprocessOptions o;
    o.timeout = std::chrono::seconds(30);
    o.max_output = 64 * 1024;
    auto r = run_subprocess(m_cfg.token_command, o);
    if (!r) return make_error(Errc::relay_token, "token_command: " + r.error().message);
    if (r->timed_out)
        return make_error(Errc::relay_token, "token_command did not finish within 30 s");
    if (r->exit_code != 0) {
        auto why = trim(r->err.substr(0, r->err.find('\n')));
        return make_error(Errc::relay_token,
                          "token_command exited " +
                              (r->exit_code >= 0 ? std::to_string(r->exit_code)
                                                 : "on signal " + std::to_string(r->signal)) +
                              (why.empty() ? std::string() : ": " + why.substr(0, 200)));
    }
    auto t = trim(r->out);
    if (t.empty() || t.find_first_of(" \t\r\n") != std::string::npos) {
        return make_error(Errc::relay_token, "token_command printed no single token");
    }
    m_cached = t;
    m_fetched = std::chrono::steady_clock::now();
    return t;
}

void RelayToken::invalidate() {
    std::lock_guard lk(m_mu);
    m_cached.clear();
}

}  // namespace crcrd::report
