// The admin side of the build stage's builds: the log tail as JSON may carry it, the route
// labels of the build routes, the build counters /metrics serves, and the dashboard's build
// pages as HTML.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "admin/routes.hpp"
#include "admin/ui_pages.hpp"
#include "crcrd/admin/api.hpp"
#include "crcrd/admin/metrics.hpp"

namespace crcrd::admin {
namespace {

using nlohmann::json;

TEST(BuildLogTail, BytesThatAreNotUtf8BecomeReplacementCharactersAndTextIsKept) {
    const std::string r = "\xEF\xBF\xBD";
    const std::pair<std::string, std::string> cases[] = {
        {"", ""},
        {"plain ascii\n", "plain ascii\n"},
        {"caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x94\xA5", "caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x94\xA5"},
        // A tail cut inside a character: its last bytes alone.
        {"\x82\xAC end", r + r + " end"},
        {"start \xE2\x82", "start " + r + r},
        {"bin \xFF\xFE x", "bin " + r + r + " x"},
        {"overlong \xC0\xAF", "overlong " + r + r},
        {"surrogate \xED\xA0\x80", "surrogate " + r + r + r},
        {"too high \xF4\x90\x80\x80", "too high " + r + r + r + r},
    };
    for (const auto& [in, want] : cases) {
        EXPECT_EQ(valid_utf8(in), want) << in;
        EXPECT_NO_THROW(json(valid_utf8(in)).dump()) << in;
    }
}

TEST(BuildRoutes, AreLabelledByTheirPattern) {
    const std::pair<const char*, const char*> cases[] = {
        {"/api/v1/builds", "/api/v1/builds"},
        {"/api/v1/builds/12", "/api/v1/builds/{id}"},
        {"/api/v1/builds/12/evict", "/api/v1/builds/{id}/evict"},
        {"/api/v1/builds/12/nothing", "other"},
        {"/ui/builds", "/ui/builds"},
        {"/ui/builds/7", "/ui/builds/{id}"},
        {"/ui/builds/7/evict", "/ui/builds/{id}/evict"},
        {"/ui/builds/7/other", "/ui/*"},
    };
    for (const auto& [path, want] : cases) EXPECT_EQ(Api::route_label(path), want) << path;
}

TEST(BuildMetrics, LookupsEvictionsAndDurationsAreCountedFromTheWritersEvents) {
    Metrics m;
    std::string text = m.counters_text();
    // Present from the start, at 0.
    EXPECT_NE(text.find("crcrd_build_cache_lookups_total{result=\"hit\"} 0\n"), std::string::npos)
        << text;
    EXPECT_NE(text.find("crcrd_build_cache_lookups_total{result=\"miss\"} 0\n"), std::string::npos);
    EXPECT_NE(text.find("crcrd_build_evictions_total 0\n"), std::string::npos);
    using K = store::EventKind;
    m.record({{K::build_cache, "miss", "", std::nullopt},
              {K::build_finished, "ready", "", 95.5},
              {K::build_cache, "hit", "", std::nullopt},
              {K::build_cache, "hit", "", std::nullopt},
              {K::build_evicted, "", "", std::nullopt},
              {K::build_finished, "failed", "", 4.0},
              {K::build_finished, "failed", "", std::nullopt}});  // never started: no duration
    EXPECT_EQ(m.counter("crcrd_build_cache_lookups_total", {"hit"}), 2);
    EXPECT_EQ(m.counter("crcrd_build_cache_lookups_total", {"miss"}), 1);
    EXPECT_EQ(m.counter("crcrd_build_evictions_total", {}), 1);
    text = m.counters_text();
    EXPECT_NE(text.find("crcrd_build_duration_seconds_count{outcome=\"ready\"} 1\n"),
              std::string::npos)
        << text;
    EXPECT_NE(text.find("crcrd_build_duration_seconds_sum{outcome=\"ready\"} 95.5\n"),
              std::string::npos);
    EXPECT_NE(text.find("crcrd_build_duration_seconds_bucket{outcome=\"ready\",le=\"120\"} 1\n"),
              std::string::npos);
    EXPECT_NE(text.find("crcrd_build_duration_seconds_bucket{outcome=\"ready\",le=\"60\"} 0\n"),
              std::string::npos);
    EXPECT_NE(text.find("crcrd_build_duration_seconds_count{outcome=\"failed\"} 1\n"),
              std::string::npos);
}

json build(const std::string& state, std::int64_t open_jobs) {
    return {{"id", 7},
            {"key", std::string(64, 'c')},
            {"state", state},
            {"upstream_sha", std::string(40, 'a')},
            {"backend_sha", nullptr},
            {"job_id", 31},
            {"attempts", 1},
            {"size_bytes", 1536},
            {"reason", "<b>evicted</b> by ops"},
            {"created_at", "2026-12-03T10:00:00.000Z"},
            {"started_at", "2026-12-03T10:00:01.000Z"},
            {"finished_at", "2026-12-03T10:05:00.000Z"},
            {"last_used_at", nullptr},
            {"runs", 2},
            {"open_jobs", open_jobs},
            {"log", "make: <error> & more\n"}};
}

TEST(BuildPages, TheListLinksEachBuildAndEscapesWhatTheDatabaseHolds) {
    const html::Viewer reader{true, "viewer", false, "x"};
    const json list = {{"items", json::array({build("ready", 0)})}, {"next_cursor", "abc"}};
    const std::string page =
        ui::builds_page(list, {{"state", "ready"}}, "", reader, {"https://c/commit/", ""});
    EXPECT_NE(page.find("<a href=\"/ui/builds/7\">7</a>"), std::string::npos) << page;
    EXPECT_NE(page.find(">cccccccccccc</code>"), std::string::npos);
    EXPECT_NE(page.find("<span class=\"badge b-ready\">ready</span>"), std::string::npos);
    EXPECT_NE(page.find("<td>1.5 KiB</td>"), std::string::npos);
    EXPECT_NE(page.find("href=\"https://c/commit/" + std::string(40, 'a') + "\""),
              std::string::npos);
    EXPECT_NE(page.find("&lt;b&gt;evicted&lt;/b&gt; by ops"), std::string::npos);
    EXPECT_EQ(page.find("<b>evicted"), std::string::npos);
    EXPECT_NE(page.find("<option selected>ready</option>"), std::string::npos);
    EXPECT_NE(page.find("href=\"/ui/builds?state=ready&amp;cursor=abc\""), std::string::npos);
    EXPECT_NE(ui::builds_page(json::object(), {}, "state must be one of", reader, {})
                  .find("<p class=\"problem\">state must be one of</p>"),
              std::string::npos);
}

TEST(BuildPages, ABuildShowsItsLogAndTheEvictFormOnlyToAnAdminWhileItCanGo) {
    const html::Viewer admin{true, "ops", true, "tok"};
    const html::Viewer reader{true, "viewer", false, "tok"};
    const std::string page = ui::build_page(build("ready", 0), "", admin, {});
    EXPECT_NE(page.find("<pre>make: &lt;error&gt; &amp; more\n</pre>"), std::string::npos) << page;
    EXPECT_NE(page.find("<a href=\"/ui/jobs/31\">31</a>"), std::string::npos);
    EXPECT_NE(page.find("1.5 KiB (1536 bytes)"), std::string::npos);
    EXPECT_NE(page.find("action=\"/ui/builds/7/evict\""), std::string::npos);
    EXPECT_NE(page.find("name=\"csrf\" value=\"tok\""), std::string::npos);
    // Not for a reader, not while an open job needs it, not once it is not ready.
    for (const auto& [b, v] : {std::pair{build("ready", 0), reader},
                               {build("ready", 1), admin},
                               {build("evicted", 0), admin},
                               {build("running", 0), admin}}) {
        EXPECT_EQ(ui::build_page(b, "", v, {}).find("/evict"), std::string::npos)
            << b["state"] << " " << b["open_jobs"] << " " << v.admin;
    }
    json no_log = build("failed", 0);
    no_log["log"] = nullptr;
    EXPECT_NE(ui::build_page(no_log, "", reader, {}).find("No log"), std::string::npos);
    EXPECT_NE(ui::build_page(no_log, "Evicted.", reader, {}).find("<p class=\"notice\">Evicted."),
              std::string::npos);
}

}  // namespace
}  // namespace crcrd::admin
