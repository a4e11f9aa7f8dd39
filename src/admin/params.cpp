// The query-parameter checks every admin route shares (routes.hpp).
#include <charconv>
#include <regex>

#include "routes.hpp"

namespace crcrd::admin {

Result<std::optional<std::int64_t>> int_param(const http::Request& req, const char* name, std::int64_t lo, std::int64_t hi) {
    auto v = req.query_param(name);
    if (!v) return std::optional<std::int64_t>();
    std::int64_t n = 0;
    auto [p, ec] = std::from_chars(v->data(), v->data() + v->size(), n);
    if (ec != std::errc() || p != v->data() + v->size() || n < lo || n > hi) {
        return make_error("bad_request", std::string(name) + " must be an integer from " + std::to_string(lo) + " to " +
                                             std::to_string(hi));
    }
    return std::optional<std::int64_t>(n);
}

Status one_of(const std::optional<std::string>& v, const char* name, std::span<const std::string_view> allowed) {
    if (!v) return Ok{};
    for (std::string_view a : allowed)
        if (*v == a) return Ok{};
    std::string list;
    for (std::string_view a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
    return make_error("bad_request", std::string(name) + " must be one of " + list);
}

Status rfc3339_like(const std::optional<std::string>& v, const char* name) {
    static const std::regex k_time(R"(^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d+)?)?Z?)?$)");
    if (v && !std::regex_match(*v, k_time)) return make_error("bad_request", std::string(name) + " must be an RFC 3339 UTC time");
    return Ok{};
}

Result<Page> page_of(const http::Request& req) {
    Page page;
    auto l = int_param(req, "limit", 1, 200);
    if (!l) return l.error();
    page.limit = static_cast<int>(l->value_or(50));
    if (auto c = req.query_param("cursor"); c && !c->empty()) {
        page.before_id = parse_cursor(*c);
        if (!page.before_id) return make_error("bad_request", "cursor is not one this server gave out");
    }
    return page;
}

http::Response ok_json(const nlohmann::json& body, int status) { return http::Response::json(status, body); }

Status first_error(std::initializer_list<Status> checks) {
    for (const auto& s : checks)
        if (!s) return s;
    return Ok{};
}

}  // namespace crcrd::admin
