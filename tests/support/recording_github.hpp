#pragma once
// The tests' GitHub stand-in with a memory: each request, when it came and what it was
// answered; the answer is the test's to set (by default 201 {"id": 1}).

#include <chrono>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "support/fake_github.hpp"

namespace crcrd {

/// What the fake GitHub saw: each request, when, and what it answered.
struct Seen {
    std::chrono::steady_clock::time_point at;
    http::Request req;
    int answered = 0;
    nlohmann::json body() const { return nlohmann::json::parse(req.body, nullptr, false); }
};

class RecordingGithub {
  public:
    using Answer = std::function<http::Response(const http::Request&)>;
    RecordingGithub()
        : server([this](const http::Request& req) {
              Answer a;
              {
                  std::lock_guard lk(mu);
                  a = answer;
              }
              auto r = a ? a(req) : http::Response::json(201, {{"id", 1}});
              std::lock_guard lk(mu);
              seen.push_back({std::chrono::steady_clock::now(), req, r.status});
              return r;
          }) {}
    void set(Answer a) {
        std::lock_guard lk(mu);
        answer = std::move(a);
    }
    std::vector<Seen> statuses() {
        std::lock_guard lk(mu);
        std::vector<Seen> out;
        for (const auto& s : seen)
            if (s.req.path.find("/statuses/") != std::string::npos) out.push_back(s);
        return out;
    }
    std::vector<Seen> all() {
        std::lock_guard lk(mu);
        return seen;
    }
    /// Per context, the states GitHub accepted (answered 201), in order.
    std::map<std::string, std::vector<std::string>> accepted(const std::string& sha) {
        std::map<std::string, std::vector<std::string>> out;
        for (const auto& s : statuses()) {
            if (s.answered != 201 || s.req.path.find(sha) == std::string::npos) continue;
            auto b = s.body();
            out[b["context"]].push_back(b["state"]);
        }
        return out;
    }
    std::string url() const { return server.url(); }

  private:
    std::mutex mu;
    Answer answer;
    std::vector<Seen> seen;
    FakeGithub server;
};

}  // namespace crcrd
