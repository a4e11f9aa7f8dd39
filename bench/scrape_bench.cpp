// The database side of a /metrics scrape (issue 32) at 0, 1,000, 10,000 and 100,000 waiting
// outbox rows: store::read_gauges(path) as admin::Metrics::text calls it (a read-only
// connection opened for the scrape, the gauges read, the connection closed) against, as the
// peer in the same run, the same connection and gauges read as before schema 15: the outbox's
// rows counted at every scrape through outbox_by_delivery (waiting, dead, waiting answered
// 401/403 per sink, min(created_at) of the waiting ones). One real SQLite file, made by the
// daemon's migrations, holds a history of sent and dead statuses; the waiting rows are
// inserted through the schema's triggers as the writer would. At each level: `samples` of each
// in alternated blocks of a quarter, then samples/2 of read_gauges each right after a counting
// scrape (whose scan evicts the CPU's caches). Not through HTTP: the rest of a scrape (TLS,
// the counters' text) does not depend on the outbox.
// Usage: bench_scrape [samples=1000] [sent=100000] [dead=2000]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <unistd.h>

#include "crcrd/store/metrics.hpp"
#include "crcrd/store/schema.hpp"
#include "crcrd/store/sqlite.hpp"

using namespace crcrd;

namespace {

/// The outbox's gauges as read_gauges() read them before schema 15, on `db`.
struct CountedGauges {
    std::int64_t waiting = 0, dead = 0, rejected = 0;
    std::optional<std::string> oldest;
};

std::int64_t sum_of(store::Db& db, const char* sql) {
    auto st = db.prepare(sql);
    std::int64_t n = 0;
    while (st.step()) n += st.int64(1);
    return n;
}

CountedGauges counted_at_scrape(const std::filesystem::path& path) {
    auto opened = store::open_reader(path);
    if (!opened) throw std::runtime_error(opened.error().message);
    store::Db& db = **opened;
    CountedGauges g;
    g.waiting = sum_of(db,
                       "SELECT sink, count(*) FROM outbox INDEXED BY outbox_by_delivery WHERE "
                       "delivery = 'waiting' GROUP BY sink");
    g.dead = sum_of(db,
                    "SELECT sink, count(*) FROM outbox INDEXED BY outbox_by_delivery WHERE "
                    "delivery = 'dead' GROUP BY sink");
    g.rejected = sum_of(db,
                        "SELECT sink, count(*) FROM outbox INDEXED BY outbox_by_delivery WHERE "
                        "delivery = 'waiting' AND http_status IN (401, 403) GROUP BY sink");
    auto oldest = db.prepare(
        "SELECT min(created_at) FROM outbox INDEXED BY outbox_by_delivery WHERE delivery = "
        "'waiting'");
    if (oldest.step()) g.oldest = oldest.opt_text(0);
    return g;
}

CountedGauges kept(const std::filesystem::path& path) {
    auto g = store::read_gauges(path);
    if (!g) throw std::runtime_error(g.error().message);
    CountedGauges out;
    for (const auto& c : g->outbox_waiting) out.waiting += c.value;
    for (const auto& c : g->outbox_dead) out.dead += c.value;
    for (const auto& c : g->outbox_credentials_rejected) out.rejected += c.value;
    out.oldest = g->oldest_waiting_created_at;
    return out;
}

std::string time_of(std::int64_t second) {
    std::time_t t = 1764547200 + second;  // 2025-12-01
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S.000Z", std::gmtime(&t));
    return buf;
}

/// Appends `n` outbox rows in `delivery` to `db`, one run each: mostly GitHub statuses, one in
/// ten a callback, one in ten a report-file line; one waiting row in twenty last answered 403.
void add_rows(store::Db& db, std::int64_t n, const std::string& delivery, std::int64_t& serial) {
    auto run = db.prepare(
        "INSERT INTO runs (event, sha, state, conclusion, created_at, finished_at) VALUES "
        "('pull_request', ?, 'completed', 'passed', ?, ?)");
    auto row = db.prepare(
        "INSERT INTO outbox (sink, run_id, sha, context, state, description, target_url, "
        "delivery, attempts, http_status, created_at, sent_at) VALUES (?, ?, ?, 'crcr/spyre', "
        "'success', '212 tests passed', 'https://ci.example/ui/runs/1', ?, ?, ?, ?, ?)");
    db.exec("BEGIN");
    for (std::int64_t i = 0; i < n; ++i) {
        const std::int64_t k = ++serial;
        char sha[41];
        std::snprintf(sha, sizeof sha, "%040llx", static_cast<unsigned long long>(k * 7919));
        const std::string at = time_of(k);
        run.reset();
        run.bind(1, std::string(sha)).bind(2, at).bind(3, at);
        run.run();
        const char* sink = k % 10 == 0 ? "callback" : k % 10 == 5 ? "file" : "github";
        std::optional<std::int64_t> status;
        if (delivery == "sent") status = 201;
        if (delivery == "dead") status = 422;
        if (delivery == "waiting" && k % 20 == 3) status = 403;
        row.reset();
        row.bind(1, sink)
            .bind(2, db.last_insert_rowid())
            .bind(3, std::string(sha))
            .bind(4, delivery)
            .bind(5, std::int64_t{delivery == "waiting" ? 0 : 1})
            .bind(6, status)
            .bind(7, at)
            .bind(8, delivery == "sent" ? std::optional<std::string>(at) : std::nullopt);
        row.run();
    }
    db.exec("COMMIT");
    db.exec("DELETE FROM status_dirty");
    db.exec("PRAGMA wal_checkpoint(TRUNCATE)");
}

double ms_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

double quantile(std::vector<double> v, double q) {
    std::sort(v.begin(), v.end());
    return v[std::min(v.size() - 1, static_cast<std::size_t>(q * static_cast<double>(v.size())))];
}

}  // namespace

