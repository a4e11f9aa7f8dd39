#pragma once
// Admin-internal: what a route handler gets and the helpers every handler shares. One handler
// per resource and action (runs_routes.cpp, jobs_routes.cpp, outbox_routes.cpp,
// builds_routes.cpp, trunk_routes.cpp); the table that maps method and path to them, the
// authentication and the one error mapper are in api.cpp.

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "crcrd/admin/auth.hpp"
#include "crcrd/admin/queries.hpp"
#include "crcrd/config/config.hpp"
#include "crcrd/core/result.hpp"
#include "crcrd/core/vocab.hpp"
#include "crcrd/http/message.hpp"
#include "crcrd/store/writer.hpp"

namespace crcrd::admin {

/// What the API holds, as one request sees it (a snapshot of what a reload may replace).
struct Context {
    std::filesystem::path db_path;
    boost::asio::any_io_executor workers;
    store::Writer& writer;
    std::shared_ptr<const std::vector<std::string>> tiers;
    std::shared_ptr<const std::vector<config::RunnerConfig>> runners;
    std::function<void()> on_recovery_run;
    /// The executor's cluster view (Slurm's nodes), blocking; unset without a cluster.
    std::function<nlohmann::json()> cluster;
    /// The reporting lanes' states (an array), from the sender; unset in tests without one.
    std::function<nlohmann::json()> outbox_lanes;
    /// Removes a published build's folder (`<build.cache_dir>/<key>`; blocking: run it on the
    /// workers); unset when the configuration has no build section.
    std::function<void(const std::string& key)> remove_build;
    /// The trunk grid's branches (bisect.refs as configured; the first is the default).
    std::shared_ptr<const std::vector<std::string>> trunk_refs =
        std::make_shared<const std::vector<std::string>>();
    /// The subject, author and commit time of upstream commits, {sha: {subject, author,
    /// committed_at}}, leaving out those the mirror lacks; blocking (git): run it on the
    /// workers. Unset without a mirror.
    std::function<nlohmann::json(const std::vector<std::string>& shas)> commits;
};

/// One request that matched a route: the caller and the path's captured parts.
struct Call {
    http::Request& req;
    const Caller& caller;
    std::vector<std::string> params;  // the route pattern's groups, in order
};

/// A handler's answer: a response, or an error that api.cpp's one mapper turns into the JSON
/// error body and its status (bad_request 400, forbidden 403, not_found 404, conflict 409,
/// anything else 503 unavailable).
using Reply = Result<http::Response>;
using Handler = boost::asio::awaitable<Reply> (*)(Context&, Call&);

/// The HTTP status of a handler's error code (api.cpp's one table; 503 for codes without one).
int status_of(const Error& e);

/// A query parameter as an integer in [lo, hi]; the error names the parameter.
Result<std::optional<std::int64_t>> int_param(const http::Request& req, const char* name,
                                              std::int64_t lo, std::int64_t hi);
/// Ok when `v` is unset or one of `allowed` (names of core/vocab.hpp, e.g. names<RunState>());
/// else bad_request listing them in their order.
Status one_of(const std::optional<std::string>& v, const char* name,
              std::span<const std::string_view> allowed);
/// Ok when `v` is unset or looks like an RFC 3339 UTC time (a date at least).
Status utc_time(std::optional<std::string>& v, const char* name);
/// Ok when every query parameter of `req` is one of `allowed`; else bad_request naming the
/// first unknown one and listing `allowed` (a filter the route does not know is never ignored).
Status known_params(const http::Request& req, std::span<const std::string_view> allowed);
/// `limit` (1-200, default 50) and `cursor` of a list request.
Result<Page> page_of(const http::Request& req);
/// 200 with `body` as JSON.
http::Response ok_json(const nlohmann::json& body, int status = 200);
/// The first error of `checks`, or Ok.
Status first_error(std::initializer_list<Status> checks);

/// Runs a blocking read on the worker pool and resumes on the caller's executor.
template <class Fn>
boost::asio::awaitable<Result<nlohmann::json>> on_workers(boost::asio::any_io_executor workers,
                                                          Fn fn) {
    // co_spawn needs a default-constructible value: carry the Result in an optional.
    auto op = boost::asio::co_spawn(
        workers,
        [fn = std::move(fn)]() -> boost::asio::awaitable<std::optional<Result<nlohmann::json>>> {
            co_return fn();
        },
        boost::asio::use_awaitable);
    auto r = co_await std::move(op);
    co_return std::move(*r);
}

/// A read's JSON as a 200, or its error.
inline Reply json_reply(Result<nlohmann::json> r) {
    if (!r) return r.error();
    return ok_json(*r);
}

// Handlers. `params` as captured by their route in api.cpp.
boost::asio::awaitable<Reply> list_runs_route(Context&, Call&);
boost::asio::awaitable<Reply> get_run_route(Context&, Call&);     // {run}
boost::asio::awaitable<Reply> create_run_route(Context&, Call&);  // admin
boost::asio::awaitable<Reply> retry_run_route(Context&, Call&);   // {run}, admin
boost::asio::awaitable<Reply> cancel_run_route(Context&, Call&);  // {run}, admin
boost::asio::awaitable<Reply> get_job_route(Context&, Call&);     // {job}
boost::asio::awaitable<Reply> job_tests_route(Context&, Call&);   // {job}
boost::asio::awaitable<Reply> job_log_route(Context&, Call&);     // {job}
boost::asio::awaitable<Reply> list_runners_route(Context&, Call&);
boost::asio::awaitable<Reply> drain_runner_route(Context&, Call&);  // {name, drain|undrain}, admin
boost::asio::awaitable<Reply> list_deliveries_route(Context&, Call&);
boost::asio::awaitable<Reply> list_outbox_route(Context&, Call&);
boost::asio::awaitable<Reply> retry_outbox_route(Context&, Call&);  // {id}, admin
boost::asio::awaitable<Reply> list_recovery_route(Context&, Call&);
boost::asio::awaitable<Reply> run_recovery_route(Context&, Call&);  // admin
boost::asio::awaitable<Reply> list_selection_misses_route(Context&, Call&);
boost::asio::awaitable<Reply> list_builds_route(Context&, Call&);
boost::asio::awaitable<Reply> get_build_route(Context&, Call&);    // {id}
boost::asio::awaitable<Reply> evict_build_route(Context&, Call&);  // {id}, admin
boost::asio::awaitable<Reply> trunk_route(Context&, Call&);
boost::asio::awaitable<Reply> test_history_route(Context&, Call&);  // {name}, percent-encoded
boost::asio::awaitable<Reply> list_tests_route(Context&, Call&);    // flaky=1
boost::asio::awaitable<Reply> stats_daily_route(Context&, Call&);
boost::asio::awaitable<Reply> stats_rebuild_route(Context&, Call&);  // admin

/// The bytes of a build's log the build's page and GET /api/v1/builds/{id} show.
inline constexpr std::int64_t k_build_log_tail = 65536;

/// `bytes` as JSON may carry them: every byte sequence that is not UTF-8 (a log cut in the middle
/// of a character, a binary's output) becomes U+FFFD; valid text is unchanged.
std::string valid_utf8(std::string_view bytes);

}  // namespace crcrd::admin
