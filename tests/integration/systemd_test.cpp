// systemd's notify protocol as the service manager sees it: READY=1 once listening,
// WATCHDOG=1 when asked for, STOPPING=1 on SIGTERM.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <unistd.h>
#include <cstring>

#include "support/daemon.hpp"

namespace crcrd {
namespace {

class NotifySocket {
  public:
    explicit NotifySocket(const std::filesystem::path& path) : m_path(path) {
        m_fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        sockaddr_un a{};
        a.sun_family = AF_UNIX;
        std::strncpy(a.sun_path, path.c_str(), sizeof a.sun_path - 1);
        if (::bind(m_fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0)
            throw std::runtime_error("bind failed");
        timeval tv{0, 100 * 1000};
        ::setsockopt(m_fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    }
    ~NotifySocket() { ::close(m_fd); }
    /// Everything received so far, appended to what was received before.
    const std::string& drain() {
        char buf[1024];
        ssize_t n;
        while ((n = ::recv(m_fd, buf, sizeof buf, MSG_DONTWAIT)) > 0)
            m_seen.append(buf, static_cast<std::size_t>(n)).append("\n");
        return m_seen;
    }

  private:
    std::filesystem::path m_path;
    int m_fd;
    std::string m_seen;
};

TEST(Systemd, NotifiesReadyWatchdogAndStopping) {
    TempDir dir;
    NotifySocket sock(dir.path() / "notify.sock");
    TestDaemon d(dir.path());
    d.start({"NOTIFY_SOCKET=" + (dir.path() / "notify.sock").string(), "WATCHDOG_USEC=200000"});
    ASSERT_TRUE(eventually([&] { return sock.drain().find("READY=1") != std::string::npos; }));
    ASSERT_TRUE(eventually([&] {
        const auto& s = sock.drain();
        auto first = s.find("WATCHDOG=1");
        return first != std::string::npos && s.find("WATCHDOG=1", first + 1) != std::string::npos;
    })) << sock.drain();
    EXPECT_EQ(sock.drain().find("STOPPING=1"), std::string::npos);
    EXPECT_EQ(d.stop(), 0);
    EXPECT_NE(sock.drain().find("STOPPING=1"), std::string::npos) << sock.drain();
}

}  // namespace
}  // namespace crcrd
