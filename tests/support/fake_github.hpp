#pragma once
// The one stand-in the tests use: a small HTTPS server on loopback playing GitHub's API
// (built on crcrd's own http::Server, with the test CA's certificate).

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

    explicit FakeGithub(Handler handler);
    ~FakeGithub();

    std::string url() const;  // https://127.0.0.1:PORT
    /// Every request received so far (copies).
    std::vector<http::Request> requests() const;

private:
    struct Impl;
    std::unique_ptr<Impl> m_impl;
};

}  // namespace crcrd
