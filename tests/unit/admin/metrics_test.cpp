// admin::Metrics: events and start-up totals move the counters a scrape shows, a request's
// latency is labelled by its route pattern, never by its raw path, and the reporting lanes'
// gauges come from the lanes' states alone.
#include "crcrd/admin/metrics.hpp"

#include <gtest/gtest.h>

#include "crcrd/admin/api.hpp"

namespace crcrd::admin {
namespace {

using store::Event;
using store::EventKind;

TEST(AdminMetrics, EventsAndTotalsAddUp) {
    Metrics m;
    store::EventTotals t;
    t.deliveries = {{{"queued"}, 4}, {{"rejected"}, 2}};
    t.runs_finished = {{{"push", "regression"}, 1}};
    t.selection_misses = 3;
    m.seed(t);
    m.record({Event{EventKind::delivery, "queued", "", {}},
              Event{EventKind::run_finished, "push", "regression", {}},
              Event{EventKind::job_finished, "import", "passed", 12.5},
              Event{EventKind::selection_miss, "", "", {}},
              Event{EventKind::job_started, "import", "", 0.25},
              Event{EventKind::status_settled, "github", "dead", {}}});
    EXPECT_EQ(m.counter("crcrd_deliveries_total", {"queued"}), 5);
    EXPECT_EQ(m.counter("crcrd_deliveries_total", {"rejected"}), 2);
    EXPECT_EQ(m.counter("crcrd_runs_finished_total", {"push", "regression"}), 2);
    EXPECT_EQ(m.counter("crcrd_jobs_finished_total", {"import", "passed"}), 1);
    EXPECT_EQ(m.counter("crcrd_statuses_total", {"github", "dead"}), 1);
    EXPECT_EQ(m.counter("crcrd_selection_misses_total", {}), 4);
    const std::string text = m.counters_text();
    for (const char* want :
         {"crcrd_deliveries_total{verdict=\"pong\"} 0\n",  // every verdict, even at 0
          "crcrd_job_duration_seconds_bucket{tier=\"import\",le=\"30\"} 1\n",
          "crcrd_job_duration_seconds_count{tier=\"import\"} 1\n",
          "crcrd_job_queue_wait_seconds_bucket{tier=\"import\",le=\"0.5\"} 1\n",
          "crcrd_selection_misses_total 4\n"}) {
        EXPECT_NE(text.find(want), std::string::npos) << want << " in:\n" << text;
    }
}

TEST(AdminMetrics, RequestLatencyIsLabelledByRoutePattern) {
    const std::vector<std::pair<std::string, std::string>> cases = {
        {"/api/v1/runs", "/api/v1/runs"},
        {"/api/v1/runs/12", "/api/v1/runs/{id}"},
        {"/api/v1/runs/987654/cancel", "/api/v1/runs/{id}/cancel"},
        {"/api/v1/jobs/5/log", "/api/v1/jobs/{id}/log"},
        {"/api/v1/runners/sim-0/drain", "/api/v1/runners/{name}/drain"},
        {"/api/v1/runners/12/undrain", "/api/v1/runners/{name}/undrain"},
        {"/api/v1/outbox/3/retry", "/api/v1/outbox/{id}/retry"},
        {"/metrics", "/metrics"},
        {"/api/v1/no-such-thing", "other"},
        {"/api/v1/runs/12/x", "other"},
        {"/api/v1/runs/abc", "other"},
        {"/api/v1/openapi.yaml", "/api/v1/openapi.yaml"},
        {"/ui/", "/ui/"},
        {"/ui/runs/42", "/ui/runs/{id}"},
        {"/ui/runs/42/retry", "/ui/runs/{id}/retry"},
        {"/ui/jobs/7", "/ui/jobs/{id}"},
        {"/ui/runners/spyre-0/drain", "/ui/runners/{name}/drain"},
        {"/ui/runners", "/ui/runners"},
        {"/ui/anything/else/12", "/ui/*"},
        {"/ui", "/ui/*"},
    };
    for (const auto& [path, want] : cases) EXPECT_EQ(Api::route_label(path), want) << path;

    Metrics m;
    m.observe_request("/api/v1/runs/{id}", "GET", 0.003);
    m.observe_request("/api/v1/runs/{id}", "PATCH", 0.003);
    const std::string text = m.counters_text();
    EXPECT_NE(text.find("crcrd_http_request_duration_seconds_bucket{route=\"/api/v1/runs/"
                        "{id}\",method=\"GET\",le=\"0.005\"} 1\n"),
              std::string::npos)
        << text;
    EXPECT_NE(text.find("crcrd_http_request_duration_seconds_count{route=\"/api/v1/runs/"
                        "{id}\",method=\"other\"} 1\n"),
              std::string::npos)
        << text;
}

TEST(AdminMetrics, LaneGaugesFollowTheLanesStates) {
    const SystemTime now = *parse_rfc3339("2026-12-03T10:00:00.000Z");
    const nlohmann::json lanes = nlohmann::json::parse(R"([
        {"sink": "github", "configured": true,
         "budget": [{"requests": 80, "per_seconds": 60.0, "used": 3, "left": 77},
                    {"requests": 500, "per_seconds": 3600.0, "used": 3, "left": 497}],
         "paused_until": "2026-12-03T10:59:30.000Z", "next_send_at": "2026-12-03T10:59:30.000Z",
         "held_back": 4},
        {"sink": "callback", "configured": true,
         "budget": [{"requests": 10, "per_seconds": 0.5, "used": 10, "left": 0}],
         "paused_until": "2026-12-03T09:59:00.000Z", "next_send_at": "2026-12-03T10:00:02.500Z",
         "held_back": 0},
        {"sink": "file", "configured": false,
         "budget": [{"requests": 1, "per_seconds": 60.0, "used": 0, "left": 1}],
         "paused_until": null, "next_send_at": "2026-12-03T10:00:04.000Z", "held_back": 0}
    ])");
    // The file lane's next look is 4 s away, but nothing of it waits.
    const std::string text =
        lane_gauges(lanes, {{{"github"}, 5}, {{"callback"}, 1}, {{"file"}, 0}}, now);
    const std::vector<std::pair<std::string, bool>> cases = {
        {"crcrd_outbox_budget_left{sink=\"github\",window=\"60s\"} 77\n", true},
        {"crcrd_outbox_budget_left{sink=\"github\",window=\"3600s\"} 497\n", true},
        {"crcrd_outbox_budget_left{sink=\"callback\",window=\"500ms\"} 0\n", true},
        {"crcrd_outbox_budget_left{sink=\"file\"", false},  // not configured: no budget
        {"crcrd_outbox_lane_paused{sink=\"github\"} 1\n", true},
        {"crcrd_outbox_lane_paused{sink=\"callback\"} 0\n", true},  // its pause ended
        {"crcrd_outbox_lane_paused{sink=\"file\"} 0\n", true},
        {"crcrd_outbox_held_back{sink=\"github\"} 4\n", true},
        {"crcrd_outbox_next_send_seconds{sink=\"github\"} 3570\n", true},
        {"crcrd_outbox_next_send_seconds{sink=\"callback\"} 2.5\n", true},
        {"crcrd_outbox_next_send_seconds{sink=\"file\"} 0\n", true},
        {"# TYPE crcrd_outbox_budget_left gauge\n", true},
    };
    for (const auto& [line, present] : cases)
        EXPECT_EQ(text.find(line) != std::string::npos, present) << line << " in:\n" << text;
    // Without lanes (a daemon without a sender): no lane families at all.
    EXPECT_EQ(lane_gauges(nlohmann::json::array(), {}, now), "");
}

}  // namespace
}  // namespace crcrd::admin
