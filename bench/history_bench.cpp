// The operator's surface at a million runs (issue 14): a generator fills a database the
// daemon's own migrations made with N runs (3 jobs each, a delivery each, two statuses each,
// the failing tests of failing jobs, JSON of realistic sizes); then the real crcrd serves it
// while a second thread ingests signed deliveries, and this measures p50/p99/max of
//   a filtered runs page (a class and an event, at a random cursor), a run's detail, the
//   dashboard's run page and a /metrics scrape,
// and trunk health's pages (issue 34): the trunk grid (API and page), a test's history (API
// and page), the flaky tests (100 of them), the daily stats and the trends page, with the
// daily roll-ups made from the generated history as store::rebuild_daily makes them;
// with the database's size and the daemon's RSS. The peer in the same run is nginx serving
// the same bodies as static files: the HTTP floor of this machine.
// Usage: bench_history [runs=1000000] [samples=500] [ingest_per_s=20] [--keep DIR]
#include <nlohmann/json.hpp>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "crcrd/core/crypto.hpp"
#include "crcrd/http/client.hpp"
#include "crcrd/store/daily.hpp"
#include "crcrd/store/schema.hpp"
#include "crcrd/store/sqlite.hpp"
#include "support/daemon.hpp"
#include "support/load.hpp"

using namespace crcrd;
using nlohmann::json;

