#include "crcrd/classify/classify.hpp"

#include <re2/set.h>

#include <algorithm>
#include <stdexcept>

#include "crcrd/core/log_pattern.hpp"

namespace crcrd::classify {

struct Patterns::Compiled {
    Compiled() : all(log_pattern::options(), RE2::UNANCHORED) {}
    std::vector<std::shared_ptr<const RE2>> device, infra;
    RE2::Set all;  // device patterns first (ids 0..), then infra ones
};

namespace {

struct Found {
    std::string line;   // shortened, for the reason
    std::string match;  // what the pattern matched (a device signature)
};

/// Which patterns occur somewhere in the log: one pass of the Set's DFA, whatever their number.
std::vector<bool> occurring(const Patterns::Compiled& c, std::string_view log) {
    std::vector<bool> out(c.device.size() + c.infra.size());
    if (out.empty()) return out;
    std::vector<int> ids;
    RE2::Set::ErrorInfo info{};
    if (c.all.Match(log, &ids, &info)) {
        for (int id : ids) out[static_cast<std::size_t>(id)] = true;
    } else if (info.kind != RE2::Set::kNoError) {
        out.assign(out.size(), true);  // the DFA gave up: let each pattern look for itself
    }
    return out;
}

/// The first line of `log` (a line ends before "\n"; nothing after a final "\n" is a line) that
/// one of `res` matches, with what the first of them that matches it matched, as std::regex
/// did line by line. Only the patterns with `occurs` set are searched for, each only up to
/// the end of the earliest line found so far.
std::optional<Found> find_line(std::string_view log,
                               const std::vector<std::shared_ptr<const RE2>>& res,
                               const std::vector<bool>& occurs, std::size_t first_id) {
    std::size_t line_start = std::string_view::npos, line_end = log.size();
    for (std::size_t i = 0; i < res.size(); ++i) {
        re2::StringPiece m;
        if (!occurs[first_id + i] || !res[i]->Match(log, 0, line_end, RE2::UNANCHORED, &m, 1))
            continue;
        const auto pos = static_cast<std::size_t>(m.data() - log.data());
        const std::size_t start = pos == 0 ? 0 : log.rfind('\n', pos - 1) + 1;  // npos + 1 is 0
        if (start >= log.size()) continue;
        line_start = start;
        line_end = std::min(log.find('\n', pos), log.size());
    }
    if (line_start == std::string_view::npos) return std::nullopt;
    const std::string_view line = log.substr(line_start, line_end - line_start);
    for (const auto& re : res) {
        re2::StringPiece m;
        if (re->Match(line, 0, line.size(), RE2::UNANCHORED, &m, 1)) {
            return Found{std::string(line.substr(0, 200)),
                         std::string(m.data(), std::min<std::size_t>(m.size(), 200))};
        }
    }
    return std::nullopt;  // not reached: some pattern matched this line
}

}  // namespace

Patterns compile_patterns(const std::vector<std::string>& device,
                          const std::vector<std::string>& infra) {
    auto c = std::make_shared<Patterns::Compiled>();
    auto add = [&](const std::string& pattern, std::vector<std::shared_ptr<const RE2>>& to) {
        auto re = log_pattern::compile(pattern);
        std::string error;
        if (!re || c->all.Add(log_pattern::multiline(pattern), &error) < 0) {
            throw std::invalid_argument(re ? "'" + pattern + "': " + error : re.error().message);
        }
        to.push_back(*re);
    };
    for (const auto& d : device) add(d, c->device);
    for (const auto& i : infra) add(i, c->infra);
    if ((!device.empty() || !infra.empty()) && !c->all.Compile())
        throw std::invalid_argument(
            "the classification patterns are too large to compile together");
    return Patterns(std::move(c));
}

Classification decide(const Evidence& e, const Patterns& p) {
    if (e.cancelled)
        return {Conclusion::cancelled, "cancelled while running", std::nullopt, std::nullopt};
    if (e.timed_out)
        return {Conclusion::timeout, "tier timeout reached", std::nullopt, std::nullopt};
    if (e.stalled)
        return {Conclusion::timeout, "no output for the stall timeout", std::nullopt, std::nullopt};
    static const Patterns::Compiled k_none;
    const Patterns::Compiled& c = p.compiled() ? *p.compiled() : k_none;
    const std::string_view log = e.log_text;
    const std::vector<bool> occurs = occurring(c, log);
    if (auto f = find_line(log, c.device, occurs, 0)) {
        return {Conclusion::device_unavailable, "device failure in the log: " + f->line, f->line,
                f->match};
    }
    if (e.junit_error)
        return {Conclusion::infra_error, "malformed JUnit: " + *e.junit_error, std::nullopt,
                std::nullopt};
    if (e.tests_failed > 0) {
        return {Conclusion::regression,
                std::to_string(e.tests_failed) + " of " + std::to_string(e.tests_total) +
                    " tests failed",
                std::nullopt, std::nullopt};
    }
    // An infra signature only explains an attempt that failed: a passing run may print one
    // (a test of offline behaviour, a retried download) and still be a pass.
    const bool failed = e.signal || (e.exit_code && *e.exit_code != 0) || e.tests_total == 0;
    if (failed) {
        if (auto f = find_line(log, c.infra, occurs, c.device.size()))
            return {Conclusion::infra_error, "infrastructure failure in the log: " + f->line,
                    f->line, std::nullopt};
    }
    if (e.signal)
        return {Conclusion::infra_error,
                "the test command was killed by signal " + std::to_string(*e.signal), std::nullopt,
                std::nullopt};
    if (e.exit_code && *e.exit_code != 0) {
        return {Conclusion::infra_error,
                "exit status " + std::to_string(*e.exit_code) + " without a failed test" +
                    (e.tests_total == 0 ? " (no JUnit results)" : ""),
                std::nullopt, std::nullopt};
    }
    return {Conclusion::passed, std::to_string(e.tests_total) + " tests passed", std::nullopt,
            std::nullopt};
}

}  // namespace crcrd::classify
