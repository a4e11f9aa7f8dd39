#pragma once
// Admin-internal: the dashboard's pages as HTML (docs/dashboard.md), rendered from the same
// JSON the admin API answers with, so a page never shows what the API would not.

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "html.hpp"

namespace crcrd::admin::ui {

/// Where the upstream repository's commits and PRs are on the web ("" for no links).
struct Links {
    std::string commit_url;  // + sha
    std::string pr_url;      // + number
};

/// A query string's filter values as the page's form shows them again.
using FormValues = std::map<std::string, std::string>;

/// The runs list: the filter form (`form` as submitted), `problem` (a refused filter) above the
/// table, the runs of `list` ({"items","next_cursor"}) and a link to the next page.
std::string runs_page(const nlohmann::json& list, const FormValues& form,
                      const std::string& problem, const html::Viewer& v, const Links& links);

/// What the run page shows besides the run itself.
struct RunExtras {
    std::map<std::int64_t, nlohmann::json> failed_tests;  // job id → {"items": [...]}
    std::map<std::int64_t, std::string> log_tails;        // job id → the log's last bytes
    std::string notice;                                   // an action's outcome
};
/// A run (GET /api/v1/runs/{id}): facts, actions, selection, tiers, failing tests, evidence,
/// bisection, log tails and statuses.
std::string run_page(const nlohmann::json& run, const RunExtras& extras, const html::Viewer& v,
                     const Links& links);

/// A job: facts, metadata, evidence, its tests (`tests` {"items",...}) and the last `tail`
/// bytes of its log (`log`; `log_problem` when there is none).
std::string job_page(const nlohmann::json& job, const nlohmann::json& tests, const std::string& log,
                     const std::string& log_problem, std::int64_t tail, const html::Viewer& v,
                     const Links& links);

/// The runner slots (GET /api/v1/runners) with drain/undrain forms for admins.
std::string runners_page(const nlohmann::json& runners, const std::string& notice,
                         const html::Viewer& v);

/// The reporting lanes of `lanes` (GET /api/v1/outbox's "lanes": each sink's waiting and dead
/// rows, budget used and left per window, pause, next send, oldest waiting final state and last
/// error), then the webhook deliveries of `list`, newest first, with the verdict filter.
std::string deliveries_page(const nlohmann::json& lanes, const nlohmann::json& list,
                            const FormValues& form, const std::string& problem,
                            const html::Viewer& v);

/// The builds list (GET /api/v1/builds, docs/build.md): the state and SHA filter form (`form`
/// as submitted), `problem` (a refused filter) above the table, each build's id, short key,
/// state, upstream SHA, size, attempts, runs, end and reason, and a link to the next page.
std::string builds_page(const nlohmann::json& list, const FormValues& form,
                        const std::string& problem, const html::Viewer& v, const Links& links);

/// A build (GET /api/v1/builds/{id}): its facts, its builder job and the tail of that job's log
/// (`build["log"]`), `notice` (an action's outcome) and, for admins, the Evict form while it is
/// ready and no open job needs it.
std::string build_page(const nlohmann::json& build, const std::string& notice,
                       const html::Viewer& v, const Links& links);

/// The trunk grid (GET /api/v1/trunk): the branch, links to the other configured ones,
/// `problem` (a refused parameter), "red since <sha7>" for each red tier, then one row per
/// commit (SHA linked upstream, subject, author, time, its runs and the marks of bisections)
/// with a cell per tier: the class of its last attempt as a badge linked to the job.
std::string trunk_page(const nlohmann::json& grid, const std::string& problem,
                       const html::Viewer& v, const Links& links);

/// A test's history (GET /api/v1/tests/{name}/history): flaky rate, counts, first and last
/// failure, a strip of its results (each linked to its job) and the table of them.
std::string test_page(const nlohmann::json& history, const html::Viewer& v, const Links& links);

/// The flaky tests (GET /api/v1/tests?flaky=1), flakiest first, and a form to open a test's
/// history by name.
std::string flaky_page(const nlohmann::json& list, const html::Viewer& v);

/// The trends (GET /api/v1/stats/daily): runs by class (stacked bars), pass rate per tier,
/// the wait for a card at p50 and p95 ("> " for a percentile beyond the last bucket),
/// utilisation per slot, device time of every attempt and of the selected runs against those
/// runs with every tier (lines), each as inline SVG with its numbers in a table beneath it.
std::string trends_page(const nlohmann::json& stats, const std::string& problem,
                        const html::Viewer& v);

/// The sign-in form; `next` is where to go afterwards, `problem` why the last try failed.
std::string login_page(const std::string& next, const std::string& problem, bool ui_public);

/// An error as a page: the status's name and `message`.
std::string error_page(int status, const std::string& message, const html::Viewer& v);

}  // namespace crcrd::admin::ui
