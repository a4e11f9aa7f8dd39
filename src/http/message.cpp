#include "crcrd/http/message.hpp"

#include <strings.h>
#include <nlohmann/json.hpp>

namespace crcrd::http {

std::optional<std::string_view> find_header(const Headers& headers, std::string_view name) {
    for (const auto& [k, v] : headers) {
        if (k.size() == name.size() && strncasecmp(k.data(), name.data(), k.size()) == 0) return v;
    }
    return std::nullopt;
}

namespace {
std::string url_decode(std::string_view s) {
    std::string out;
    for (std::size_t i = 0; i < s.size(); ++i) {
        if (s[i] == '+') {
            out.push_back(' ');
        } else if (s[i] == '%' && i + 2 < s.size()) {
            auto hex = [](char c) -> int {
                if (c >= '0' && c <= '9') return c - '0';
                if (c >= 'a' && c <= 'f') return c - 'a' + 10;
                if (c >= 'A' && c <= 'F') return c - 'A' + 10;
                return -1;
            };
            int hi = hex(s[i + 1]), lo = hex(s[i + 2]);
            if (hi < 0 || lo < 0) {
                out.push_back(s[i]);
                continue;
            }
            out.push_back(static_cast<char>(hi * 16 + lo));
            i += 2;
        } else {
            out.push_back(s[i]);
        }
    }
    return out;
}
}  // namespace

std::optional<std::string> Request::query_param(std::string_view name) const {
    std::string_view q = query;
    while (!q.empty()) {
        auto amp = q.find('&');
        std::string_view pair = q.substr(0, amp);
        q = amp == std::string_view::npos ? std::string_view() : q.substr(amp + 1);
        auto eq = pair.find('=');
        std::string key = url_decode(pair.substr(0, eq));
        if (key == name)
            return eq == std::string_view::npos ? std::string() : url_decode(pair.substr(eq + 1));
    }
    return std::nullopt;
}

std::vector<std::string> Request::query_names() const {
    std::vector<std::string> names;
    std::string_view q = query;
    while (!q.empty()) {
        auto amp = q.find('&');
        std::string_view pair = q.substr(0, amp);
        q = amp == std::string_view::npos ? std::string_view() : q.substr(amp + 1);
        std::string key = url_decode(pair.substr(0, pair.find('=')));
        if (!key.empty()) names.push_back(std::move(key));
    }
    return names;
}

Response Response::json(int status, const nlohmann::json& body) {
    Response r;
    r.status = status;
    r.body = body.dump();
    return r;
}

Response Response::error(int status, const std::string& code, const std::string& detail) {
    nlohmann::json body = {{"error", code}};
    if (!detail.empty()) body["detail"] = detail;
    return json(status, body);
}

}  // namespace crcrd::http
