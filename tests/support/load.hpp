#pragma once
// A load generator: many concurrent HTTPS connections posting signed deliveries, each
// connection keeping alive or not. Used by the burst test and by bench/.

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "crcrd/http/message.hpp"

namespace crcrd {

struct LoadRequest {
    std::string body;
    http::Headers headers;
};

struct LoadOptions {
    std::string host = "127.0.0.1";
    std::uint16_t port = 0;
    bool tls = true;
    std::filesystem::path ca_file;
    std::string target = "/webhook";
    std::size_t connections = 16;
    std::size_t total = 1000;
    bool keep_alive = true;
    std::chrono::seconds timeout{60};
    /// Requests per second, each due at start + index / rate (an open load: a request is not
    /// held back by a slow answer to another, only by every connection being busy); its
    /// latency counts from when it was due. The clock starts once every connection is open.
    /// 0: each connection sends as fast as it is answered.
    double rate = 0;
    std::function<LoadRequest(std::size_t index)> make;
};

struct LoadResult {
    std::vector<int> status;         // per request index; 0 when it failed on the network
    std::vector<std::string> body;   // per request index
    std::vector<double> latency_ms;  // per request index
    double elapsed_s = 0;
    std::size_t network_errors = 0;
};

/// Sends `total` requests over `connections` concurrent connections (one thread) and waits
/// for all of them. A request that fails on the network is not retried.
LoadResult run_load(const LoadOptions& opts);

/// The p-th percentile (0..100) of `values` (nearest rank).
double percentile(std::vector<double> values, double p);

}  // namespace crcrd
