#include "support/temp_dir.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <stdexcept>

namespace crcrd {

namespace {
const char* tmpdir() {
    const char* base = std::getenv("TMPDIR");
    return base && *base ? base : "/tmp";
}
}  // namespace

TempDir::TempDir() : TempDir(tmpdir()) {}

TempDir::TempDir(const std::filesystem::path& base) {
    std::string templ = (base / "crcrd-test-XXXXXX").string();
    if (!mkdtemp(templ.data())) throw std::runtime_error("mkdtemp failed in " + base.string());
    m_path = templ;
}

TempDir::~TempDir() {
    if (std::getenv("CRCRD_KEEP_TEST_DIRS")) return;  // for a post-mortem of a failing test
    std::error_code ec;
    std::filesystem::remove_all(m_path, ec);
}

void write_file(const std::filesystem::path& path, const std::string& content, unsigned mode) {
    std::filesystem::create_directories(path.parent_path());
    {
        std::ofstream out(path, std::ios::binary | std::ios::trunc);
        if (!out) throw std::runtime_error("cannot write " + path.string());
        out << content;
    }
    ::chmod(path.c_str(), mode);
}

}  // namespace crcrd
