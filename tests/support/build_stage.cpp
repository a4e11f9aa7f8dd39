#include "support/build_stage.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "crcrd/core/files.hpp"

namespace crcrd {

void install_script(const std::filesystem::path& path, const std::string& text) {
    write_file(path, text);
    std::filesystem::permissions(path, std::filesystem::perms(0755));
    std::filesystem::permissions(path.parent_path(), std::filesystem::perms(0755));
}

std::string build_stage_config(const std::filesystem::path& dir, const BuildStageSetup& s) {
    write_file(dir / "selection.yaml", "tiers:\n" + s.tiers + "rules: []\nunmatched: nothing\n");
    return "selection: {rules: selection.yaml, concurrency: {pull_request: none}}\n"
           "runners:\n"
           "  - {name: card-0}\n"
           "execution:\n"
           "  command: [" +
           s.test_script.string() +
           "]\n"
           "  work_root: state/work\n"
           "  min_free_bytes: 1MiB\n"
           "  device_wait: 30s\n"
           "  env: {" +
           (s.env.size() > 2 ? s.env.substr(2) : std::string()) + "}\n" + s.execution +
           "build:\n"
           "  command: [" +
           s.build_script.string() +
           "]\n"
           "  cache_dir: state/builds\n"
           "  timeout: 1m\n" +
           s.build +
           "report: {file: state/statuses.jsonl}\n"
           "admin: {tokens: [" +
           s.admin_tokens + "]}\n";
}

std::int64_t post_sha(TestDaemon& daemon, const std::string& sha, int pr, const std::string& id) {
    auto j = nlohmann::json::parse(fixture_text("crcr/direct-pytorch-crcr.json"));
    j["client_payload"]["upstream_sha"] = sha;
    j["client_payload"]["pr_number"] = pr;
    auto r = daemon.post_standard(j.dump(), id);
    EXPECT_TRUE(r && r->status == 202) << (r ? r->body : r.error().message);
    if (!r || r->status != 202) return -1;
    return nlohmann::json::parse(r->body)["run_id"].get<std::int64_t>();
}

}  // namespace crcrd
