#include "crcrd/github/client.hpp"

#include "crcrd/github/auth.hpp"
#include "crcrd/http/client.hpp"

namespace crcrd::github {

Client::Client(std::string api_url, std::string token, std::optional<std::filesystem::path> ca_file,
               std::chrono::milliseconds timeout)
    : m_base(std::move(api_url)),
      m_token(std::move(token)),
      m_ca_file(std::move(ca_file)),
      m_timeout(timeout) {
    while (!m_base.empty() && m_base.back() == '/') m_base.pop_back();
}

Result<http::ClientResponse> Client::send(const std::string& method, const std::string& url,
                                          const std::string& body) const {
    http::Headers headers = api_headers();
    headers.emplace_back("Authorization", "Bearer " + m_token);
    if (method == "POST") headers.emplace_back("Content-Type", "application/json");
    http::ClientOptions opts;
    opts.ca_file = m_ca_file;
    opts.timeout = m_timeout;
    return http::send(method, url, headers, body, opts);
}

Result<http::ClientResponse> Client::get(const std::string& path) const {
    return send("GET", m_base + path, "");
}

Result<http::ClientResponse> Client::post(const std::string& path,
                                          const std::string& json_body) const {
    return send("POST", m_base + path, json_body);
}

ListOutcome Client::list(const std::string& path, int max_pages,
                         const std::function<bool(const nlohmann::json& page)>& on_page) const {
    using Kind = ListError::Kind;
    ListOutcome out;
    std::optional<std::string> url = m_base + path;
    for (int page = 0; url && page < max_pages; ++page) {
        auto r = send("GET", *url, "");
        if (!r) {
            out.error = ListError{Kind::transport, *url, 0, "", r.error().message};
            return out;
        }
        if (r->status != 200) {
            out.error = ListError{Kind::status, *url, r->status, r->body, ""};
            return out;
        }
        auto j = nlohmann::json::parse(r->body, nullptr, false);
        if (!j.is_array()) {
            out.error = ListError{Kind::not_a_list, *url, r->status, "", ""};
            return out;
        }
        if (!on_page(j)) return out;
        auto link = r->header("Link");
        url = link ? http::next_link(std::string(*link)) : std::nullopt;
        // The token goes only where api_url points: a next page elsewhere is not followed.
        if (url && !http::same_origin(*url, m_base)) {
            out.error = ListError{Kind::foreign_next, *url, 0, "", ""};
            return out;
        }
    }
    out.exhausted = !url;
    return out;
}

}  // namespace crcrd::github
