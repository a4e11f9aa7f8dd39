#pragma once
// GET /api/v1/openapi.yaml (docs/operations.md): docs/openapi.yaml, compiled into the binary
// (CMakeLists.txt generates its bytes as openapi_yaml.cpp), served without a token.

#include <string>
#include <string_view>

#include "crcrd/http/message.hpp"

namespace crcrd::admin {

/// The bytes of docs/openapi.yaml as they were when crcrd was built.
std::string_view openapi_yaml();

/// The document as `application/yaml` for GET; 405 (with `Allow: GET`) for any other method.
/// Needs no token: the description of the API is not a secret.
http::Response openapi_response(const std::string& method);

}  // namespace crcrd::admin
