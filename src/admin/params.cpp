// The query-parameter checks every admin route shares (routes.hpp).
#include <algorithm>
#include <charconv>
#include <regex>

#include "crcrd/core/time.hpp"
#include "routes.hpp"

namespace crcrd::admin {

Result<std::optional<std::int64_t>> int_param(const http::Request& req, const char* name,
                                              std::int64_t lo, std::int64_t hi) {
    auto v = req.query_param(name);
    if (!v) return std::optional<std::int64_t>();
    std::int64_t n = 0;
    auto [p, ec] = std::from_chars(v->data(), v->data() + v->size(), n);
    if (ec != std::errc() || p != v->data() + v->size() || n < lo || n > hi) {
        return make_error(Errc::bad_request, std::string(name) + " must be an integer from " +
                                                 std::to_string(lo) + " to " + std::to_string(hi));
    }
    return std::optional<std::int64_t>(n);
}

Status one_of(const std::optional<std::string>& v, const char* name,
              std::span<const std::string_view> allowed) {
    if (!v) return Ok{};
    for (std::string_view a : allowed)
        if (*v == a) return Ok{};
    std::string list;
    for (std::string_view a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
    return make_error(Errc::bad_request, std::string(name) + " must be one of " + list);
}

Status utc_time(std::optional<std::string>& v, const char* name) {
    if (!v) return Ok{};
    // A UTC time or a prefix of one (a day, a minute) compares as text with the stored times.
    static const std::regex k_utc(R"(^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d+)?)?Z?)?$)");
    if (std::regex_match(*v, k_utc)) return Ok{};
    // A time with an offset becomes the stored UTC form. An unencoded '+' in a query string
    // arrives as a space: it is read as '+'.
    static const std::regex k_offset(
        R"(^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?)([+ -])(\d{2}):(\d{2})$)");
    std::smatch m;
    if (std::regex_match(*v, m, k_offset)) {
        const int hours = std::stoi(m[4].str()), minutes = std::stoi(m[5].str());
        if (auto t = parse_rfc3339(m[1].str() + "Z"); t && hours <= 23 && minutes <= 59) {
            const auto offset = std::chrono::hours(hours) + std::chrono::minutes(minutes);
            v = rfc3339(m[3].str() == "-" ? *t + offset : *t - offset);
            return Ok{};
        }
    }
    return make_error(
        Errc::bad_request,
        std::string(name) + " must be an RFC 3339 time (UTC, or with an offset such as +02:00)");
}

Status known_params(const http::Request& req, std::span<const std::string_view> allowed) {
    for (const auto& name : req.query_names()) {
        if (std::find(allowed.begin(), allowed.end(), name) != allowed.end()) continue;
        std::string list;
        for (std::string_view a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
        std::string shown = name.substr(0, 100);
        return make_error(
            Errc::bad_request,
            "unknown query parameter '" + shown + "'" +
                (list.empty() ? ": this route takes none" : " (this route takes " + list + ")"));
    }
    return Ok{};
}

Result<Page> page_of(const http::Request& req) {
    Page page;
    auto l = int_param(req, "limit", 1, 200);
    if (!l) return l.error();
    page.limit = static_cast<int>(l->value_or(50));
    if (auto c = req.query_param("cursor"); c && !c->empty()) {
        page.before_id = parse_cursor(*c);
        if (!page.before_id)
            return make_error(Errc::bad_request, "cursor is not one this server gave out");
    }
    return page;
}

http::Response ok_json(const nlohmann::json& body, int status) {
    return http::Response::json(status, body);
}

Status first_error(std::initializer_list<Status> checks) {
    for (const auto& s : checks)
        if (!s) return s;
    return Ok{};
}

}  // namespace crcrd::admin
