// The Slurm executor's benchmark (docs/performance.md, "Slurm executor"): one real one-node
// Slurm cluster (tests/support/slurm_cluster.hpp, aiu:16 so that 16 one-aiu jobs fit at once),
// then, one after the other on it,
//   1. the peer: plain sbatch, a script that sleeps 1 s, at most WIDTH jobs in the queue (the
//      next submitted as soon as squeue shows one gone), and
//   2. crcrd: the real daemon with executor slurm, max_submitted WIDTH, one tier whose command
//      sleeps 1 s and writes JUnit, under the production isolation (bwrap), and RUNS runs
//      posted as fast as crcrd accepts them (one job each, each its own PR).
// Both report wall time, throughput, Slurm's own submit-to-start latency (SubmitTime and
// StartTime of the jobcomp file, whole seconds) and the same latencies at millisecond
// resolution: sbatch's return, the command's first and last line (it prints `date +%s.%N`),
// crcrd's job timestamps (created_at, started_at = sbatch returned, finished_at).
//
// usage: bench_slurm [--runs 500] [--width 16] [--poll-interval 1s] [--peer-poll-ms 200]
//                    [--only peer|crcrd] [--keep DIR]
#include <unistd.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <iostream>
#include <map>
#include <numeric>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "crcrd/core/files.hpp"
#include "crcrd/core/time.hpp"
#include "crcrd/exec/slurm/slurm_cli.hpp"
#include "crcrd/store/sqlite.hpp"
#include "support/daemon.hpp"
#include "support/process.hpp"
#include "support/slurm_cluster.hpp"
#include "support/temp_dir.hpp"

namespace fs = std::filesystem;
using nlohmann::json;
using namespace std::chrono_literals;
using crcrd::eventually;

namespace {

double now_s() {
    return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
        .count();
}

double crcrd_time(const std::string& t) {
    auto p = crcrd::parse_rfc3339(t);
    if (!p) return NAN;
    return std::chrono::duration<double>(p->time_since_epoch()).count();
}

/// Slurm's "2024-05-01T12:00:00", local time, whole seconds.
double slurm_time(const std::string& t) {
    std::tm tm{};
    if (std::sscanf(t.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
                    &tm.tm_hour, &tm.tm_min, &tm.tm_sec) != 6)
        return NAN;
    tm.tm_year -= 1900;
    tm.tm_mon -= 1;
    tm.tm_isdst = -1;
    return static_cast<double>(std::mktime(&tm));
}

struct Stat {
    std::size_t n = 0;
    double mean = NAN, p50 = NAN, p99 = NAN, max = NAN;
};

Stat stat_of(std::vector<double> v) {
    v.erase(std::remove_if(v.begin(), v.end(), [](double x) { return std::isnan(x); }), v.end());
    Stat s;
    s.n = v.size();
    if (v.empty()) return s;
    std::sort(v.begin(), v.end());
    auto rank = [&](double q) {
        return v[std::min(v.size() - 1, static_cast<std::size_t>(std::ceil(q * v.size())) - 1)];
    };
    s.mean = std::accumulate(v.begin(), v.end(), 0.0) / v.size();
    s.p50 = rank(0.50);
    s.p99 = rank(0.99);
    s.max = v.back();
    return s;
}

std::string fmt_s(double x, int prec = 3) {
    if (std::isnan(x)) return "-";
    char b[64];
    std::snprintf(b, sizeof b, "%.*f", prec, x);
    return b;
}

std::string cell(const Stat& s, int prec = 3) {
    if (s.n == 0) return "-";
    return fmt_s(s.p50, prec) + " / " + fmt_s(s.p99, prec) + " (mean " + fmt_s(s.mean, prec) +
           ", n=" + std::to_string(s.n) + ")";
}

/// `t_start <epoch>` and `t_end <epoch>` lines the command printed.
std::pair<double, double> command_times(const fs::path& log) {
    double a = NAN, b = NAN;
    std::ifstream in(log);
    for (std::string line; std::getline(in, line);) {
        if (line.rfind("t_start ", 0) == 0) a = std::stod(line.substr(8));
        if (line.rfind("t_end ", 0) == 0) b = std::stod(line.substr(6));
    }
    return {a, b};
}

/// Slurm's jobcomp records by job id.
std::map<std::string, std::map<std::string, std::string>> jobcomp(const fs::path& file) {
    std::map<std::string, std::map<std::string, std::string>> out;
    std::ifstream in(file);
    for (std::string line; std::getline(in, line);) {
        auto f = crcrd::exec::slurm::parse_fields(line);
        if (f.count("JobId")) out[f["JobId"]] = std::move(f);
    }
    return out;
}

/// CPU seconds (utime+stime, own and reaped children) of a process; NAN when it is gone.
std::pair<double, double> cpu_of(pid_t pid) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
    std::string s((std::istreambuf_iterator<char>(in)), {});
    auto close = s.rfind(')');
    if (close == std::string::npos) return {NAN, NAN};
    std::istringstream rest(s.substr(close + 2));
    std::vector<std::string> f((std::istream_iterator<std::string>(rest)), {});
    if (f.size() < 15) return {NAN, NAN};
    const double hz = static_cast<double>(::sysconf(_SC_CLK_TCK));
    // Fields 14..17 of stat(5) are f[11..14] here (f[0] is field 3).
    return {(std::stod(f[11]) + std::stod(f[12])) / hz, (std::stod(f[13]) + std::stod(f[14])) / hz};
}

