// Selection time: 3,000 changed paths (a large PyTorch PR) against 200 rules of three globs
// each, as decide() does it for a run, with the JSON explanation it stores. Prints the median
// and p99 over repetitions, the first one, and the median of decide() alone. With a second
// argument, a directory, also writes the paths (`paths`) and every rule's globs (`globs`),
// one a line, there for bench/run-match-peers.sh.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "crcrd/select/selection.hpp"

int main(int argc, char** argv) {
    int reps = argc > 1 ? std::atoi(argv[1]) : 50;
    const char* dirs[] = {
        "aten/src/ATen/native", "c10/core",      "torch/csrc/autograd", "torch/_inductor/codegen",
        "torch/_dynamo",        "test/inductor", "docs/source",         "torch/distributed",
        "third_party/x",        "tools"};
    std::string yaml =
        "tiers:\n  - {name: import, always: true, tests: [t]}\n  - {name: affected, from_rules: "
        "true}\nrules:\n";
    for (int r = 0; r < 200; ++r) {
        std::string d = dirs[r % 10];
        yaml += "  - {name: r" + std::to_string(r) + ", paths: [\"" + d + "/sub" +
                std::to_string(r) + "/**\", \"" + d + "/*" + std::to_string(r) +
                ".cpp\", \"**/test_r" + std::to_string(r) + "_*.py\"], tests: [test/r" +
                std::to_string(r) + ".py]}\n";
    }
    std::vector<std::string> errors;
    auto rules = crcrd::select::parse_rules(yaml, "bench.yaml", &errors);
    if (!rules) {
        std::fprintf(stderr, "%s\n", errors.empty() ? "rules" : errors[0].c_str());
        return 1;
    }
    crcrd::select::ChangedPaths changed{crcrd::select::Source::github_api, {}, ""};
    for (int i = 0; i < 3000; ++i) {
        std::string d = dirs[i % 10];
        changed.paths.push_back(d + "/sub" + std::to_string(i % 250) + "/deeper/file" +
                                std::to_string(i) + ".cpp");
    }
    if (argc > 2) {
        std::ofstream paths(std::string(argv[2]) + "/paths"),
            globs(std::string(argv[2]) + "/globs");
        for (const auto& p : changed.paths) paths << p << '\n';
        for (const auto& r : rules->rules)
            for (const auto& g : r.paths) globs << g << '\n';
    }
    std::vector<double> ms, decide_ms;
    std::size_t tiers = 0;
    for (int i = 0; i < reps; ++i) {
        auto t0 = std::chrono::steady_clock::now();
        auto sel = crcrd::select::decide(*rules, changed, crcrd::RunEvent::pull_request);
        auto t1 = std::chrono::steady_clock::now();
        auto json = sel.to_json_text();
        ms.push_back(
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
                .count());
        decide_ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
        tiers = sel.tiers.size() + json.size() * 0;
    }
    // The first decide() after loading is what a run pays: each run's paths differ. (Until
    // 2026-12-02 the matcher built DFA states on first use and the first one was ~55 ms.)
    const double first = ms.front();
    std::sort(ms.begin(), ms.end());
    std::sort(decide_ms.begin(), decide_ms.end());
    std::printf(
        "selection: 3000 paths x 200 rules (600 globs): median %.2f ms, p99 %.2f ms, first %.2f ms "
        "(decide() alone: median %.2f ms), %zu tiers, %d reps\n",
        ms[ms.size() / 2], ms[std::min(ms.size() - 1, ms.size() * 99 / 100)], first,
        decide_ms[decide_ms.size() / 2], tiers, reps);
    return 0;
}
