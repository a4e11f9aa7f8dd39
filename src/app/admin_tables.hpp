#pragma once
// App-internal: the tables crcrctl's admin commands print for people, one function per
// listing, each taking the admin API's JSON answer (docs/operations.md). Listings end with a
// "(more: --cursor X)" line when the API has a next page.

#include <nlohmann/json.hpp>

#include <iosfwd>
#include <string>

namespace crcrd::app {

/// j[key] as a cell: a string as is, another value as JSON, "-" when missing or null.
std::string text(const nlohmann::json& j, const char* key);

/// GET /api/v1/runs: one run a line (ID, EVENT, SHA, PR, STATE, CLASS, CREATED, REASON).
void print_runs(std::ostream& out, const nlohmann::json& page);
/// GET /api/v1/runs/{id}: the run, its selection, its jobs, statuses and bisection.
void print_run(std::ostream& out, const nlohmann::json& run);
/// GET /api/v1/recovery: the passes and the watermark.
void print_passes(std::ostream& out, const nlohmann::json& page);
/// GET /api/v1/selection-misses: the test, how many commits, the rules they matched.
void print_misses(std::ostream& out, const nlohmann::json& page);
/// GET /api/v1/runners: the slots, and the Slurm partition's nodes when there is a cluster.
void print_runners(std::ostream& out, const nlohmann::json& page);
/// GET /api/v1/deliveries: each delivery and its verdict.
void print_deliveries(std::ostream& out, const nlohmann::json& page);
/// GET /api/v1/outbox: each sink's lane (LANE, WAITING, DEAD, BUDGET WINDOW:USED/LEFT, PAUSED
/// UNTIL, NEXT SEND, OLDEST WAITING FINAL, LAST ERROR), then each status or callback and where
/// it went.
void print_outbox(std::ostream& out, const nlohmann::json& page);
/// GET /api/v1/builds: one build a line (ID, KEY (12 characters), STATE, SHA (12), SIZE,
/// ATTEMPTS, RUNS, FINISHED, REASON).
void print_builds(std::ostream& out, const nlohmann::json& page);
/// GET /api/v1/builds/{id}: the build's facts, then its builder's log tail as it is.
void print_build(std::ostream& out, const nlohmann::json& build);

/// GET /api/v1/trunk: "RED <tier> since <sha12> ..." for each red tier, then one commit a line
/// (SHA, RUNS, a column per tier with its class or state, SUBJECT with the bisection marks).
void print_trunk(std::ostream& out, const nlohmann::json& grid);
/// GET /api/v1/tests/{name}/history: the flaky rate, counts, last and first failure, then one
/// run a line (RUN, JOB, TIER, ATTEMPT, SHA, EVENT, RESULT, AT, MESSAGE).
void print_test_history(std::ostream& out, const nlohmann::json& history);
/// GET /api/v1/tests?flaky=1: one test a line (RATE, FLAKY, RUNS, LAST FLAKY, TEST).
void print_flaky(std::ostream& out, const nlohmann::json& list);

/// GET /api/v1/stats/daily: one day a line (DAY, RUNS, WAIT P50, WAIT P95 with ">" when beyond
/// the last bucket, DEVICE H, SELECTED H, EVERY TIER H, a PASS column per tier, a UTIL column
/// per slot, CLASSES as class:count).
void print_stats(std::ostream& out, const nlohmann::json& stats);

}  // namespace crcrd::app