/// The machine's busy fraction between two /proc/stat samples.
struct CpuSample {
    double busy = 0, total = 0;
};
CpuSample machine_cpu() {
    std::ifstream in("/proc/stat");
    std::string cpu;
    in >> cpu;
    std::vector<double> v;
    for (double x; v.size() < 8 && in >> x;) v.push_back(x);
    CpuSample c;
    for (double x : v) c.total += x;
    c.busy = c.total - v[3] - v[4];  // idle, iowait
    return c;
}
double busy_between(const CpuSample& a, const CpuSample& b) {
    return (b.busy - a.busy) / std::max(1.0, b.total - a.total);
}

pid_t pid_from_file(const fs::path& p) {
    auto t = crcrd::read_file(p);
    return t ? static_cast<pid_t>(std::atol(t->c_str())) : -1;
}

struct Daemons {
    pid_t ctld, slurmd;
    std::pair<double, double> c0, d0;
    explicit Daemons(const crcrd::SlurmCluster& c)
        : ctld(pid_from_file(c.dir() / "slurmctld.pid")),
          slurmd(pid_from_file(c.dir() / "slurmd.pid")),
          c0(cpu_of(ctld)),
          d0(cpu_of(slurmd)) {}
    std::string report() const {
        auto c1 = cpu_of(ctld), d1 = cpu_of(slurmd);
        return "slurmctld " + fmt_s(c1.first - c0.first, 1) + " s, slurmd " +
               fmt_s(d1.first - d0.first, 1) + " s";
    }
};

/// Slurm's own millisecond timeline of a job, from its daemons' logs (SlurmctldDebug=info).
struct SlurmTimes {
    double submitted = NAN, allocated = NAN, launched = NAN, completed = NAN;
};

/// "[2026-12-01T09:45:41.516] message": the time, or NAN.
double log_time(const std::string& line) {
    if (line.size() < 25 || line[0] != '[') return NAN;
    return slurm_time(line.substr(1, 19)) + std::atof(line.substr(20, 4).c_str());
}

std::string number_after(const std::string& line, const std::string& key) {
    auto at = line.find(key);
    if (at == std::string::npos) return "";
    at += key.size();
    auto end = at;
    while (end < line.size() && std::isdigit(static_cast<unsigned char>(line[end]))) ++end;
    return line.substr(at, end - at);
}

