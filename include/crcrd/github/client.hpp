#pragma once
// GitHub's REST API for one base URL (report.github.api_url) and one bearer token: the only
// code that sends a request to GitHub. The token goes to that origin only: a list's next page
// elsewhere is refused, never followed. Used by the status sender (report), the PR-files
// look-up (select) and missed-delivery recovery (ingest).

#include <chrono>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "crcrd/core/result.hpp"
#include "crcrd/http/client.hpp"

namespace crcrd::github {

/// Why a list could not be read to its end.
struct ListError {
    enum class Kind {
        transport,     // no answer: `message` says why
        status,        // an answer other than 200: `status`, `body`
        not_a_list,    // a 200 whose body is not a JSON array
        foreign_next,  // the Link header's next page is on another origin: `url`
    } kind = Kind::transport;
    std::string url;  // the page that failed, or the refused next page
    int status = 0;
    std::string body;
    std::string message;
};

/// What a list read: whether every page was read (no next page left), or why not.
struct ListOutcome {
    std::optional<ListError> error;
    bool exhausted = false;  // the last page had no next page
};

class Client {
  public:
    /// `api_url` (trailing slashes ignored) is the only origin requests go to; `token` is sent
    /// as `Authorization: Bearer`. Never logs the token.
    Client(std::string api_url, std::string token, std::optional<std::filesystem::path> ca_file,
           std::chrono::milliseconds timeout);

    /// The API's base URL, without a trailing slash.
    const std::string& base() const { return m_base; }
    /// GET `path` (starting with '/', relative to base()).
    Result<http::ClientResponse> get(const std::string& path) const;
    /// POST `json_body` to `path` (starting with '/', relative to base()).
    Result<http::ClientResponse> post(const std::string& path, const std::string& json_body) const;
    /// Reads the list at `path` page by page, following `Link: rel="next"` on base()'s origin,
    /// at most `max_pages` pages. `on_page` gets each page's JSON array and returns false to
    /// stop early. A transport error, a non-200 answer, a body that is not an array or a next
    /// page elsewhere ends the read with a ListError.
    ListOutcome list(const std::string& path, int max_pages,
                     const std::function<bool(const nlohmann::json& page)>& on_page) const;

  private:
    Result<http::ClientResponse> send(const std::string& method, const std::string& url,
                                      const std::string& body) const;

    std::string m_base;
    std::string m_token;
    std::optional<std::filesystem::path> m_ca_file;
    std::chrono::milliseconds m_timeout;
};

}  // namespace crcrd::github
