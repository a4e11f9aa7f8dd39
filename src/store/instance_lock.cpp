#include "crcrd/store/instance_lock.hpp"
#include "crcrd/store/sqlite.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace crcrd::store {

Result<std::unique_ptr<InstanceLock>> InstanceLock::acquire(const std::filesystem::path& db_path) {
    std::filesystem::path path = db_path;
    path += ".lock";
    int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0)
        return make_error(Errc::io, "cannot open " + path.string() + ": " + std::strerror(errno));
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
        const int err = errno;
        char buf[32] = {};
        ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
        ::close(fd);
        if (err == EWOULDBLOCK) {
            std::string holder =
                n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : std::string();
            while (!holder.empty() && (holder.back() == '\n' || holder.back() == ' '))
                holder.pop_back();
            return make_error(Errc::locked,
                              "another crcrd holds " + path.string() +
                                  (holder.empty() ? std::string() : " (pid " + holder + ")"));
        }
        return make_error(Errc::io, "cannot lock " + path.string() + ": " + std::strerror(err));
    }
    const std::string pid = std::to_string(::getpid()) + "\n";
    if (::ftruncate(fd, 0) == 0) (void)!::pwrite(fd, pid.data(), pid.size(), 0);
    return std::unique_ptr<InstanceLock>(new InstanceLock(fd, std::move(path)));
}

InstanceLock::~InstanceLock() {
    if (m_fd >= 0) ::close(m_fd);  // releases the lock; the file stays (removing it would race)
}

}  // namespace crcrd::store