std::map<std::string, SlurmTimes> slurm_timeline(const crcrd::SlurmCluster& c) {
    std::map<std::string, SlurmTimes> out;
    std::ifstream ctld(c.slurmctld_log());
    for (std::string line; std::getline(ctld, line);) {
        const double t = log_time(line);
        if (auto id = number_after(line, "_slurm_rpc_submit_batch_job: JobId="); !id.empty())
            out[id].submitted = t;
        if (auto id = number_after(line, "sched: Allocate JobId="); !id.empty())
            out[id].allocated = t;
        if (auto id = number_after(line, "_start_job: Started JobId="); !id.empty())
            out[id].allocated = t;
        if (line.find(" done") != std::string::npos)
            if (auto id = number_after(line, "_job_complete: JobId="); !id.empty())
                out[id].completed = t;
    }
    std::ifstream slurmd(c.slurmd_log());
    for (std::string line; std::getline(slurmd, line);)
        if (auto id = number_after(line, "Launching batch job "); !id.empty())
            out[id].launched = log_time(line);
    return out;
}

/// One job as either side saw it; times in seconds since the epoch.
struct JobRecord {
    std::string slurm_id;
    std::string slot;         // the place it took (crcrd's slot; the peer's: none)
    double to_sbatch = NAN;   // sbatch called (crcrd: the slot leased, from its log)
    double submitted = NAN;   // sbatch returned (crcrd: started_at)
    double seen_ended = NAN;  // the peer: squeue no longer lists it; crcrd: the job's finished_at
    fs::path output;          // where the command's t_start/t_end lines are
    bool ok = false;
};

struct Figures {
    std::size_t jobs = 0, ok = 0;
    double wall = NAN;
    std::map<std::string, Stat> s;
    std::string cpu;
};

/// The rows of the table, in order: key, what it measures, decimals.
const std::vector<std::tuple<std::string, std::string, int>> k_rows = {
    {"slurm_wait", "Slurm StartTime - SubmitTime (jobcomp, whole seconds)", 0},
    {"sbatch", "sbatch (crcrd: slot leased -> sbatch returned, from its log)", 3},
    {"queue", "sbatch returned -> slurmctld allocates (its log)", 3},
    {"launch", "allocated -> slurmd launches the batch job (its log)", 3},
    {"exec", "slurmd launches -> the command's first line", 3},
    {"command", "the command (sleep 1)", 3},
    {"end", "the command's last line -> slurmctld: job complete", 3},
    {"collect", "job complete -> seen ended (crcrd: finished_at)", 3},
    {"end_to_seen", "Slurm EndTime -> seen ended (jobcomp, whole seconds)", 0},
    {"refill", "seen ended -> the place's next sbatch returned", 3},
    {"cycle", "one place's cycle: sbatch returned -> seen ended", 3},
};

/// Everything measured alike for both sides.
Figures analyse(const crcrd::SlurmCluster& cluster, const std::vector<JobRecord>& jobs) {
    Figures f;
    f.jobs = jobs.size();
    const auto comp = jobcomp(cluster.jobcomp_path());
    const auto times = slurm_timeline(cluster);
    std::map<std::string, std::vector<double>> v;
    for (const auto& j : jobs) {
        if (j.ok) ++f.ok;
        auto [a, b] = command_times(j.output);
        v["sbatch"].push_back(j.submitted - j.to_sbatch);
        v["command"].push_back(b - a);
        v["cycle"].push_back(j.seen_ended - j.submitted);
        if (auto it = comp.find(j.slurm_id); it != comp.end()) {
            auto rec = it->second;
            v["slurm_wait"].push_back(slurm_time(rec["StartTime"]) - slurm_time(rec["SubmitTime"]));
            v["end_to_seen"].push_back(j.seen_ended - slurm_time(rec["EndTime"]));
        }
        if (auto it = times.find(j.slurm_id); it != times.end()) {
            const auto& t = it->second;
            v["queue"].push_back(t.allocated - j.submitted);
            v["launch"].push_back(t.launched - t.allocated);
            v["exec"].push_back(a - t.launched);
            v["end"].push_back(t.completed - b);
            v["collect"].push_back(j.seen_ended - t.completed);
        }
    }
    // A place's turnaround: its job seen ended -> the next job's sbatch returned in it.
    std::map<std::string, std::vector<const JobRecord*>> by_place;
    for (const auto& j : jobs) by_place[j.slot].push_back(&j);
    for (auto& [slot, list] : by_place) {
        std::sort(list.begin(), list.end(),
                  [](auto* x, auto* y) { return x->submitted < y->submitted; });
        for (std::size_t k = 1; k < list.size(); ++k)
            v["refill"].push_back(list[k]->submitted - list[k - 1]->seen_ended);
    }
    for (auto& [k, x] : v) f.s[k] = stat_of(x);
    return f;
}

