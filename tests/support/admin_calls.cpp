#include "support/admin_calls.hpp"

#include <nlohmann/json.hpp>

#include <sstream>

#include "support/certs.hpp"
#include "support/process.hpp"

namespace crcrd {

namespace fs = std::filesystem;

std::string answer_line(const std::string& method, const std::string& path,
                        const http::ClientResponse& r) {
    return nlohmann::json{{"method", method},
                          {"path", path},
                          {"status", r.status},
                          {"content_type", std::string(r.header("Content-Type").value_or(""))},
                          {"body", r.body}}
        .dump();
}

std::string openapi_verdict(const std::vector<std::string>& lines) {
    std::string input, out;
    for (const auto& l : lines) input += l + "\n";
    const fs::path src(CRCRD_SOURCE_DIR);
    run_command({"/usr/bin/python3", (src / "tests" / "support" / "openapi_check.py").string(),
                 (src / "docs" / "openapi.yaml").string(), "validate"},
                &out, input);
    std::istringstream verdicts(out);
    std::size_t n = 0;
    for (std::string v; std::getline(verdicts, v); ++n) {
        if (v != "ok") return (n < lines.size() ? lines[n].substr(0, 300) : "?") + ": " + v;
    }
    return n == lines.size() ? "ok" : "the checker answered " + out;
}

int run_crcrctl(const TestDaemon& daemon, const fs::path& token_file,
                const std::vector<std::string>& args, std::string& out) {
    std::vector<std::string> argv = {CRCRCTL_BIN,
                                     "--url",
                                     daemon.url(""),
                                     "--cacert",
                                     test_certs().ca.string(),
                                     "--token-file",
                                     token_file.string()};
    argv.insert(argv.end(), args.begin(), args.end());
    return run_command(argv, &out);
}

}  // namespace crcrd
