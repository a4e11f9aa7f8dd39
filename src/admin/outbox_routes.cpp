// /api/v1/deliveries, /api/v1/outbox[/{id}/retry], /api/v1/recovery[/run], /api/v1/selection-misses
// (docs/operations.md, docs/ingest.md, docs/verdicts.md).
#include <spdlog/spdlog.h>

#include <limits>

#include "crcrd/store/async.hpp"
#include "crcrd/store/outbox.hpp"
#include "routes.hpp"

namespace crcrd::admin {

namespace asio = boost::asio;
using nlohmann::json;

asio::awaitable<Reply> list_deliveries_route(Context& ctx, Call& call) {
    DeliveryFilter f;
    f.verdict = call.req.query_param("verdict");
    if (auto s = one_of(f.verdict, "verdict", names<Verdict>()); !s) {
        co_return s.error();
    }
    auto page = page_of(call.req);
    if (!page) co_return page.error();
    f.page = *page;
    auto query = on_workers(ctx.workers, [db = ctx.db_path, f] { return list_deliveries(db, f); });
    co_return json_reply(co_await std::move(query));
}

asio::awaitable<Reply> list_outbox_route(Context& ctx, Call& call) {
    const auto& req = call.req;
    OutboxFilter f;
    f.state = req.query_param("state");
    f.sink = req.query_param("sink");
    if (auto s = first_error({one_of(f.state, "state", names<OutboxDelivery>()),
                              one_of(f.sink, "sink", names<Sink>())});
        !s) {
        co_return s.error();
    }
    auto run_id = int_param(req, "run_id", 1, std::numeric_limits<std::int64_t>::max());
    if (!run_id) co_return run_id.error();
    f.run_id = *run_id;
    auto page = page_of(req);
    if (!page) co_return page.error();
    f.page = *page;
    json lanes = ctx.outbox_lanes ? ctx.outbox_lanes() : json::array();
    auto query =
        on_workers(ctx.workers, [db = ctx.db_path, f, lanes = std::move(lanes)]() -> Result<json> {
            auto page = list_outbox(db, f);
            if (!page) return page;
            auto with = with_backlog(db, lanes);
            if (!with) return with.error();
            (*page)["lanes"] = std::move(*with);
            return page;
        });
    co_return json_reply(co_await std::move(query));
}

asio::awaitable<Reply> list_selection_misses_route(Context& ctx, Call& call) {
    SelectionMissFilter f;
    auto run_id = int_param(call.req, "run_id", 1, std::numeric_limits<std::int64_t>::max());
    if (!run_id) co_return run_id.error();
    f.run_id = *run_id;
    f.test = call.req.query_param("test");
    if (f.test && (f.test->empty() || f.test->size() > 1000)) {
        co_return make_error(Errc::bad_request, "test must be a test id of 1 to 1000 characters");
    }
    auto page = page_of(call.req);
    if (!page) co_return page.error();
    f.page = *page;
    auto query =
        on_workers(ctx.workers, [db = ctx.db_path, f] { return list_selection_misses(db, f); });
    co_return json_reply(co_await std::move(query));
}

asio::awaitable<Reply> retry_outbox_route(Context& ctx, Call& call) {
    const std::int64_t id = std::stoll(call.params.at(0));
    // Only a dead letter, and only while nothing newer was reported for its context: an
    // older state must never overwrite a newer one.
    auto write = store::async_write<store::RequeueOutcome>(
        ctx.writer, [id](store::Db& db) { return store::OutboxRepo(db).requeue_dead(id); },
        asio::use_awaitable);
    auto [err, outcome] = co_await std::move(write);
    if (err) co_return *err;
    using Requeue = store::RequeueOutcome::Kind;
    if (outcome.kind == Requeue::not_found)
        co_return make_error(Errc::not_found, "no outbox row " + std::to_string(id));
    if (outcome.kind == Requeue::not_dead)
        co_return make_error(Errc::conflict,
                             "not dead: " + std::string(to_string(outcome.delivery)));
    if (outcome.kind == Requeue::newer_reported) {
        co_return make_error(Errc::conflict,
                             "a newer status of " + outcome.context + " was reported since");
    }
    spdlog::info("outbox id={} requeued by {}", id, call.caller.name);
    co_return ok_json({{"status", "waiting"}, {"id", id}});
}

asio::awaitable<Reply> list_recovery_route(Context& ctx, Call&) {
    auto query = on_workers(ctx.workers, [db = ctx.db_path] { return list_recovery(db); });
    auto listed = co_await std::move(query);
    if (listed) (*listed)["enabled"] = static_cast<bool>(ctx.on_recovery_run);
    co_return json_reply(std::move(listed));
}

asio::awaitable<Reply> run_recovery_route(Context& ctx, Call& call) {
    if (!ctx.on_recovery_run)
        co_return make_error(Errc::conflict, "recovery.github_hook is not configured");
    ctx.on_recovery_run();
    spdlog::info("recovery pass requested by {}", call.caller.name);
    co_return ok_json({{"status", "started"}}, 202);
}

}  // namespace crcrd::admin
