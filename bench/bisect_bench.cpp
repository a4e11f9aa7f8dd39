// Bisection over a range of 1,000 commits (docs/verdicts.md, "Bisection of trunk regressions"):
// how many runs a bisection needs (bound: ⌈log2 N⌉ + 1 with the bad run) and the planner's time
// per step, through the daemon's own code (sched::Followups on a real SQLite file and a real git
// mirror); the bench plays the test results (a commit at or after the culprit fails). Beside it,
// in the same run, the peer: `git bisect run` on a clone of the same history with a test that
// asks the same question.
// Usage: bench_bisect [commits] [culprits] [filler_runs].
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <unistd.h>

#include <spdlog/spdlog.h>

#include "crcrd/core/subprocess.hpp"
#include "crcrd/sched/followups.hpp"
#include "crcrd/store/sqlite.hpp"
#include "crcrd/store/writer.hpp"

using namespace crcrd;
using Clock = std::chrono::steady_clock;

namespace {

double ms_since(Clock::time_point t0) {
    return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

std::string sh(const std::string& cmd) {
    auto r = run_subprocess({"/bin/sh", "-c", cmd});
    if (!r || r->exit_code != 0) {
        std::fprintf(stderr, "failed: %s\n%s\n", cmd.c_str(), r ? r->err.c_str() : "");
        std::exit(1);
    }
    return r->out;
}

/// A linear history of `n` commits, each adding a file, written with git fast-import.
std::vector<std::string> make_history(const std::filesystem::path& repo, std::size_t n) {
    sh("git init --quiet -b main " + repo.string());
    std::ofstream in(repo / "import.txt");
    for (std::size_t i = 0; i < n; ++i) {
        const std::string body = std::to_string(i) + "\n";
        in << "commit refs/heads/main\nmark :" << i + 1 << "\ncommitter bench <bench@example.org> "
           << 1'700'000'000 + i << " +0000\ndata " << ("commit " + std::to_string(i)).size()
           << "\ncommit " << i << "\n";
        if (i > 0) in << "from :" << i << "\n";
        in << "M 100644 inline c" << i << ".txt\ndata " << body.size() << "\n" << body << "\n";
    }
    in.close();
    sh("cd " + repo.string() +
       " && git fast-import --quiet < import.txt && git checkout --quiet main");
    std::vector<std::string> shas;
    std::string out = sh("git -C " + repo.string() + " rev-list --reverse main");
    for (std::size_t s = 0; s + 40 <= out.size(); s += 41) shas.push_back(out.substr(s, 40));
    return shas;
}

struct Result1 {
    std::size_t runs = 0;
    bool found = false;
    double first_ms = 0;          // the range from the mirror and the first run queued
    std::vector<double> step_ms;  // every later step: a result in, the next run queued
};

}  // namespace

int main(int argc, char** argv) {
    const std::size_t commits = argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 1000;
    const std::size_t culprits = argc > 2 ? std::strtoul(argv[2], nullptr, 10) : 20;
    const int filler = argc > 3 ? std::atoi(argv[3]) : 10'000;
    spdlog::set_level(spdlog::level::warn);  // one line per bisect run otherwise
    const auto dir = std::filesystem::temp_directory_path() /
                     ("crcrd-bench-bisect-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    // commits + 1: the good commit, then `commits` commits up to the bad one.
    const auto shas = make_history(dir / "upstream", commits + 1);
    const std::string good = shas.front(), bad = shas.back();

    auto writer = store::open_writer(dir / "bench.db", 5000, {});
    if (!writer) return 1;
    auto& w = **writer;
    // Filler: push runs of other branches, so the queries walk a database that is not empty.
    (void)w.run_sync([&](store::Db& db) {
        auto& st = db.cached(
            "INSERT INTO runs (event, sha, ref, state, conclusion, created_at, finished_at) "
            "VALUES ('push', ?, 'refs/heads/other', 'completed', 'passed', "
            "'2026-11-30T00:00:00.000Z', "
            "'2026-11-30T00:00:00.000Z')");
        for (int i = 0; i < filler; ++i) {
            char sha[41];
            std::snprintf(sha, sizeof sha, "%040x", i + 1);
            st.bind(1, std::string(sha));
            st.run();
            st.reset();
        }
    });

    select::Rules rules;
    select::SourceSettings sources;
    sources.upstream.mirror = dir / "mirror.git";
    sources.upstream.remote = (dir / "upstream").string();
    config::BisectConfig cfg;
    cfg.max_runs = 64;
    sched::FollowupContext ctx{w, dir / "bench.db", rules, sources, cfg};

    std::mt19937 rng(13);
    std::vector<std::size_t> positions;
    for (std::size_t i = 0; i < culprits; ++i)
        positions.push_back(1 + rng() % commits);  // index in shas
    positions.front() = 1;
    positions.back() = commits;

    std::vector<Result1> results;
    for (auto culprit : positions) {
        Result1 r;
        sched::Followups followups;
        std::int64_t bad_run = 0;
        (void)w.run_sync([&](store::Db& db) {
            auto run = [&](const std::string& sha, const char* conclusion) {
                auto& st = db.cached(
                    "INSERT INTO runs (event, sha, ref, state, created_at) "
                    "VALUES ('push', ?, 'refs/heads/main', 'running', '2026-12-01T00:00:00.000Z')");
                st.bind(1, sha);
                st.run();
                st.reset();
                auto id = db.last_insert_rowid();
                auto& job = db.cached(
                    "INSERT INTO jobs (run_id, tier, position, state, conclusion, timeout_ms, "
                    "tests, "
                    "created_at) VALUES (?, 't', 0, 'completed', ?, 60000, '[\"x\"]', "
                    "'2026-12-01T00:00:00.000Z')");
                job.bind(1, id).bind(2, std::string(conclusion));
                job.run();
                job.reset();
                auto jid = db.last_insert_rowid();
                auto& t = db.cached(
                    "INSERT INTO test_results (job_id, name, outcome) VALUES (?, 'ci::x', ?)");
                t.bind(1, jid).bind(2, std::string(conclusion) == "passed" ? "passed" : "failed");
                t.run();
                t.reset();
                auto& done = db.cached(
                    "UPDATE runs SET state = 'completed', conclusion = ?, "
                    "finished_at = '2026-12-01T00:00:00.000Z' WHERE id = ?");
                done.bind(1, std::string(conclusion)).bind(2, id);
                done.run();
                done.reset();
                return id;
            };
            run(good, "passed");
            bad_run = run(bad, "regression");
        });
        auto t0 = Clock::now();
        followups.handle(ctx);
        r.first_ms = ms_since(t0);
        for (;;) {
            // The queued bisect run ends as the culprit says.
            std::int64_t run = 0;
            std::string sha;
            (void)w.run_sync([&](store::Db& db) {
                auto& st = db.cached(
                    "SELECT r.id, r.sha FROM runs r JOIN bisections b ON b.id = r.bisection_id "
                    "WHERE b.bad_run_id = ? AND r.state = 'queued'");
                st.bind(1, bad_run);
                if (st.step()) {
                    run = st.int64(0);
                    sha = st.text(1);
                }
                st.reset();
                if (!run) return;
                const auto index = static_cast<std::size_t>(
                    std::find(shas.begin(), shas.end(), sha) - shas.begin());
                auto& done = db.cached(
                    "UPDATE runs SET state = 'completed', conclusion = ?, "
                    "finished_at = '2026-12-01T00:00:00.000Z' WHERE id = ?");
                done.bind(1, std::string(index >= culprit ? "regression" : "passed")).bind(2, run);
                done.run();
                done.reset();
            });
            if (!run) break;
            ++r.runs;
            auto t1 = Clock::now();
            followups.handle(ctx);
            r.step_ms.push_back(ms_since(t1));
        }
        (void)w.run_sync([&](store::Db& db) {
            auto& st = db.cached("SELECT culprit FROM bisections WHERE bad_run_id = ?");
            st.bind(1, bad_run);
            r.found = st.step() && st.text(0) == shas[culprit];
            st.reset();
        });
        results.push_back(std::move(r));
    }

    // The peer: git bisect run on a clone, the same question asked by a shell test.
    std::vector<double> git_per_step;
    std::size_t git_steps_max = 0;
    for (auto culprit : positions) {
        const auto clone = dir / "peer";
        std::filesystem::remove_all(clone);
        sh("git clone --quiet " + (dir / "upstream").string() + " " + clone.string());
        const std::string test =
            "n=$(git rev-list --count HEAD); [ \"$n\" -le " + std::to_string(culprit) + " ]";
        auto t0 = Clock::now();
        std::string out = sh("cd " + clone.string() + " && git bisect start --first-parent " + bad +
                             " " + good + " >/dev/null && git bisect run sh -c '" + test +
                             "' 2>&1; git bisect reset >/dev/null 2>&1");
        const double ms = ms_since(t0);
        std::size_t steps = 0;
        for (std::size_t p = out.find("running"); p != std::string::npos;
             p = out.find("running", p + 1))
            ++steps;
        git_steps_max = std::max(git_steps_max, steps);
        if (steps) git_per_step.push_back(ms / static_cast<double>(steps));
    }

    std::vector<double> steps, firsts;
    std::size_t max_runs = 0, found = 0;
    for (const auto& r : results) {
        steps.insert(steps.end(), r.step_ms.begin(), r.step_ms.end());
        firsts.push_back(r.first_ms);
        max_runs = std::max(max_runs, r.runs);
        found += r.found ? 1 : 0;
    }
    std::sort(steps.begin(), steps.end());
    std::sort(firsts.begin(), firsts.end());
    std::sort(git_per_step.begin(), git_per_step.end());
    auto pct = [](const std::vector<double>& v, double p) {
        return v.empty() ? 0.0 : v[static_cast<std::size_t>(p * (v.size() - 1))];
    };
    const auto bound = static_cast<std::size_t>(std::ceil(std::log2(static_cast<double>(commits))));
    std::printf("bisection over %zu commits, %zu culprit positions, %d filler runs\n", commits,
                positions.size(), filler);
    std::printf(
        "crcrd: culprit found %zu/%zu; bisect runs max %zu (bound ceil(log2 N) = %zu, + the bad "
        "run = %zu)\n",
        found, positions.size(), max_runs, bound, bound + 1);
    std::printf(
        "crcrd: first step (range from the mirror + first run queued) p50 %.1f ms, max %.1f ms\n",
        pct(firsts, 0.5), firsts.empty() ? 0.0 : firsts.back());
    std::printf(
        "crcrd: later steps (result in, next run queued) p50 %.2f ms, p99 %.2f ms, max %.2f ms "
        "(%zu steps)\n",
        pct(steps, 0.5), pct(steps, 0.99), steps.empty() ? 0.0 : steps.back(), steps.size());
    std::printf(
        "git bisect run: steps max %zu; per step (checkout + test) p50 %.1f ms, max %.1f ms\n",
        git_steps_max, pct(git_per_step, 0.5), git_per_step.empty() ? 0.0 : git_per_step.back());
    std::filesystem::remove_all(dir);
    return found == positions.size() && max_runs <= bound ? 0 : 1;
}
