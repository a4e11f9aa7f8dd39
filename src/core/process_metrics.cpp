#include <sys/resource.h>
#include <unistd.h>

#include <ctime>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>

#include "crcrd/core/metrics.hpp"

namespace crcrd {

namespace {

std::string read_all(const char* path) {
    std::ifstream in(path);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void gauge(std::string& out, const char* name, const char* type, const char* help, double v) {
    write_metric_header(out, name, type, help);
    write_metric_sample(out, name, {}, {}, v);
}

/// The system's boot time in seconds since the epoch: the wall clock less the time since boot
/// (CLOCK_BOOTTIME, the clock /proc/<pid>/stat's start time counts on). Not /proc/stat's btime:
/// the packaged unit's ProcSubset=pid hides /proc/stat.
double boot_time() {
    timespec real{}, boot{};
    if (::clock_gettime(CLOCK_REALTIME, &real) != 0 || ::clock_gettime(CLOCK_BOOTTIME, &boot) != 0)
        return 0;
    return static_cast<double>(real.tv_sec - boot.tv_sec) +
           static_cast<double>(real.tv_nsec - boot.tv_nsec) / 1e9;
}

}  // namespace

void write_process_metrics(std::string& out) {
    try {
        const double ticks = static_cast<double>(sysconf(_SC_CLK_TCK));
        const double page = static_cast<double>(sysconf(_SC_PAGESIZE));
        // /proc/self/stat: the command name may hold spaces and parentheses; fields after the
        // last ')' start with field 3 (state).
        const std::string stat = read_all("/proc/self/stat");
        const auto close = stat.rfind(')');
        if (close != std::string::npos && ticks > 0) {
            std::istringstream in(stat.substr(close + 1));
            std::string field;
            double utime = 0, stime = 0, start = 0, vsize = 0, rss = 0;
            for (int i = 3; i <= 24 && in >> field; ++i) {
                if (i == 14) utime = std::stod(field);
                if (i == 15) stime = std::stod(field);
                if (i == 22) start = std::stod(field);
                if (i == 23) vsize = std::stod(field);
                if (i == 24) rss = std::stod(field);
            }
            gauge(out, "process_cpu_seconds_total", "counter",
                  "Total user and system CPU time spent in seconds.", (utime + stime) / ticks);
            gauge(out, "process_resident_memory_bytes", "gauge", "Resident memory size in bytes.",
                  rss * page);
            gauge(out, "process_virtual_memory_bytes", "gauge", "Virtual memory size in bytes.",
                  vsize);
            if (const double boot = boot_time(); boot > 0) {
                gauge(out, "process_start_time_seconds", "gauge",
                      "Start time of the process since unix epoch in seconds.",
                      boot + start / ticks);
            }
        }
        std::error_code ec;
        double fds = 0;
        for (auto it = std::filesystem::directory_iterator("/proc/self/fd", ec);
             !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
            ++fds;
        }
        if (!ec) gauge(out, "process_open_fds", "gauge", "Number of open file descriptors.", fds);
        rlimit lim{};
        if (getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur != RLIM_INFINITY) {
            gauge(out, "process_max_fds", "gauge", "Maximum number of open file descriptors.",
                  static_cast<double>(lim.rlim_cur));
        }
    } catch (const std::exception&) {
        // A /proc that reads strangely leaves the rest out.
    }
}

}  // namespace crcrd
