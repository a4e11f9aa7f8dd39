#include "crcrd/core/files.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace crcrd {

Status write_file_atomic(const std::filesystem::path& path, const std::string& text) {
    // A temporary of this writer's own: two threads or processes writing the same file never
    // share one (the last rename wins, whole).
    static std::atomic<unsigned> counter{0};
    const auto tmp = path.string() + ".tmp." + std::to_string(::getpid()) + "." +
                     std::to_string(counter.fetch_add(1));
    auto fail = [&](const std::string& what) -> Status {
        const int err = errno;
        ::unlink(tmp.c_str());
        return make_error(Errc::io,
                          "cannot " + what + " " + path.string() + ": " + std::strerror(err));
    };
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0) return fail("create");
    std::size_t done = 0;
    while (done < text.size()) {
        auto n = ::write(fd, text.data() + done, text.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            ::close(fd);
            return fail("write");
        }
        done += static_cast<std::size_t>(n);
    }
    if (::fsync(fd) != 0) {
        ::close(fd);
        return fail("flush");
    }
    ::close(fd);
    if (::rename(tmp.c_str(), path.c_str()) != 0) return fail("rename");
    return Ok{};
}

Result<std::string> read_file(const std::filesystem::path& path, std::size_t max_bytes) {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        return make_error(Errc::io, "cannot open " + path.string() + ": " + std::strerror(errno));
    }
    std::string out;
    char buf[8192];
    while (in.read(buf, sizeof buf) || in.gcount() > 0) {
        out.append(buf, static_cast<std::size_t>(in.gcount()));
        if (out.size() > max_bytes) {
            return make_error(Errc::io, path.string() + " is larger than " +
                                            std::to_string(max_bytes) + " bytes");
        }
    }
    if (in.bad()) return make_error(Errc::io, "cannot read " + path.string());
    return out;
}

Result<std::string> read_untrusted_file(const std::filesystem::path& path, std::size_t max_bytes) {
    int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) {
        const int err = errno;
        if (err == ELOOP)
            return make_error(Errc::io, path.filename().string() + " is a symbolic link");
        return make_error(Errc::io,
                          "cannot open " + path.filename().string() + ": " + std::strerror(err));
    }
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        ::close(fd);
        return make_error(Errc::io, path.filename().string() + " is not a regular file");
    }
    if (static_cast<std::uint64_t>(st.st_size) > max_bytes) {
        ::close(fd);
        return make_error(Errc::io, path.filename().string() + " is larger than " +
                                        std::to_string(max_bytes) + " bytes");
    }
    std::string out;
    out.resize(static_cast<std::size_t>(st.st_size));
    std::size_t have = 0;
    while (have < out.size()) {
        ssize_t n = ::read(fd, out.data() + have, out.size() - have);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;  // shrunk while read: what was there
        have += static_cast<std::size_t>(n);
    }
    ::close(fd);
    out.resize(have);
    return out;
}

std::string trim(std::string text) {
    const char* ws = " \t\r\n\v\f";
    auto b = text.find_first_not_of(ws);
    if (b == std::string::npos) return {};
    auto e = text.find_last_not_of(ws);
    return text.substr(b, e - b + 1);
}

std::string self_executable() {
    // Read once per process: each job asks for it twice (its init beside this binary, the
    // sandbox client that is this binary), and the path cannot change while we run.
    static const std::string self = [] {
        std::error_code ec;
        auto path = std::filesystem::read_symlink("/proc/self/exe", ec).string();
        if (auto d = path.find(" (deleted)"); d != std::string::npos) path.erase(d);
        return path;
    }();
    return self;
}

}  // namespace crcrd