void print_row(const std::string& what, const std::string& a, const std::string& b) {
    std::printf("| %s | %s | %s |\n", what.c_str(), a.c_str(), b.c_str());
}

// ---------------------------------------------------------------------------------------- peer

Figures run_peer(const crcrd::SlurmCluster& cluster, const fs::path& dir, std::size_t total,
                 std::size_t width, std::chrono::milliseconds poll) {
    fs::create_directories(dir);
    const auto script = dir / "sleep1.sh";
    crcrd::write_file(script,
                      "#!/bin/sh\necho \"t_start $(/bin/date +%s.%N)\"\n/bin/sleep 1\necho \"t_end "
                      "$(/bin/date +%s.%N)\"\n",
                      0755);
    std::vector<JobRecord> jobs(total);
    std::map<std::string, std::size_t> active;  // Slurm id -> index
    std::vector<std::string> free_places;       // places (1..width) whose job was seen ended
    for (std::size_t p = width; p >= 1; --p) free_places.push_back(std::to_string(p));
    std::size_t next = 0;
    const std::string name = "peer-bench";
    auto refresh = [&] {
        std::string out;
        if (cluster.run({"squeue", "--noheader", "--name=" + name, "--format=%i"}, &out) != 0)
            throw std::runtime_error("squeue failed: " + out);
        const double t = now_s();
        std::set<std::string> listed;
        std::istringstream in(out);
        for (std::string id; in >> id;) listed.insert(id);
        for (auto it = active.begin(); it != active.end();) {
            if (!listed.count(it->first)) {
                jobs[it->second].seen_ended = t;
                free_places.push_back(jobs[it->second].slot);
                it = active.erase(it);
            } else {
                ++it;
            }
        }
    };
    Daemons daemons(cluster);
    const auto cpu0 = machine_cpu();
    const auto self0 = cpu_of(::getpid());
    const double t0 = now_s();
    while (next < total || !active.empty()) {
        while (next < total && active.size() < width) {
            JobRecord& j = jobs[next];
            j.slot = free_places.back();
            free_places.pop_back();
            j.to_sbatch = now_s();
            std::string out;
            int rc = cluster.run(
                {"sbatch", "--parsable", "--export=NONE", "--no-requeue", "--job-name=" + name,
                 "--partition=" + cluster.partition(), "--gres=aiu:1", "--time=10:00",
                 "--output=" + (dir / "%j.out").string(), "--chdir=" + dir.string(),
                 script.string()},
                &out);
            j.submitted = now_s();
            auto id = crcrd::exec::slurm::parse_sbatch_id(out);
            if (rc != 0 || !id) throw std::runtime_error("sbatch failed: " + out);
            j.slurm_id = *id;
            j.output = dir / (*id + ".out");
            active[j.slurm_id] = next;
            ++next;
        }
        // Until a place in the queue is free (or, at the end, everything is gone).
        if (!eventually(
                [&] {
                    refresh();
                    if (active.size() < width && (next < total || active.empty())) return true;
                    std::this_thread::sleep_for(poll);  // each look is a process and an RPC
                    return false;
                },
                std::chrono::minutes(10)))
            throw std::runtime_error("the peer's jobs did not drain within 10 minutes");
    }
    const double wall = now_s() - t0;
    const auto cpu1 = machine_cpu();
    const auto self1 = cpu_of(::getpid());
    const auto comp = jobcomp(cluster.jobcomp_path());
    for (auto& j : jobs) {
        auto it = comp.find(j.slurm_id);
        j.ok = it != comp.end() && it->second.at("JobState") == "COMPLETED";
    }
    Figures f = analyse(cluster, jobs);
    f.wall = wall;
    f.cpu = "machine " + fmt_s(100 * busy_between(cpu0, cpu1), 0) + "% busy; " + daemons.report() +
            "; sbatch+squeue " + fmt_s(self1.second - self0.second, 1) + " s";
    return f;
}

