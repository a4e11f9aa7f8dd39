#include "support/load.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <memory>
#include <optional>

namespace crcrd {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = beast::http;
namespace ssl = asio::ssl;
using tcp = asio::ip::tcp;

namespace {

constexpr auto k_tuple = asio::as_tuple(asio::use_awaitable);

struct Shared {
    const LoadOptions& opts;
    LoadResult& result;
    ssl::context& ctx;
    tcp::endpoint endpoint;
    std::chrono::steady_clock::time_point begin = std::chrono::steady_clock::now();
    std::size_t next = 0;
    // With a rate, the clock starts once every connection is open (TLS handshakes are not
    // part of the open load): the first connections wait at this gate for the last.
    // (It opens after 10 s whatever happens, should a connection never open.)
    std::size_t ready = 0;
    bool gate_open = false;
    std::optional<asio::steady_timer> gate;
};

bhttp::request<bhttp::string_body> make_request(const LoadOptions& o, const LoadRequest& r) {
    bhttp::request<bhttp::string_body> req{bhttp::verb::post, o.target, 11};
    req.set(bhttp::field::host, o.host + ":" + std::to_string(o.port));
    for (const auto& [k, v] : r.headers) req.set(k, v);
    req.body() = r.body;
    req.keep_alive(o.keep_alive);
    req.prepare_payload();
    return req;
}

template <class Stream>
asio::awaitable<bool> exchange(Stream& s, beast::tcp_stream& lowest, beast::flat_buffer& buf,
                               Shared& sh, std::size_t i) {
    auto req = make_request(sh.opts, sh.opts.make(i));
    auto start = std::chrono::steady_clock::now();
    if (sh.opts.rate > 0) {
        const auto due =
            sh.begin + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                           std::chrono::duration<double>(static_cast<double>(i) / sh.opts.rate));
        if (due > start) {
            asio::steady_timer timer(co_await asio::this_coro::executor, due);
            co_await timer.async_wait(k_tuple);
        }
        start = due;  // a request sent late because every connection was busy counts its wait
    }
    lowest.expires_after(sh.opts.timeout);
    auto [wec, wn] = co_await bhttp::async_write(s, req, k_tuple);
    if (wec) co_return false;
    bhttp::response<bhttp::string_body> res;
    auto [rec, rn] = co_await bhttp::async_read(s, buf, res, k_tuple);
    if (rec) co_return false;
    sh.result.status[i] = static_cast<int>(res.result_int());
    sh.result.body[i] = std::move(res.body());
    sh.result.latency_ms[i] =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    co_return res.keep_alive();
}

asio::awaitable<void> worker(Shared& sh) {
    auto ex = co_await asio::this_coro::executor;
    for (;;) {
        if (sh.next >= sh.opts.total) co_return;
        // One connection serves requests until it closes or the work runs out.
        beast::ssl_stream<beast::tcp_stream> tls(ex, sh.ctx);
        beast::tcp_stream plain(ex);
        beast::tcp_stream& lowest = sh.opts.tls ? beast::get_lowest_layer(tls) : plain;
        lowest.expires_after(sh.opts.timeout);
        std::size_t first = sh.next++;
        auto [cec] = co_await lowest.async_connect(sh.endpoint, k_tuple);
        bool ok = !cec;
        if (ok) {
            boost::system::error_code nodelay_ec;
            lowest.socket().set_option(tcp::no_delay(true), nodelay_ec);
        }
        if (ok && sh.opts.tls) {
            auto [hec] = co_await tls.async_handshake(ssl::stream_base::client, k_tuple);
            ok = !hec;
        }
        if (!ok) {
            ++sh.result.network_errors;
            continue;
        }
        if (sh.gate && !sh.gate_open) {
            if (++sh.ready == std::min(sh.opts.connections, sh.opts.total)) {
                sh.gate->cancel();
            } else {
                co_await sh.gate->async_wait(k_tuple);
            }
            if (!sh.gate_open) {
                sh.gate_open = true;
                sh.begin = std::chrono::steady_clock::now();
            }
        }
        beast::flat_buffer buf;
        std::size_t i = first;
        for (;;) {
            bool keep = sh.opts.tls ? co_await exchange(tls, lowest, buf, sh, i)
                                    : co_await exchange(plain, lowest, buf, sh, i);
            if (sh.result.status[i] == 0) ++sh.result.network_errors;
            if (!keep || !sh.opts.keep_alive || sh.next >= sh.opts.total) break;
            i = sh.next++;
        }
        boost::system::error_code ignored;
        lowest.socket().close(ignored);
    }
}

}  // namespace

LoadResult run_load(const LoadOptions& opts) {
    LoadResult result;
    result.status.assign(opts.total, 0);
    result.body.assign(opts.total, "");
    result.latency_ms.assign(opts.total, 0.0);
    asio::io_context ioc(1);
    ssl::context ctx(ssl::context::tls_client);
    if (opts.tls) {
        ctx.load_verify_file(opts.ca_file.string());
        ctx.set_verify_mode(ssl::verify_peer);
    }
    Shared sh{opts,
              result,
              ctx,
              tcp::endpoint(asio::ip::make_address(opts.host), opts.port),
              std::chrono::steady_clock::now(),
              0,
              0,
              false,
              std::nullopt};
    if (opts.rate > 0)
        sh.gate.emplace(ioc, std::chrono::steady_clock::now() + std::chrono::seconds(10));
    auto start = std::chrono::steady_clock::now();
    for (std::size_t c = 0; c < opts.connections; ++c)
        asio::co_spawn(ioc, worker(sh), asio::detached);
    ioc.run();
    result.elapsed_s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return result;
}

double percentile(std::vector<double> values, double p) {
    if (values.empty()) return 0;
    std::sort(values.begin(), values.end());
    auto rank = static_cast<std::size_t>(std::ceil(p / 100.0 * static_cast<double>(values.size())));
    return values[std::min(values.size() - 1, rank == 0 ? 0 : rank - 1)];
}

}  // namespace crcrd