namespace {

std::string sha_of(std::uint64_t n) {
    char buf[41];
    std::snprintf(buf, sizeof buf, "%040llx", static_cast<unsigned long long>(n));
    return buf;
}

std::string time_of(std::int64_t minute) {
    // Runs spread over the last year, one every ~30 s.
    std::time_t t = 1764547200 + minute * 30;  // 2025-12-01
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S.000Z", std::gmtime(&t));
    return buf;
}

/// Fills `path` (made by the daemon's migrations) with `runs` finished runs.
void generate(const std::filesystem::path& path, std::int64_t runs) {
    auto opened = store::Db::open(path);
    if (!opened || !store::migrate(**opened))
        throw std::runtime_error("cannot create " + path.string());
    auto& db = **opened;
    db.exec("PRAGMA synchronous = OFF");
    std::mt19937_64 rng(7);
    const char* tiers[] = {"import", "smoke", "affected"};
    const std::string selection =
        json{{"source", "payload"},
             {"changed_paths", 14},
             {"rules",
              {{{"name", "dispatch"},
                {"paths",
                 {"aten/src/ATen/native/BinaryOps.cpp", "aten/src/ATen/native/cuda/Loss.cu"}}},
               {{"name", "compile"},
                {"paths", {"torch/_inductor/ir.py", "torch/_inductor/lowering.py"}}}}},
             {"tiers",
              {{{"name", "import"}, {"reason", "always"}},
               {{"name", "smoke"}, {"reason", "always"}},
               {{"name", "affected"}, {"reason", "rules matched: dispatch, compile"}}}}}
            .dump();
    auto run = db.prepare(
        "INSERT INTO runs (event, sha, pr, ref, base_ref, base_sha, delivery_id, state, "
        "conclusion, reason, created_at, "
        "finished_at, selection, concurrency_group) VALUES (?, ?, ?, ?, 'main', ?, ?, 'completed', "
        "?, ?, ?, ?, ?, ?)");
    auto job = db.prepare(
        "INSERT INTO jobs (run_id, tier, position, attempt, state, conclusion, reason, slot, "
        "tests, timeout_ms, exit_status, "
        "metadata, created_at, started_at, finished_at, log_path, counts, evidence) VALUES "
        "(?, ?, ?, 1, 'completed', ?, ?, 'spyre-0', ?, 1800000, ?, ?, ?, ?, ?, ?, ?, ?)");
    auto delivery = db.prepare(
        "INSERT INTO deliveries (delivery_id, received_at, scheme, event, verdict, http_status, "
        "reason, run_id, remote, body, "
        "body_size) VALUES (?, ?, 'standard-webhooks', 'pytorch-crcr', 'queued', 202, 'queued', ?, "
        "'10.0.0.7', ?, 2400)");
    auto outbox = db.prepare(
        "INSERT INTO outbox (sink, run_id, sha, context, state, description, target_url, delivery, "
        "attempts, http_status, "
        "created_at, sent_at) VALUES ('github', ?, ?, ?, ?, ?, ?, 'sent', 1, 201, ?, ?)");
    auto test = db.prepare(
        "INSERT INTO test_results (job_id, name, outcome, duration_s, message) VALUES (?, ?, "
        "'failed', 1.25, ?)");
    // 5 % of the passing runs' smoke jobs pass a test only on its rerun, one of 100 flaky
    // tests, some far flakier than others (trunk health's flaky list and a test's history,
    // issue 34): each has hundreds of results at a million runs, more than its history reads.
    auto flaky = db.prepare(
        "INSERT INTO test_results (job_id, name, outcome, duration_s, message) VALUES (?, ?, "
        "'flaky', 0.5, NULL)");
    const std::string blob(600, 'z');  // a compressed body's size
    db.exec("BEGIN");
    for (std::int64_t i = 1; i <= runs; ++i) {
        const bool push = i % 10 == 0;
        const bool failing = rng() % 20 == 0;
        const std::string sha = sha_of(static_cast<std::uint64_t>(i) * 7919);
        const std::string created = time_of(i), finished = time_of(i + 40);
        const std::string conclusion = failing ? "regression" : "passed";
        run.reset();
        run.bind(1, std::string(push ? "push" : "pull_request"))
            .bind(2, sha)
            .bind(3, push ? std::optional<std::int64_t>()
                          : std::optional<std::int64_t>(100000 + i % 5000))
            .bind(4, std::string(push ? "refs/heads/main"
                                      : "refs/pull/" + std::to_string(100000 + i % 5000) + "/head"))
            .bind(5, sha_of(static_cast<std::uint64_t>(i / 10 * 10) * 7919))
            .bind(6, crypto::random_uuid())
            .bind(7, conclusion)
            .bind(8, std::string(failing ? "affected: 2 of 212 tests failed, again on rerun"
                                         : "every selected tier passed"))
            .bind(9, created)
            .bind(10, finished)
            .bind(11, selection)
            .bind(12, std::string(push ? "branch:refs/heads/main"
                                       : "pr:" + std::to_string(100000 + i % 5000)));
        run.step();
        const std::int64_t run_id = db.last_insert_rowid();
        for (int t = 0; t < 3; ++t) {
            const bool failed = failing && t == 2;
            json meta = {{"pytorch_sha", sha},
                         {"backend_sha", sha_of(42)},
                         {"driver_version", "1.4.2-spyre"},
                         {"device_model", "IBM Spyre"},
                         {"slot", "spyre-0"},
                         {"isolation", "bwrap"},
                         {"tests", {"test/test_ops.py", "test/inductor/test_torchinductor.py"}}};
            json counts = {{"passed", failed ? 210 : 212},
                           {"failed", failed ? 2 : 0},
                           {"skipped", 4},
                           {"flaky", 0}};
            json evidence = {{"exit_status", failed ? 1 : 0},
                             {"tests_total", 216},
                             {"failed_tests", failed ? json{"test_ops.py::TestX::test_a",
                                                            "test_ops.py::TestX::test_b"}
                                                     : json::array()}};
            job.reset();
            job.bind(1, run_id)
                .bind(2, std::string(tiers[t]))
                .bind(3, std::int64_t{t})
                .bind(4, std::string(failed ? "regression" : "passed"))
                .bind(5, std::string(failed ? "2 of 212 tests failed, again on rerun"
                                            : "212 tests passed"))
                .bind(6, meta["tests"].dump())
                .bind(7, std::int64_t{failed ? 1 : 0})
                .bind(8, meta.dump())
                .bind(9, created)
                .bind(10, created)
                .bind(11, finished)
                .bind(12, "/var/lib/crcrd/logs/" + std::to_string(run_id) + "-" + tiers[t] + ".log")
                .bind(13, counts.dump())
                .bind(14, evidence.dump());
            job.step();
            if (!failing && t == 1 && i % 20 == 3) {
                // Test k: half the flaky results spread evenly (each test has more than the
                // 200 results its history reads), half falling with k (k = 0 the flakiest).
                const auto k = rng() % 2 == 0 ? rng() % 100 : rng() % 100 * (rng() % 100) / 100;
                char name[96];
                std::snprintf(name, sizeof name,
                              "test/inductor/test_torchinductor.py::CpuTests::test_flaky_%02llu",
                              static_cast<unsigned long long>(k));
                flaky.reset();
                flaky.bind(1, db.last_insert_rowid()).bind(2, std::string(name));
                flaky.step();
            }
            if (failed) {
                const std::int64_t job_id = db.last_insert_rowid();
                for (const char* name :
                     {"test_ops.py::TestX::test_a", "test_ops.py::TestX::test_b"}) {
                    test.reset();
                    test.bind(1, job_id)
                        .bind(2, std::string(name))
                        .bind(3, std::string("AssertionError: Tensor-likes are not close!"));
                    test.step();
                }
            }
        }
        delivery.reset();
        delivery.bind(1, crypto::random_uuid()).bind(2, created).bind(3, run_id).bind(4, blob);
        delivery.step();
        for (const char* context : {"crcr/spyre", "crcr/spyre/affected"}) {
            outbox.reset();
            outbox.bind(1, run_id)
                .bind(2, sha)
                .bind(3, std::string(context))
                .bind(4, std::string(failing ? "failure" : "success"))
                .bind(5,
                      std::string(failing ? "affected: 2 of 212 tests failed" : "212 tests passed"))
                .bind(6, "https://ci.example/ui/runs/" + std::to_string(run_id))
                .bind(7, finished)
                .bind(8, finished);
            outbox.step();
        }
        if (i % 50000 == 0) {
            db.exec("COMMIT");
            db.exec("BEGIN");
        }
    }
    // What the writer would have drained and the followups of trunk regressions: this history
    // is finished and reported.
    db.exec("DELETE FROM status_dirty");
    db.exec("DELETE FROM followups");
    db.exec("COMMIT");
    // The rows were inserted finished, past the triggers: the roll-ups as migration 20 makes
    // them from a history.
    const auto t0 = std::chrono::steady_clock::now();
    db.exec("BEGIN");
    store::rebuild_daily(db);
    db.exec("COMMIT");
    std::printf("daily roll-ups rebuilt in %.1f s\n",
                std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
}

struct Figures {
    double p50, p99, max;
    std::size_t bytes;
    std::string body;  // the last answer, for the peer to serve as a static file
};

Figures measure(const std::function<std::string(std::size_t)>& url_of, std::size_t samples,
                const http::Headers& headers) {
    std::vector<double> ms;
    std::size_t bytes = 0;
    std::string last;
    for (std::size_t i = 0; i < samples; ++i) {
        const std::string url = url_of(i);
        auto t0 = std::chrono::steady_clock::now();
        auto r = http::send("GET", url, headers, "", {});
        ms.push_back(
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
                .count());
        if (!r || r->status != 200) {
            std::cerr << "GET " << url << ": "
                      << (r ? std::to_string(r->status) + " " + r->body.substr(0, 300)
                            : r.error().message)
                      << "\n";
            std::exit(1);
        }
        bytes = r->body.size();
        if (i + 1 == samples) last = r->body;
    }
    return {percentile(ms, 50), percentile(ms, 99), percentile(ms, 100), bytes, last};
}

/// A loopback port nothing listens on now.
std::uint16_t free_port() {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
    socklen_t len = sizeof a;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    ::close(fd);
    return ntohs(a.sin_port);
}

std::int64_t rss_kib(pid_t pid, const char* field) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/status");
    std::string line;
    while (std::getline(in, line))
        if (line.rfind(field, 0) == 0) return std::stoll(line.substr(std::strlen(field)));
    return -1;
}

}  // namespace