// --------------------------------------------------------------------------------------- crcrd

constexpr const char* k_command = R"sh(#!/bin/sh
echo "t_start $(date +%s.%N)"
sleep 1
printf '<testsuite name="ci"><testcase classname="ci" name="sleep1"/></testsuite>\n' > "$CRCR_JUNIT_DIR/results.xml"
echo "t_end $(date +%s.%N)"
)sh";

Figures run_crcrd(const crcrd::SlurmCluster& cluster, const fs::path& dir, std::size_t total,
                  std::size_t width, const std::string& poll_interval, std::string* extra) {
    const fs::path bin = dir / "bin", shared = dir / "shared", home = dir / "daemon";
    fs::create_directories(shared);
    fs::create_directories(home);
    crcrd::write_file(bin / "ci.sh", k_command, 0755);
    // Tests run as nobody inside bwrap: the command and the shared root must be reachable.
    for (const auto& d : {dir, bin, shared}) fs::permissions(d, fs::perms(0755));
    crcrd::write_file(
        home / "selection.yaml",
        "tiers:\n  - {name: unit, always: true, tests: [sleep1], labels: [aiu1], timeout: 10m}\n"
        "rules: []\nunmatched: nothing\n");
    crcrd::TestDaemon daemon(home,
                             "selection: {rules: selection.yaml}\n"
                             "execution:\n"
                             "  executor: slurm\n"
                             "  command: [" +
                                 (bin / "ci.sh").string() +
                                 "]\n"
                                 "  min_free_bytes: 1MiB\n"
                                 "  infra_retries: 0\n"
                                 "  flaky_reruns: 0\n"
                                 "  device_wait: 1h\n"  // runs wait their turn for a slot
                                 "  slurm:\n"
                                 "    partition: " +
                                 cluster.partition() +
                                 "\n"
                                 "    gres_per_label: {aiu1: \"aiu:1\"}\n"
                                 "    shared_root: " +
                                 shared.string() +
                                 "\n"
                                 "    poll_interval: " +
                                 poll_interval +
                                 "\n"
                                 "    max_submitted: " +
                                 std::to_string(width) + "\n");
    daemon.start(cluster.env());
    if (daemon.port() == 0) throw std::runtime_error("crcrd did not start:\n" + daemon.log());
    const pid_t pid = daemon.process().pid();

    json tmpl = json::parse(crcrd::fixture_text("crcr/direct-pytorch-crcr.json"));
    std::map<std::int64_t, double> posted, accepted;
    Daemons daemons(cluster);
    const auto cpu0 = machine_cpu();
    const auto d0 = cpu_of(pid);
    const double t0 = now_s();
    for (std::size_t i = 0; i < total; ++i) {
        tmpl["client_payload"]["pr_number"] = 10000 + i;  // its own PR: nothing supersedes it
        char sha[41];
        std::snprintf(sha, sizeof sha, "%040zx", i + 1);
        tmpl["client_payload"]["upstream_sha"] = sha;
        const double t = now_s();
        auto r = daemon.post_standard(tmpl.dump(), "bench-" + std::to_string(i));
        const double t2 = now_s();
        if (!r || r->status != 202)
            throw std::runtime_error(
                "post " + std::to_string(i) + ": " +
                (r ? std::to_string(r->status) + " " + r->body : r.error().message));
        auto run = json::parse(r->body)["run_id"].get<std::int64_t>();
        posted[run] = t;
        accepted[run] = t2;
    }
    const double t_posted = now_s();
    const auto limit = std::chrono::seconds(60 + 10 * total);
    if (!eventually(
            [&] {
                if (daemon.scalar(
                        "SELECT count(*) FROM runs WHERE state IN ('completed','cancelled')") ==
                    static_cast<std::int64_t>(total))
                    return true;
                std::this_thread::sleep_for(250ms);  // a read of the database each time
                return false;
            },
            limit))
        throw std::runtime_error("the runs did not complete within " +
                                 std::to_string(limit.count()) + " s");
    const auto cpu1 = machine_cpu();
    const auto d1 = cpu_of(pid);

    // From crcrd's log: "job_id=N ... leased slot=" (the dispatcher took a slot for it).
    std::map<std::string, double> leased_at;
    {
        std::istringstream log(daemon.log());
        for (std::string line; std::getline(log, line);) {
            if (line.find(" leased slot=") == std::string::npos) continue;
            leased_at[number_after(line, "job_id=")] = crcrd_time(line.substr(0, line.find(' ')));
        }
    }
    auto db = crcrd::store::Db::open(daemon.db_path(), crcrd::store::OpenOptions{true, 5000});
    if (!db) throw std::runtime_error(db.error().message);
    auto st = (*db)->prepare(
        "SELECT j.id, j.run_id, coalesce(j.slot,''), coalesce(j.external_id,''), j.created_at, "
        "coalesce(j.started_at,''), "
        "coalesce(j.finished_at,''), coalesce(j.conclusion,''), coalesce(j.log_path,''), "
        "coalesce(r.finished_at,'') "
        "FROM jobs j JOIN runs r ON r.id = j.run_id ORDER BY j.id");
    std::vector<JobRecord> jobs;
    std::vector<double> accept, post_to_created, webhook_to_sbatch, created_to_leased;
    double last = 0;
    while (st.step()) {
        JobRecord j;
        const std::string id = std::to_string(st.int64(0));
        const auto run = st.int64(1);
        j.slot = st.text(2);
        j.slurm_id = st.text(3);
        j.to_sbatch = leased_at.count(id) ? leased_at[id] : NAN;
        j.submitted = crcrd_time(st.text(5));
        j.seen_ended = crcrd_time(st.text(6));
        j.ok = st.text(7) == "passed";
        j.output = st.text(8);
        const double created = crcrd_time(st.text(4));
        last = std::max(last, crcrd_time(st.text(9)));
        accept.push_back(accepted[run] - posted[run]);
        post_to_created.push_back(created - posted[run]);
        created_to_leased.push_back(j.to_sbatch - created);
        // The first `width` runs find a slot free: webhook -> sbatch with no queueing in crcrd.
        if (jobs.size() < width) webhook_to_sbatch.push_back(j.submitted - posted[run]);
        jobs.push_back(std::move(j));
    }
    Figures f = analyse(cluster, jobs);
    f.wall = last - t0;
    f.cpu = "machine " + fmt_s(100 * busy_between(cpu0, cpu1), 0) + "% busy; " + daemons.report() +
            "; crcrd " + fmt_s(d1.first - d0.first, 1) + " s + its sbatch/scontrol " +
            fmt_s(d1.second - d0.second, 1) + " s";
    std::ostringstream x;
    x << "crcrd only (p50 / p99, seconds):\n"
      << "  " << total << " posts took " << fmt_s(t_posted - t0, 2)
      << " s; post -> 202: " << cell(stat_of(accept)) << "\n"
      << "  post -> job created (planner): " << cell(stat_of(post_to_created)) << "\n"
      << "  the first " << width << " runs (a slot free): job created -> slot leased: "
      << cell(stat_of(std::vector<double>(
             created_to_leased.begin(),
             created_to_leased.begin() + std::min(width, created_to_leased.size()))))
      << "\n"
      << "  the first " << width
      << " runs: post -> sbatch returned: " << cell(stat_of(webhook_to_sbatch)) << "\n"
      << "  conclusions: " << f.ok << " passed of " << jobs.size() << " jobs\n";
    *extra = x.str();
    if (daemon.stop() != 0) std::cerr << "crcrd did not exit 0 at SIGTERM\n";
    return f;
}

}  // namespace

