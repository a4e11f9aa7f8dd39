#include "crcrd/core/files.hpp"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace crcrd {

Result<std::string> read_file(const std::filesystem::path& path, std::size_t max_bytes) {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        return make_error("io", "cannot open " + path.string() + ": " + std::strerror(errno));
    }
    std::string out;
    char buf[8192];
    while (in.read(buf, sizeof buf) || in.gcount() > 0) {
        out.append(buf, static_cast<std::size_t>(in.gcount()));
        if (out.size() > max_bytes) {
            return make_error("io", path.string() + " is larger than " + std::to_string(max_bytes) + " bytes");
        }
    }
    if (in.bad()) return make_error("io", "cannot read " + path.string());
    return out;
}

std::string trim(std::string text) {
    const char* ws = " \t\r\n\v\f";
    auto b = text.find_first_not_of(ws);
    if (b == std::string::npos) return {};
    auto e = text.find_last_not_of(ws);
    return text.substr(b, e - b + 1);
}

}  // namespace crcrd
