#pragma once
// Beast-free request and response types shared by the server, the router and the client.

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace crcrd::http {

using Headers = std::vector<std::pair<std::string, std::string>>;

/// Case-insensitive header look-up; the first match wins.
std::optional<std::string_view> find_header(const Headers& headers, std::string_view name);

struct Request {
    std::string method;  // "GET", "POST", ...
    std::string target;  // as sent: path and query
    std::string path;    // target before '?'
    std::string query;   // after '?', raw
    Headers headers;
    std::string body;
    std::string remote;  // peer address, for the log
    /// Non-zero when the server refused the request before reading its body (413); the
    /// handler still sees it, to record it, and the server closes the connection afterwards.
    int refused_status = 0;

    std::optional<std::string_view> header(std::string_view name) const {
        return find_header(headers, name);
    }
    /// The URL-decoded value of a query parameter, if present.
    std::optional<std::string> query_param(std::string_view name) const;
    /// The URL-decoded name of every query parameter, in order (repeats included, empty
    /// names skipped).
    std::vector<std::string> query_names() const;
};

struct Response {
    int status = 200;
    std::string content_type = "application/json";
    Headers headers;
    std::string body;
    bool close = false;  // ask the server to close the connection after this answer
    /// Close the connection without answering, nothing written (the tests' stand-ins play an
    /// answer lost after the server acted on the request).
    bool drop = false;

    /// A JSON answer with `status`.
    static Response json(int status, const nlohmann::json& body);
    /// The one error body of every route: {"error": code, "detail": detail} (no detail when empty).
    static Response error(int status, const std::string& code, const std::string& detail = {});
};

}  // namespace crcrd::http
