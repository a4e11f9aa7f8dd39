#pragma once
// The one stand-in the tests use: a small HTTPS server on loopback playing GitHub's API
// (built on crcrd's own http::Server, with the test CA's certificate).

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "crcrd/http/message.hpp"

namespace crcrd {

class FakeGithub {
  public:
    using Handler = std::function<http::Response(const http::Request&)>;

    /// A request body over `max_body_bytes` reaches the handler with refused_status 413.
    /// `idle_timeout`: how long a kept-alive connection may wait for its next request.
    explicit FakeGithub(Handler handler, std::uint64_t max_body_bytes = 16ULL << 20,
                        std::chrono::milliseconds idle_timeout = std::chrono::seconds(30));
    ~FakeGithub();

    std::string url() const;  // https://127.0.0.1:PORT
    /// Every request received so far (copies).
    std::vector<http::Request> requests() const;

  private:
    struct Impl;
    std::unique_ptr<Impl> m_impl;
};

}  // namespace crcrd
