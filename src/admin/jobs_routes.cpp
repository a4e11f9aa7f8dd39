// /api/v1/jobs/{id}[/tests|/log] and /api/v1/runners[/{name}/drain|undrain] (docs/operations.md).
#include <spdlog/spdlog.h>

#include <fstream>

#include "crcrd/store/async.hpp"
#include "crcrd/store/slots.hpp"
#include "routes.hpp"

namespace crcrd::admin {

namespace asio = boost::asio;
using nlohmann::json;

asio::awaitable<Reply> get_job_route(Context& ctx, Call& call) {
    const std::int64_t id = std::stoll(call.params.at(0));
    auto query = on_workers(ctx.workers, [db = ctx.db_path, id] { return get_job(db, id); });
    co_return json_reply(co_await std::move(query));
}

asio::awaitable<Reply> job_tests_route(Context& ctx, Call& call) {
    const std::int64_t id = std::stoll(call.params.at(0));
    auto page = page_of(call.req);
    if (!page) co_return page.error();
    auto outcome = call.req.query_param("outcome");
    if (auto s = one_of(outcome, "outcome", names<TestOutcome>()); !s) co_return s.error();
    auto query = on_workers(ctx.workers, [db = ctx.db_path, id, outcome, p = *page] {
        return list_tests(db, id, outcome, p);
    });
    co_return json_reply(co_await std::move(query));
}

asio::awaitable<Reply> job_log_route(Context& ctx, Call& call) {
    const std::int64_t id = std::stoll(call.params.at(0));
    auto tail = int_param(call.req, "tail", 1, std::int64_t{1} << 40);
    if (!tail) co_return tail.error();
    auto query = on_workers(ctx.workers, [db = ctx.db_path, id, n = *tail]() -> Result<json> {
        auto where = job_log_path(db, id);
        if (!where) return where.error();
        std::ifstream in(*where, std::ios::binary | std::ios::ate);
        if (!in)
            return make_error(Errc::not_found, "the log of job " + std::to_string(id) + " is gone");
        std::int64_t size = in.tellg();
        std::int64_t from = n ? std::max<std::int64_t>(0, size - *n) : 0;
        in.seekg(from);
        std::string text(static_cast<std::size_t>(size - from), '\0');
        in.read(text.data(), static_cast<std::streamsize>(text.size()));
        return json(text);
    });
    auto r = co_await std::move(query);
    if (!r) co_return r.error();
    http::Response res;
    res.content_type = "text/plain; charset=utf-8";
    res.body = r->get<std::string>();
    co_return res;
}

asio::awaitable<Reply> list_runners_route(Context& ctx, Call&) {
    auto query = on_workers(ctx.workers, [db = ctx.db_path] { return list_slots(db); });
    auto r = co_await std::move(query);
    if (!r) co_return r.error();
    json items = json::array();
    for (auto slot : *r) {
        json labels = json::array();
        for (const auto& rc : *ctx.runners)
            if (rc.name == slot["name"]) labels = rc.labels;
        slot["labels"] = labels;
        items.push_back(std::move(slot));
    }
    json body = {{"items", items}, {"next_cursor", nullptr}};
    if (ctx.cluster) {
        // The cluster's own view (Slurm's nodes, their state and GRES use) beside crcrd's slots.
        auto view = on_workers(ctx.workers, [fn = ctx.cluster] { return Result<json>(fn()); });
        auto c = co_await std::move(view);
        if (!c || !c->is_null()) body["cluster"] = c ? *c : json{{"error", c.error().message}};
    }
    co_return ok_json(body);
}

asio::awaitable<Reply> drain_runner_route(Context& ctx, Call& call) {
    const std::string name = call.params.at(0);
    const bool drain = call.params.at(1) == "drain";
    auto write = store::async_write<bool>(
        ctx.writer,
        [name, drain](store::Db& db) { return store::SlotsRepo(db).set_drained(name, drain); },
        asio::use_awaitable);
    auto [err, changed] = co_await std::move(write);
    if (err) co_return *err;
    if (!changed) co_return make_error(Errc::not_found, "no runner " + name);
    spdlog::info("slot={} {}", name, drain ? "drained" : "undrained");
    co_return ok_json({{"name", name}, {"drained", drain}});
}

}  // namespace crcrd::admin
