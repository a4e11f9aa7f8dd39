// Classification time for a full log: `execution.max_log_bytes` (64 MiB by default) of
// pytest-like output scanned with the default device and infra patterns, as the executor
// does once per attempt. Prints the median over repetitions and the log's size. With a third
// argument, a directory, also writes the log (`log`) and the patterns, one a line
// (`patterns`), there for bench/run-match-peers.sh to give grep and ripgrep the same input.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "crcrd/classify/classify.hpp"
#include "crcrd/config/config.hpp"

int main(int argc, char** argv) {
    const int reps = argc > 1 ? std::atoi(argv[1]) : 3;
    const std::size_t mib = argc > 2 ? static_cast<std::size_t>(std::atoi(argv[2])) : 64;
    const char* lines[] = {
        "test/test_ops.py::TestCommonCPU::test_out_addmm_cpu_float32 PASSED                     [ "
        "12%]",
        "test/test_ops.py::TestCommonCPU::test_noncontiguous_samples_abs_cpu_float32 SKIPPED (not "
        "supported) [ 13%]",
        "  warnings.warn(\"The given NumPy array is not writable, and PyTorch does not support "
        "non-writable tensors.\")",
        "E       AssertionError: Tensor-likes are not close!",
        "INFO:torch_spyre:compiled graph with 42 nodes in 0.31s"};
    std::string log;
    log.reserve(mib << 20);
    for (std::size_t i = 0; log.size() < (mib << 20); ++i) {
        log += lines[i % 5];
        log += '\n';
    }
    const crcrd::config::ClassifyConfig defaults;
    auto patterns =
        crcrd::classify::compile_patterns(defaults.device_patterns, defaults.infra_patterns);
    crcrd::classify::Evidence e;
    e.exit_code = 1;
    e.tests_total = 100;
    e.tests_failed = 0;  // no failed test: both pattern lists are scanned to the end
    e.log_text = log;
    if (argc > 3) {
        std::ofstream(std::string(argv[3]) + "/log", std::ios::binary) << log;
        std::ofstream out(std::string(argv[3]) + "/patterns");
        for (const auto& pattern : defaults.device_patterns) out << pattern << '\n';
        for (const auto& pattern : defaults.infra_patterns) out << pattern << '\n';
    }
    std::vector<double> ms;
    std::string verdict;
    for (int r = 0; r < reps; ++r) {
        auto t0 = std::chrono::steady_clock::now();
        verdict = crcrd::to_string(crcrd::classify::decide(e, patterns).conclusion);
        ms.push_back(
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
                .count());
    }
    std::sort(ms.begin(), ms.end());
    std::printf("classify: log=%zu MiB (%zu bytes) verdict=%s median=%.0f ms max=%.0f ms\n", mib,
                log.size(), verdict.c_str(), ms[ms.size() / 2], ms.back());
    return 0;
}
