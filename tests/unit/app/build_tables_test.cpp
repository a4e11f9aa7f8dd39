// crcrctl's build tables (src/app/admin_tables.cpp) from the API's JSON.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <sstream>

#include "app/admin_tables.hpp"

namespace crcrd::app {
namespace {

using nlohmann::json;

json build(std::int64_t id, const std::string& state, const json& size) {
    return {{"id", id},
            {"key", std::string(12, 'd') + std::string(52, 'e')},
            {"state", state},
            {"upstream_sha", std::string(12, 'a') + std::string(28, 'f')},
            {"backend_sha", nullptr},
            {"job_id", 40 + id},
            {"attempts", 1},
            {"size_bytes", size},
            {"reason", state == "failed" ? json("the build failed (exit 3)") : json(nullptr)},
            {"created_at", "2026-12-03T10:00:00.000Z"},
            {"started_at", nullptr},
            {"finished_at", "2026-12-03T10:05:00.000Z"},
            {"last_used_at", nullptr},
            {"runs", 2},
            {"open_jobs", 0}};
}

TEST(BuildTables, AListIsOneBuildALineWithShortKeysAndSizesForPeople) {
    std::ostringstream out;
    print_builds(out, {{"items", {build(12, "ready", 1536), build(3, "failed", nullptr)}},
                       {"next_cursor", "Y3"}});
    EXPECT_EQ(out.str(),
              "ID  KEY           STATE   SHA           SIZE     ATTEMPTS  RUNS  FINISHED         "
              "         REASON\n"
              "12  dddddddddddd  ready   aaaaaaaaaaaa  1.5 KiB  1         2     "
              "2026-12-03T10:05:00.000Z  -\n"
              "3   dddddddddddd  failed  aaaaaaaaaaaa  -        1         2     "
              "2026-12-03T10:05:00.000Z  the build failed (exit 3)\n"
              "(more: --cursor Y3)\n");
}

TEST(BuildTables, OneBuildShowsItsFactsThenItsLogAsItIs) {
    json b = build(12, "ready", 48);
    b["log"] = "compiling\ndone";
    std::ostringstream out;
    print_build(out, b);
    const std::string s = out.str();
    EXPECT_NE(s.find("build 12  ready  key dddddddddddd"), std::string::npos) << s;
    EXPECT_NE(s.find("builder job 52, attempts 1, size 48 B"), std::string::npos) << s;
    EXPECT_NE(s.find("backend -"), std::string::npos) << s;
    EXPECT_NE(s.find("\nlog of job 52 (its end):\ncompiling\ndone\n"), std::string::npos) << s;
    b["log"] = nullptr;
    std::ostringstream none;
    print_build(none, b);
    EXPECT_NE(none.str().find("\nno log\n"), std::string::npos) << none.str();
}

}  // namespace
}  // namespace crcrd::app