int main(int argc, char** argv) {
    const std::int64_t runs = argc > 1 ? std::atoll(argv[1]) : 1'000'000;
    const std::size_t samples = argc > 2 ? std::stoul(argv[2]) : 500;
    const int ingest_per_s = argc > 3 ? std::atoi(argv[3]) : 20;
    std::filesystem::path keep = argc > 5 && std::string(argv[4]) == "--keep" ? argv[5] : "";
    const auto dir = keep.empty() ? std::filesystem::temp_directory_path() /
                                        ("crcrd-bench-history-" + std::to_string(::getpid()))
                                  : keep;
    std::filesystem::create_directories(dir);

    const std::string token = "bench-read-token";
    TestDaemon daemon(
        dir,
        "admin: {tokens: [{name: bench, role: read, sha256: " + crypto::sha256_hex(token) + "}]}\n",
        false);
    std::filesystem::create_directories(daemon.db_path().parent_path());
    if (!std::filesystem::exists(daemon.db_path())) {
        auto t0 = std::chrono::steady_clock::now();
        generate(daemon.db_path(), runs);
        std::printf("generated %lld runs in %.0f s\n", static_cast<long long>(runs),
                    std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    const auto db_bytes = std::filesystem::file_size(daemon.db_path());
    daemon.start();
    const pid_t pid = daemon.process().pid();
    const std::int64_t rss_start = rss_kib(pid, "VmRSS:");

    // Deliveries arriving while the reads are measured.
    std::atomic<bool> stop{false};
    std::atomic<int> ingested{0};
    std::thread ingest([&] {
        const std::string tmpl = fixture_text("crcr/direct-pytorch-crcr.json");
        // Unique per bench run too: a kept database has the earlier runs' deliveries.
        const std::string tag = crypto::random_uuid().substr(0, 8);
        const std::uint64_t base = std::hash<std::string>{}(tag) % 1'000'000'000ull * 1000;
        for (int i = 0; !stop; ++i) {
            json j = json::parse(tmpl);
            j["client_payload"]["upstream_sha"] = sha_of(base + static_cast<unsigned>(i));
            j["client_payload"]["pr_number"] = 900000 + i;
            auto r = daemon.post_standard(j.dump(), "bench-" + tag + "-" + std::to_string(i));
            if (r && r->status == 202) ++ingested;
            std::this_thread::sleep_for(
                std::chrono::milliseconds(1000 / std::max(1, ingest_per_s)));
        }
    });

    const http::Headers auth = {{"Authorization", "Bearer " + token}};
    std::mt19937_64 rng(11);
    auto random_run = [&] {
        return std::to_string(1 +
                              static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(runs)));
    };
    const std::string base = daemon.url("");
    struct Row {
        const char* what;
        Figures f;
    };
    std::vector<Row> rows;
    rows.push_back(
        {"runs page (conclusion=regression&event=pull_request, random cursor)",
         measure(
             [&](std::size_t) {
                 return base +
                        "/api/v1/runs?conclusion=regression&event=pull_request&limit=50&cursor=" +
                        crypto::base64url_encode("id<" + random_run());
             },
             samples, auth)});
    rows.push_back(
        {"runs page (no filter, newest)",
         measure([&](std::size_t) { return base + "/api/v1/runs?limit=50"; }, samples, auth)});
    rows.push_back({"run detail /api/v1/runs/{id}",
                    measure([&](std::size_t) { return base + "/api/v1/runs/" + random_run(); },
                            samples, auth)});
    rows.push_back(
        {"dashboard run page /ui/runs/{id}",
         measure([&](std::size_t) { return base + "/ui/runs/" + random_run(); }, samples, auth)});
    rows.push_back({"dashboard runs list /ui/runs",
                    measure([&](std::size_t) { return base + "/ui/runs"; }, samples, auth)});
    // Trunk health (issue 34).
    const std::string test_a = "test_ops.py%3A%3ATestX%3A%3Atest_a";
    rows.push_back({"trunk grid /api/v1/trunk (50 push runs)",
                    measure([&](std::size_t) { return base + "/api/v1/trunk"; }, samples, auth)});
    rows.push_back({"dashboard trunk grid /ui/trunk",
                    measure([&](std::size_t) { return base + "/ui/trunk"; }, samples, auth)});
    rows.push_back(
        {"a test's history /api/v1/tests/{name}/history (50 of its runs)",
         measure([&](std::size_t) { return base + "/api/v1/tests/" + test_a + "/history"; },
                 samples, auth)});
    rows.push_back(
        {"dashboard test page /ui/tests/{name}",
         measure([&](std::size_t) { return base + "/ui/tests/" + test_a; }, samples, auth)});
    rows.push_back(
        {"flaky tests /api/v1/tests?flaky=1",
         measure([&](std::size_t) { return base + "/api/v1/tests?flaky=1"; }, samples, auth)});
    rows.push_back(
        {"dashboard flaky tests /ui/tests?flaky=1",
         measure([&](std::size_t) { return base + "/ui/tests?flaky=1"; }, samples, auth)});
    rows.push_back(
        {"daily stats /api/v1/stats/daily (30 days)",
         measure([&](std::size_t) { return base + "/api/v1/stats/daily"; }, samples, auth)});
    rows.push_back({"dashboard trends /ui/trends (30 days)",
                    measure([&](std::size_t) { return base + "/ui/trends"; }, samples, auth)});
    rows.push_back({"daily stats over a year /api/v1/stats/daily?days=366",
                    measure([&](std::size_t) { return base + "/api/v1/stats/daily?days=366"; },
                            samples, auth)});
    rows.push_back(
        {"/metrics", measure([&](std::size_t) { return base + "/metrics"; }, samples, auth)});
    stop = true;
    ingest.join();
    const std::int64_t rss_end = rss_kib(pid, "VmRSS:"), hwm = rss_kib(pid, "VmHWM:");

    std::printf(
        "crcrd over %lld runs (database %.0f MiB), %zu samples each, %d deliveries ingested "
        "meanwhile:\n",
        static_cast<long long>(runs), static_cast<double>(db_bytes) / (1 << 20), samples,
        ingested.load());
    std::printf("%-72s %8s %8s %8s %9s\n", "request", "p50 ms", "p99 ms", "max ms", "bytes");
    for (const auto& r : rows)
        std::printf("%-72s %8.2f %8.2f %8.2f %9zu\n", r.what, r.f.p50, r.f.p99, r.f.max, r.f.bytes);
    // The peer: nginx serving each request's last answer as a static file, over the same
    // plain-HTTP loopback, one connection per request: the HTTP floor of this machine.
    const auto www = dir / "nginx";
    std::filesystem::create_directories(www / "logs");
    const std::uint16_t nport = free_port();
    {
        std::ofstream(www / "nginx.conf")
            << "worker_processes 1;\npid " << (www / "nginx.pid").string() << ";\nerror_log "
            << (www / "logs/error.log").string()
            << " warn;\nevents {}\nhttp {\n  access_log off;\n  server {\n    listen 127.0.0.1:"
            << nport << ";\n    root " << www.string() << ";\n  }\n}\n";
    }
    for (std::size_t i = 0; i < rows.size(); ++i)
        std::ofstream(www / ("r" + std::to_string(i))) << rows[i].f.body;
    Process nginx(
        {"nginx", "-p", www.string(), "-c", (www / "nginx.conf").string(), "-g", "daemon off;"},
        www / "logs/out.log");
    eventually(
        [&] {
            return static_cast<bool>(
                http::send("GET", "http://127.0.0.1:" + std::to_string(nport) + "/r0", {}, "", {}));
        },
        std::chrono::seconds(10));
    std::printf("peer: nginx %s serving the same bodies as static files\n", "(Debian nginx-light)");
    for (std::size_t i = 0; i < rows.size(); ++i) {
        Figures f = measure(
            [&](std::size_t) {
                return "http://127.0.0.1:" + std::to_string(nport) + "/r" + std::to_string(i);
            },
            samples, {});
        std::printf("%-72s %8.2f %8.2f %8.2f %9zu\n",
                    (std::string("  nginx: ") + rows[i].what).c_str(), f.p50, f.p99, f.max,
                    f.bytes);
    }
    std::printf("RSS: %lld KiB at start, %lld KiB at the end, peak %lld KiB\n",
                static_cast<long long>(rss_start), static_cast<long long>(rss_end),
                static_cast<long long>(hwm));
    // A graceful stop: the master's SIGKILL (the Process's destructor) would leave its worker
    // running.
    nginx.signal(SIGQUIT);
    nginx.wait_for(std::chrono::seconds(10));
    daemon.stop();
    if (keep.empty()) std::filesystem::remove_all(dir);
    return 0;
}
