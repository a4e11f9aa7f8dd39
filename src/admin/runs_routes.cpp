// /api/v1/runs: list, one run, a manual run, a retry, a cancellation (docs/operations.md).
#include <spdlog/spdlog.h>

#include <limits>

#include "crcrd/admin/run_actions.hpp"
#include "crcrd/core/sha.hpp"
#include "crcrd/core/time.hpp"
#include "crcrd/store/async.hpp"
#include "crcrd/store/runs.hpp"
#include "routes.hpp"

namespace crcrd::admin {

namespace asio = boost::asio;
using nlohmann::json;

namespace {

/// The classes a run's filter accepts: every class (docs/verdicts.md).
constexpr auto k_filter_conclusions = std::span(names<Conclusion>());

}  // namespace

asio::awaitable<Reply> list_runs_route(Context& ctx, Call& call) {
    const auto& req = call.req;
    RunFilter f;
    f.state = req.query_param("state");
    f.conclusion = req.query_param("conclusion");
    f.event = req.query_param("event");
    f.since = req.query_param("since");
    f.until = req.query_param("until");
    if (auto sha = req.query_param("sha")) {
        if (!valid_sha(*sha))
            co_return make_error(Errc::bad_request, "sha must be a full 40-character commit SHA");
        std::string lower = *sha;
        for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        f.sha = lower;
    }
    if (auto s = first_error({one_of(f.state, "state", names<RunState>()),
                              one_of(f.conclusion, "conclusion", k_filter_conclusions),
                              one_of(f.event, "event", names<RunEvent>()),
                              utc_time(f.since, "since"), utc_time(f.until, "until")});
        !s) {
        co_return s.error();
    }
    auto pr = int_param(req, "pr", 1, std::numeric_limits<std::int64_t>::max());
    if (!pr) co_return pr.error();
    f.pr = *pr;
    auto page = page_of(req);
    if (!page) co_return page.error();
    f.page = *page;
    auto query = on_workers(ctx.workers, [db = ctx.db_path, f] { return list_runs(db, f); });
    co_return json_reply(co_await std::move(query));
}

asio::awaitable<Reply> get_run_route(Context& ctx, Call& call) {
    const std::int64_t id = std::stoll(call.params.at(0));
    auto query = on_workers(ctx.workers, [db = ctx.db_path, id] { return get_run(db, id); });
    co_return json_reply(co_await std::move(query));
}

namespace {

/// A manual run (`retry_of` unset) or the retry of a finished run, stored by the writer.
asio::awaitable<Reply> queue_run(Context& ctx, Call& call, std::optional<std::int64_t> retry_of) {
    json body = retry_of ? json::object() : json::parse(call.req.body, nullptr, false);
    const std::string who = call.caller.name;
    auto write = store::async_write<std::optional<Result<json>>>(
        ctx.writer,
        [retry_of, body, tiers = ctx.tiers, who](store::Db& db) -> std::optional<Result<json>> {
            return retry_of ? retry_run(db, *retry_of, who)
                            : create_manual_run(db, body, *tiers, who);
        },
        asio::use_awaitable);
    auto [err, created] = co_await std::move(write);
    if (err) co_return *err;
    if (!*created) co_return created->error();
    const json& out = **created;
    spdlog::info("run_id={} {} by {} sha={}", out["run_id"].get<std::int64_t>(),
                 retry_of ? "retry of run " + std::to_string(*retry_of) : std::string("manual run"),
                 who, out["sha"].get<std::string>());
    co_return ok_json(out, 201);
}

}  // namespace

asio::awaitable<Reply> create_run_route(Context& ctx, Call& call) {
    return queue_run(ctx, call, std::nullopt);
}

asio::awaitable<Reply> retry_run_route(Context& ctx, Call& call) {
    return queue_run(ctx, call, std::stoll(call.params.at(0)));
}

asio::awaitable<Reply> cancel_run_route(Context& ctx, Call& call) {
    const std::int64_t id = std::stoll(call.params.at(0));
    const std::string reason = "cancelled by " + call.caller.name;
    auto write = store::async_write<store::CancelOutcome>(
        ctx.writer,
        [id, reason](store::Db& db) {
            return store::RunsRepo(db).cancel(id, reason, std::chrono::system_clock::now());
        },
        asio::use_awaitable);
    auto [err, outcome] = co_await std::move(write);
    if (err) co_return *err;
    if (outcome == store::CancelOutcome::not_found)
        co_return make_error(Errc::not_found, "no run " + std::to_string(id));
    if (outcome == store::CancelOutcome::already_finished) {
        co_return make_error(Errc::conflict, "run " + std::to_string(id) + " has already finished");
    }
    spdlog::info("run_id={} {}", id, reason);
    co_return ok_json({{"status", "cancelled"}, {"run_id", id}, {"reason", reason}});
}

}  // namespace crcrd::admin