int main(int argc, char** argv) {
    std::map<std::string, std::string> a;
    for (int i = 1; i + 1 < argc; i += 2) a[argv[i]] = argv[i + 1];
    const std::size_t total = a.count("--runs") ? std::stoul(a["--runs"]) : 500;
    const std::size_t width = a.count("--width") ? std::stoul(a["--width"]) : 16;
    const std::string poll = a.count("--poll-interval") ? a["--poll-interval"] : "1s";
    const auto peer_poll =
        std::chrono::milliseconds(a.count("--peer-poll-ms") ? std::stol(a["--peer-poll-ms"]) : 200);
    const std::string only = a.count("--only") ? a["--only"] : "";
    std::setvbuf(stdout, nullptr, _IOLBF, 0);
    if (auto why = crcrd::SlurmCluster::skip_reason(); !why.empty()) {
        std::cerr << "bench_slurm: " << why << "\n";
        return 2;
    }
    std::string out;
    if (crcrd::run_command(
            {"bwrap", "--ro-bind", "/", "/", "--unshare-pid", "--proc", "/proc", "true"}, &out) !=
        0) {
        std::cerr << "bench_slurm: bubblewrap cannot create namespaces here: " << out << "\n";
        return 2;
    }
    try {
        crcrd::TempDir tmp;
        const fs::path root = a.count("--keep") ? fs::path(a["--keep"]) : tmp.path();
        fs::create_directories(root);
        fs::permissions(root, fs::perms(0755));
        std::optional<Figures> peer, mine;
        std::string extra;
        {
            crcrd::SlurmCluster cluster(root / "slurm", static_cast<int>(width));
            std::printf(
                "cluster: one node, CPUs=16, Gres=aiu:%zu; every job asks --gres=aiu:1; %zu jobs, "
                "at most %zu in Slurm\n",
                width, total, width);
            if (only != "crcrd") {
                peer = run_peer(cluster, root / "peer", total, width, peer_poll);
                std::fprintf(stderr, "peer done: %.1f s\n", peer->wall);
            }
            if (only != "peer") {
                if (!cluster.wait_node_idle(60s))
                    throw std::runtime_error("the node is not idle after the peer");
                mine = run_crcrd(cluster, root / "crcrd", total, width, poll, &extra);
                std::fprintf(stderr, "crcrd done: %.1f s\n", mine->wall);
            }
        }  // the cluster stops here (jobs cancelled, slurmd and slurmctld stopped)
        auto col = [&](const std::optional<Figures>& f, auto get) {
            return f ? get(*f) : std::string("-");
        };
        std::printf(
            "\n| p50 / p99 in seconds (mean, n) | sbatch alone (squeue every %ld ms) | crcrd "
            "(poll_interval %s) |\n|---|---|---|\n",
            static_cast<long>(peer_poll.count()), poll.c_str());
        print_row(
            "jobs completed",
            col(peer,
                [](auto& f) { return std::to_string(f.ok) + " of " + std::to_string(f.jobs); }),
            col(mine,
                [](auto& f) { return std::to_string(f.ok) + " of " + std::to_string(f.jobs); }));
        print_row("wall time", col(peer, [](auto& f) { return fmt_s(f.wall, 1) + " s"; }),
                  col(mine, [](auto& f) { return fmt_s(f.wall, 1) + " s"; }));
        print_row("jobs/s", col(peer, [](auto& f) { return fmt_s(f.jobs / f.wall, 2); }),
                  col(mine, [](auto& f) { return fmt_s(f.jobs / f.wall, 2); }));
        for (const auto& [key, what, prec] : k_rows) {
            auto get = [&, key = key, prec = prec](const Figures& f) {
                return f.s.count(key) ? cell(f.s.at(key), prec) : "-";
            };
            print_row(what, col(peer, get), col(mine, get));
        }
        print_row("CPU during the phase", col(peer, [](auto& f) { return f.cpu; }),
                  col(mine, [](auto& f) { return f.cpu; }));
        std::printf("\n%s", extra.c_str());
        if (peer && mine) std::printf("ratio crcrd/sbatch jobs/s: %.2f\n", peer->wall / mine->wall);
    } catch (const std::exception& e) {
        std::cerr << "bench_slurm: " << e.what() << "\n";
        return 1;
    }
    return 0;
}
