// GET /api/v1/stats/daily and POST /api/v1/stats/rebuild (docs/dashboard.md, "Trends"): the
// daily roll-ups as the trends show them, and their rebuild from the history.
#include <spdlog/spdlog.h>

#include "crcrd/store/admin_reads.hpp"
#include "crcrd/store/async.hpp"
#include "crcrd/store/daily.hpp"
#include "routes.hpp"
#include "trends.hpp"

namespace crcrd::admin {

namespace asio = boost::asio;
using nlohmann::json;

asio::awaitable<Reply> stats_daily_route(Context& ctx, Call& call) {
    auto days = int_param(call.req, "days", 1, 366);
    if (!days) co_return days.error();
    const auto now = std::chrono::system_clock::now();
    std::vector<std::string> window = last_days(now, static_cast<int>(days->value_or(30)));
    std::vector<std::string> slots;
    for (const auto& r : *ctx.runners) slots.push_back(r.name);
    auto query = on_workers(
        ctx.workers, [db = ctx.db_path, window, tiers = *ctx.tiers, slots, now]() -> Result<json> {
            auto reads = store::AdminReads::for_this_thread(db);
            if (!reads) return reads.error();
            auto rollups = reads->daily(rollups_since(window));
            if (!rollups) return rollups.error();
            return trends_json(*rollups, window, tiers, slots, now);
        });
    co_return json_reply(co_await std::move(query));
}

asio::awaitable<Reply> stats_rebuild_route(Context& ctx, Call& call) {
    auto write = store::async_write<std::int64_t>(
        ctx.writer, [](store::Db& db) { return store::rebuild_daily(db); }, asio::use_awaitable);
    auto [err, counted] = co_await std::move(write);
    if (err) co_return *err;
    spdlog::info("daily roll-ups rebuilt from the history by {} ({} groups)", call.caller.name,
                 counted);
    co_return ok_json({{"groups", counted}});
}

}  // namespace crcrd::admin
