#include "openapi.hpp"

namespace crcrd::admin {

http::Response openapi_response(const std::string& method) {
    if (method != "GET") {
        auto r = http::Response::error(405, "method_not_allowed");
        r.headers.emplace_back("Allow", "GET");
        return r;
    }
    http::Response r;
    r.content_type = "application/yaml";
    r.body = std::string(openapi_yaml());
    return r;
}

}  // namespace crcrd::admin
