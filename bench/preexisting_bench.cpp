// The pre-existing lookup (docs/verdicts.md, "Pre-existing failures") on a database of 100,000
// runs: how long JobsRepo::failed_on_base takes for a PR tier's failed tests, p50/p99, as the
// daemon runs it (no ANALYZE), with a handful of chronically failing tests on trunk; and, as the
// peer in the same run, the same database without the index runs_by_ref (schema 7).
// Usage: bench_preexisting [runs] [lookups].
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include <unistd.h>

#include "crcrd/store/jobs.hpp"
#include "crcrd/store/schema.hpp"
#include "crcrd/store/sqlite.hpp"

using namespace crcrd;

namespace {

std::string sha_of(std::uint64_t n) {
    char buf[41];
    std::snprintf(buf, sizeof buf, "%040llx", static_cast<unsigned long long>(n));
    return buf;
}

struct Figures {
    double p50, p99, max;
    std::size_t found;
};

Figures measure(store::Db& db,
                const std::vector<std::pair<std::int64_t, std::vector<std::string>>>& probes) {
    if (probes.empty()) return {0, 0, 0, 0};
    std::vector<double> ms;
    std::size_t found = 0;
    for (const auto& [job, tests] : probes) {
        auto t0 = std::chrono::steady_clock::now();
        found += store::JobsRepo(db)
                     .failed_on_base(job, tests, *parse_rfc3339("2026-11-30T00:00:00.000Z"))
                     .size();
        ms.push_back(
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
                .count());
    }
    std::sort(ms.begin(), ms.end());
    return {ms[ms.size() / 2], ms[ms.size() * 99 / 100], ms.back(), found};
}

}  // namespace

int main(int argc, char** argv) {
    const int runs = argc > 1 ? std::atoi(argv[1]) : 100'000;
    const int lookups = argc > 2 ? std::atoi(argv[2]) : 2'000;
    const auto dir = std::filesystem::temp_directory_path() /
                     ("crcrd-bench-preexisting-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    const auto path = dir / "bench.db";
    auto opened = store::Db::open(path);
    if (!opened) return 1;
    auto& db = **opened;
    if (!store::migrate(db)) return 1;

    // Trunk: a push every 10th run on main; PRs on the latest trunk SHA. 3 tiers per run, 20
    // tests per tier from a pool of 3,000 names, about 2% failing (more on some "broken" names).
    std::mt19937_64 rng(42);
    const auto t_fill = std::chrono::steady_clock::now();
    db.exec("BEGIN");
    auto run = db.prepare(
        "INSERT INTO runs (event, sha, pr, ref, base_ref, base_sha, state, conclusion, created_at, "
        "finished_at) "
        "VALUES (?, ?, ?, ?, ?, ?, 'completed', 'passed', ?, ?)");
    auto job = db.prepare(
        "INSERT INTO jobs (run_id, tier, position, attempt, state, conclusion, tests, timeout_ms, "
        "created_at, finished_at) "
        "VALUES (?, ?, ?, 1, 'completed', ?, '[]', 600000, ?, ?)");
    auto test = db.prepare(
        "INSERT INTO test_results (job_id, name, outcome, duration_s) VALUES (?, ?, ?, 0.5)");
    std::string trunk = sha_of(1);
    std::vector<std::pair<std::int64_t, std::vector<std::string>>> probes;
    const char* tiers[] = {"import", "smoke", "affected"};
    for (int i = 0; i < runs; ++i) {
        const bool push = i % 10 == 0;
        const std::string sha = sha_of(1000 + static_cast<std::uint64_t>(i));
        if (push) trunk = sha;
        const std::string at = "2026-11-" + std::string(i * 30 / runs < 9 ? "0" : "") +
                               std::to_string(1 + i * 30 / runs) + "T12:00:00.000Z";
        run.reset();
        run.bind(1, std::string(push ? "push" : "pull_request")).bind(2, sha);
        if (push) {
            run.bind(3, std::optional<std::int64_t>())
                .bind(4, std::string("refs/heads/main"))
                .bind(5, std::optional<std::string>())
                .bind(6, std::optional<std::string>());
        } else {
            run.bind(3, std::int64_t{i})
                .bind(4, "refs/pull/" + std::to_string(i) + "/head")
                .bind(5, std::string("main"))
                .bind(6, trunk);
        }
        run.bind(7, at).bind(8, at);
        run.step();
        const auto run_id = db.last_insert_rowid();
        for (int t = 0; t < 3; ++t) {
            std::vector<std::string> failed;
            std::vector<std::pair<std::string, bool>> results;
            for (int k = 0; k < 20; ++k) {
                const auto n = rng() % 3000;
                // Tests 0..29 are chronically broken: they fail in a quarter of all runs.
                const bool fail = (n < 30 && rng() % 4 == 0) || rng() % 100 < 1;
                results.emplace_back(
                    "test/test_" + std::to_string(n % 300) + ".py::T::t" + std::to_string(n), fail);
                if (fail) failed.push_back(results.back().first);
            }
            job.reset();
            job.bind(1, run_id)
                .bind(2, std::string(tiers[t]))
                .bind(3, std::int64_t{t})
                .bind(4, std::string(failed.empty() ? "passed" : "regression"))
                .bind(5, at)
                .bind(6, at);
            job.step();
            const auto job_id = db.last_insert_rowid();
            for (const auto& [name, fail] : results) {
                test.reset();
                test.bind(1, job_id).bind(2, name).bind(3, std::string(fail ? "failed" : "passed"));
                test.step();
            }
            if (!push && !failed.empty() && probes.size() < static_cast<std::size_t>(lookups) &&
                i > runs / 2) {
                probes.emplace_back(job_id, failed);
            }
        }
    }
    db.exec("COMMIT");
    const double fill_s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t_fill).count();
    const auto size_mib = static_cast<double>(std::filesystem::file_size(path)) / (1 << 20);

    const auto with_index = measure(db, probes);
    db.exec("DROP INDEX runs_by_ref");
    // Without the index, a lookup scans; a handful are enough to see how long.
    std::vector<std::pair<std::int64_t, std::vector<std::string>>> few(
        probes.begin(), probes.begin() + std::min<std::size_t>(probes.size(), 20));
    const auto without = measure(db, few);
    std::printf(
        "pre-existing lookup: %d runs (%d jobs, %d test results), database %.0f MiB, filled in "
        "%.1f s\n",
        runs, runs * 3, runs * 60, size_mib, fill_s);
    std::printf(
        "  with runs_by_ref:             %zu lookups, p50 %.3f ms, p99 %.3f ms, max %.3f ms, tests "
        "found on the base %zu\n",
        probes.size(), with_index.p50, with_index.p99, with_index.max, with_index.found);
    std::printf(
        "  without it (peer, same data): %zu lookups, p50 %.1f ms, p99 %.1f ms, max %.1f ms\n",
        few.size(), without.p50, without.p99, without.max);
    std::filesystem::remove_all(dir);
    return 0;
}
