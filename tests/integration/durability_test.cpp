// "Nothing acknowledged is ever lost": a burst of concurrent deliveries, the daemon killed
// with SIGKILL in the middle, then restarted.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <map>
#include <set>
#include <thread>

#include "crcrd/ingest/signature.hpp"
#include "support/certs.hpp"
#include "support/daemon.hpp"
#include "support/load.hpp"
#include "support/state.hpp"

namespace crcrd {
namespace {

using nlohmann::json;

void raise_fd_limit() {
    rlimit rl{};
    getrlimit(RLIMIT_NOFILE, &rl);
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
}

LoadRequest signed_delivery(const std::string& base, const std::string& crcr_id,
                            const std::string& transport_id) {
    json j = json::parse(base);
    j["client_payload"]["delivery_id"] = crcr_id;
    std::string body = j.dump();
    return LoadRequest{body,
                       {{"Content-Type", "application/json"},
                        {"X-GitHub-Event", "repository_dispatch"},
                        {"X-GitHub-Delivery", transport_id},
                        {"X-Hub-Signature-256", ingest::sign_github(k_test_secret, body)}}};
}

TEST(Durability, BurstWithKill9LosesNothingAcknowledged) {
    raise_fd_limit();
    TempDir dir;
    TestDaemon d(dir.path());
    // A thousand connections from one address at once: over the default per-address cap (64),
    // most would be refused, and the kill would come after a burst that never was.
    d.write_config("", "  max_connections_per_ip: 2048\n");
    d.start();
    const std::string base = fixture_text("crcr/pull_request-synchronize.dispatch.json");
    constexpr std::size_t k_n = 1000;

    LoadOptions o;
    o.port = d.port();
    o.ca_file = test_certs().ca;
    o.connections = k_n;  // every delivery on its own connection, all at once
    o.total = k_n;
    o.keep_alive = false;
    o.make = [&](std::size_t i) {
        return signed_delivery(base, "burst-" + std::to_string(i), "gh-" + std::to_string(i));
    };
    std::atomic<bool> killed{false};
    std::atomic<bool> mid_burst{false};
    std::thread killer([&] {
        mid_burst = eventually([&] { return count_runs(d) >= 100; }, std::chrono::seconds(120));
        d.kill9();
        killed = true;
    });
    LoadResult first = run_load(o);
    killer.join();
    ASSERT_TRUE(killed);
    ASSERT_TRUE(mid_burst) << "the burst never stored 100 runs; network errors: "
                           << first.network_errors;

    std::map<std::size_t, std::int64_t> acked;  // delivery index → run id
    for (std::size_t i = 0; i < k_n; ++i) {
        if (first.status[i] == 202)
            acked[i] = json::parse(first.body[i])["run_id"].get<std::int64_t>();
    }
    ASSERT_GE(acked.size(), 1u);
    ASSERT_LT(acked.size(), k_n) << "the kill came after the burst; the test proved nothing";

    d.start();
    for (const auto& [i, run] : acked) {
        ASSERT_EQ(count_runs(d, {.id = run, .delivery_id = "burst-" + std::to_string(i)}), 1)
            << "acknowledged delivery " << i << " (run " << run << ") is missing";
    }
    // No delivery id stored twice.
    std::map<std::string, int> runs_per_delivery;
    for (const auto& r : run_rows(d)) ++runs_per_delivery[r.delivery_id];
    EXPECT_EQ(std::count_if(runs_per_delivery.begin(), runs_per_delivery.end(),
                            [](const auto& entry) { return entry.second > 1; }),
              0);

    // The relay retries everything (new transport ids): acknowledged ones are duplicates of
    // their run, the rest are stored now, and every delivery ends up exactly once.
    o.port = d.port();  // the restarted daemon listens on a new ephemeral port
    o.connections = 32;
    o.keep_alive = true;
    o.make = [&](std::size_t i) {
        return signed_delivery(base, "burst-" + std::to_string(i), "retry-" + std::to_string(i));
    };
    LoadResult second = run_load(o);
    for (std::size_t i = 0; i < k_n; ++i) {
        ASSERT_TRUE(second.status[i] == 202 || second.status[i] == 200)
            << i << ": " << second.status[i];
        auto b = json::parse(second.body[i]);
        if (acked.count(i)) {
            EXPECT_EQ(b["status"], "duplicate") << i;
            EXPECT_EQ(b["run_id"], acked[i]) << i;
        }
    }
    EXPECT_EQ(count_runs(d), static_cast<std::int64_t>(k_n));
    std::set<std::string> delivery_ids;
    for (const auto& r : run_rows(d))
        if (!r.delivery_id.empty()) delivery_ids.insert(r.delivery_id);
    EXPECT_EQ(delivery_ids.size(), k_n);
    EXPECT_EQ(d.stop(), 0);
}

}  // namespace
}  // namespace crcrd
