#include "crcrd/classify/classify.hpp"

#include <algorithm>

namespace crcrd::classify {

namespace {

struct Found {
    std::string line;   // shortened, for the reason
    std::string match;  // what the pattern matched (a device signature)
};

/// The first line of `log` matching one of `res`.
std::optional<Found> find_line(const std::string& log, const std::vector<std::regex>& res) {
    std::size_t start = 0;
    while (start < log.size()) {
        auto end = log.find('\n', start);
        if (end == std::string::npos) end = log.size();
        const char* first = log.data() + start;
        const char* last = log.data() + end;
        for (const auto& re : res) {
            std::cmatch m;
            if (std::regex_search(first, last, m, re)) {
                return Found{std::string(first, std::min<std::size_t>(end - start, 200)), m.str(0).substr(0, 200)};
            }
        }
        start = end + 1;
    }
    return std::nullopt;
}

}  // namespace

Patterns compile_patterns(const std::vector<std::string>& device, const std::vector<std::string>& infra) {
    Patterns p;
    for (const auto& d : device) p.device.emplace_back(d);
    for (const auto& i : infra) p.infra.emplace_back(i);
    p.device_text = device;
    p.infra_text = infra;
    return p;
}

Verdict decide(const Evidence& e, const Patterns& p) {
    if (e.cancelled) return {Conclusion::cancelled, "cancelled while running", std::nullopt, std::nullopt};
    if (e.timed_out) return {Conclusion::timeout, "tier timeout reached", std::nullopt, std::nullopt};
    if (e.stalled) return {Conclusion::timeout, "no output for the stall timeout", std::nullopt, std::nullopt};
    if (auto f = find_line(e.log_text, p.device)) {
        return {Conclusion::device_unavailable, "device failure in the log: " + f->line, f->line, f->match};
    }
    if (e.junit_error) return {Conclusion::infra_error, "malformed JUnit: " + *e.junit_error, std::nullopt, std::nullopt};
    if (e.tests_failed > 0) {
        return {Conclusion::regression, std::to_string(e.tests_failed) + " of " + std::to_string(e.tests_total) + " tests failed", std::nullopt, std::nullopt};
    }
    // An infra signature only explains an attempt that failed: a passing run may print one
    // (a test of offline behaviour, a retried download) and still be a pass.
    const bool failed = e.signal || (e.exit_code && *e.exit_code != 0) || e.tests_total == 0;
    if (failed) {
        if (auto f = find_line(e.log_text, p.infra)) return {Conclusion::infra_error, "infrastructure failure in the log: " + f->line, f->line, std::nullopt};
    }
    if (e.signal) return {Conclusion::infra_error, "the test command was killed by signal " + std::to_string(*e.signal), std::nullopt, std::nullopt};
    if (e.exit_code && *e.exit_code != 0) {
        return {Conclusion::infra_error, "exit status " + std::to_string(*e.exit_code) + " without a failed test" +
                                   (e.tests_total == 0 ? " (no JUnit results)" : ""),
                std::nullopt, std::nullopt};
    }
    return {Conclusion::passed, std::to_string(e.tests_total) + " tests passed", std::nullopt, std::nullopt};
}

}  // namespace crcrd::classify
