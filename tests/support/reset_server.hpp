#pragma once
// A loopback TCP listener that accepts every connection and resets it at once (SO_LINGER 0):
// what a client sees when a load balancer or the network drops it.

#include <atomic>
#include <cstdint>
#include <string>
#include <thread>

namespace crcrd {

class ResetServer {
  public:
    ResetServer();
    ~ResetServer();
    std::string url() const;  // https://127.0.0.1:PORT
    int accepted() const { return m_accepted.load(); }

  private:
    int m_fd = -1;
    std::uint16_t m_port = 0;
    std::atomic<bool> m_stop{false};
    std::atomic<int> m_accepted{0};
    std::thread m_thread;
};

}  // namespace crcrd