int main(int argc, char** argv) {
    const int samples = argc > 1 ? std::atoi(argv[1]) : 1000;
    const std::int64_t sent = argc > 2 ? std::atoll(argv[2]) : 100'000;
    const std::int64_t dead = argc > 3 ? std::atoll(argv[3]) : 2'000;
    const auto dir = std::filesystem::temp_directory_path() /
                     ("crcrd-bench-scrape-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    const auto path = dir / "crcrd.db";
    int status = 0;
    try {
        auto opened = store::Db::open(path);
        if (!opened || !store::migrate(**opened)) throw std::runtime_error("cannot create db");
        store::Db& db = **opened;
        db.exec("PRAGMA synchronous = OFF");
        std::int64_t serial = 0;
        add_rows(db, sent, "sent", serial);
        add_rows(db, dead, "dead", serial);
        std::printf("history: %lld sent, %lld dead statuses; %d scrapes of each kind\n",
                    static_cast<long long>(sent), static_cast<long long>(dead), samples);
        std::printf("%9s | %-22s | %-15s | %s\n", "waiting", "read_gauges p50/p99/max",
                    "after peer p50/p99", "counted at scrape p50/p99/max (ms)");
        std::int64_t waiting = 0;
        for (std::int64_t level : {0, 1'000, 10'000, 100'000}) {
            add_rows(db, level - waiting, "waiting", serial);
            waiting = level;
            const auto a = kept(path), b = counted_at_scrape(path);
            if (a.waiting != level || a.waiting != b.waiting || a.dead != b.dead ||
                a.rejected != b.rejected || a.oldest != b.oldest)
                throw std::runtime_error("the two reads disagree at " + std::to_string(level));
            // In blocks of a quarter, alternated, so that the machine's drift weighs on both;
            // then each read_gauges right after a counting scrape, whose scan of the index
            // evicts the CPU's caches (a real scrape comes every 15 s after other work).
            std::vector<double> now_ms, before_ms, after_ms;
            auto time = [](auto&& fn) {
                const auto t0 = std::chrono::steady_clock::now();
                fn();
                return ms_since(t0);
            };
            for (int block = 0; block < 4; ++block) {
                for (int pass = 0; pass < 2; ++pass) {
                    const bool now = (block + pass) % 2 == 0;
                    for (int i = 0; i < samples / 4; ++i) {
                        if (now)
                            now_ms.push_back(time([&] { kept(path); }));
                        else
                            before_ms.push_back(time([&] { counted_at_scrape(path); }));
                    }
                }
            }
            for (int i = 0; i < samples / 2; ++i) {
                counted_at_scrape(path);
                after_ms.push_back(time([&] { kept(path); }));
            }
            std::printf("%9lld | %6.3f / %6.3f / %6.3f | %6.3f / %6.3f | %7.3f / %7.3f / %7.3f\n",
                        static_cast<long long>(level), quantile(now_ms, 0.5),
                        quantile(now_ms, 0.99), quantile(now_ms, 1.0), quantile(after_ms, 0.5),
                        quantile(after_ms, 0.99), quantile(before_ms, 0.5),
                        quantile(before_ms, 0.99), quantile(before_ms, 1.0));
        }
    } catch (const std::exception& e) {
        std::fprintf(stderr, "bench_scrape: %s\n", e.what());
        status = 1;
    }
    std::filesystem::remove_all(dir);
    return status;
}
