# Writes OUT, a C++ file defining crcrd::admin::openapi_yaml() as the bytes of IN
# (docs/openapi.yaml), so GET /api/v1/openapi.yaml serves exactly the documented file. The
# bytes are a hex array: no delimiter to escape, and no string-length limit (-Woverlength-strings).
file(READ "${IN}" hex HEX)
string(LENGTH "${hex}" n)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "'\\\\x\\1'," bytes "${hex}")
math(EXPR size "${n} / 2")
file(WRITE "${OUT}" "// Generated from docs/openapi.yaml by cmake/embed_openapi.cmake; do not edit.\n"
     "#include <string_view>\n\nnamespace crcrd::admin {\nnamespace {\n"
     "const char k_openapi[${size} + 1] = {\n${bytes}'\\0'};\n}  // namespace\n\n"
     "std::string_view openapi_yaml() { return {k_openapi, ${size}}; }\n\n}  // namespace crcrd::admin\n")
