// /api/v1/builds[/{id}[/evict]] (docs/operations.md, docs/build.md): the build stage's builds,
// one with its builder's log tail, and an operator's eviction of a ready build.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>
#include <fstream>

#include "crcrd/core/sha.hpp"
#include "crcrd/store/admin_reads.hpp"
#include "crcrd/store/async.hpp"
#include "crcrd/store/builds.hpp"
#include "routes.hpp"

namespace crcrd::admin {

namespace asio = boost::asio;
using nlohmann::json;

namespace {

json or_null(const std::optional<std::string>& v) {
    return v ? json(*v) : json(nullptr);
}
json or_null(const std::optional<std::int64_t>& v) {
    return v ? json(*v) : json(nullptr);
}
/// "" (no backend, no reason) as null.
json or_null(const std::string& v) {
    return v.empty() ? json(nullptr) : json(v);
}

json build_json(const store::BuildRow& b) {
    return {{"id", b.id},
            {"key", b.key},
            {"state", std::string(to_string(b.state))},
            {"upstream_sha", b.upstream_sha},
            {"backend_sha", or_null(b.backend_sha)},
            {"job_id", or_null(b.job_id)},
            {"attempts", b.attempts},
            {"size_bytes", or_null(b.size_bytes)},
            {"reason", or_null(b.reason)},
            {"created_at", b.created_at},
            {"started_at", or_null(b.started_at)},
            {"finished_at", or_null(b.finished_at)},
            {"last_used_at", or_null(b.last_used_at)},
            {"runs", b.runs},
            {"open_jobs", b.open_jobs}};
}

/// The last `bytes` of the file at `path`; nothing when it cannot be read (pruned, never made).
std::optional<std::string> file_tail(const std::string& path, std::int64_t bytes) {
    std::ifstream in(path, std::ios::binary | std::ios::ate);
    if (!in) return std::nullopt;
    const std::int64_t size = in.tellg();
    if (size < 0) return std::nullopt;
    const std::int64_t from = std::max<std::int64_t>(0, size - bytes);
    in.seekg(from);
    std::string text(static_cast<std::size_t>(size - from), '\0');
    in.read(text.data(), static_cast<std::streamsize>(text.size()));
    text.resize(static_cast<std::size_t>(in.gcount()));
    return text;
}

Result<json> list_builds(const std::filesystem::path& path, const store::BuildsQuery& q) {
    auto db = store::AdminReads::for_this_thread(path);
    if (!db) return db.error();
    auto rows = db->builds(q);
    if (!rows) return rows.error();
    json items = json::array();
    for (const auto& b : *rows) items.push_back(build_json(b));
    json next = nullptr;
    if (!rows->empty() && static_cast<std::int64_t>(rows->size()) == q.limit)
        next = make_cursor(rows->back().id);
    return json{{"items", std::move(items)}, {"next_cursor", next}};
}

/// Build `id` with `log`: the last k_build_log_tail bytes of its builder's log (the attempt
/// building it now, or the last one), or null when it has none.
Result<json> get_build(const std::filesystem::path& path, std::int64_t id) {
    auto db = store::AdminReads::for_this_thread(path);
    if (!db) return db.error();
    auto row = db->build(id);
    if (!row) return row.error();
    if (!*row) return make_error(Errc::not_found, "no build " + std::to_string(id));
    json out = build_json(**row);
    out["log"] = nullptr;
    if (const auto job = (*row)->job_id) {
        auto log = db->job_log(*job);
        if (!log) return log.error();
        if (log->path) {
            if (auto tail = file_tail(*log->path, k_build_log_tail)) out["log"] = valid_utf8(*tail);
        }
    }
    return out;
}

/// What an eviction found, decided in one writer item.
struct Eviction {
    enum class Kind { not_found, not_ready, needed, evicted } kind = Kind::not_found;
    store::BuildRow row;
};

}  // namespace

std::string valid_utf8(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    constexpr std::string_view k_replacement = "\xEF\xBF\xBD";
    std::size_t i = 0;
    while (i < s.size()) {
        const auto c = static_cast<unsigned char>(s[i]);
        std::size_t len = 0;
        char32_t min = 0, cp = 0;
        if (c < 0x80) {
            out += static_cast<char>(c);
            ++i;
            continue;
        } else if (c >= 0xC2 && c <= 0xDF) {
            len = 2, min = 0x80, cp = c & 0x1F;
        } else if (c >= 0xE0 && c <= 0xEF) {
            len = 3, min = 0x800, cp = c & 0x0F;
        } else if (c >= 0xF0 && c <= 0xF4) {
            len = 4, min = 0x10000, cp = c & 0x07;
        }
        bool ok = len != 0 && i + len <= s.size();
        for (std::size_t k = 1; ok && k < len; ++k) {
            const auto d = static_cast<unsigned char>(s[i + k]);
            ok = (d & 0xC0) == 0x80;
            cp = (cp << 6) | (d & 0x3F);
        }
        ok = ok && cp >= min && cp <= 0x10FFFF && (cp < 0xD800 || cp > 0xDFFF);
        if (ok) {
            out.append(s.substr(i, len));
            i += len;
        } else {
            out += k_replacement;
            ++i;  // resynchronise on the next byte
        }
    }
    return out;
}

asio::awaitable<Reply> list_builds_route(Context& ctx, Call& call) {
    const auto& req = call.req;
    store::BuildsQuery q;
    const auto state = req.query_param("state");
    if (auto s = one_of(state, "state", names<BuildState>()); !s) co_return s.error();
    if (state) q.state = from_string<BuildState>(*state);
    if (auto sha = req.query_param("sha")) {
        if (!valid_sha(*sha))
            co_return make_error(Errc::bad_request, "sha must be a full 40-character commit SHA");
        std::string lower = *sha;
        for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        q.upstream_sha = lower;
    }
    auto page = page_of(req);
    if (!page) co_return page.error();
    q.limit = page->limit;
    q.before = page->before_id;
    auto query = on_workers(ctx.workers, [db = ctx.db_path, q] { return list_builds(db, q); });
    co_return json_reply(co_await std::move(query));
}

asio::awaitable<Reply> get_build_route(Context& ctx, Call& call) {
    const std::int64_t id = std::stoll(call.params.at(0));
    auto query = on_workers(ctx.workers, [db = ctx.db_path, id] { return get_build(db, id); });
    co_return json_reply(co_await std::move(query));
}

asio::awaitable<Reply> evict_build_route(Context& ctx, Call& call) {
    const std::int64_t id = std::stoll(call.params.at(0));
    if (!ctx.remove_build) {
        co_return make_error(Errc::conflict,
                             "the configuration has no build section: nothing to evict");
    }
    const std::string reason = "evicted by " + call.caller.name;
    // Decided and marked in one writer item, the same rule as the cache's own eviction
    // (BuildsRepo::evictable): ready, and no queued or running job of a run that uses it.
    auto write = store::async_write<Eviction>(
        ctx.writer,
        [id, reason](store::Db& db) {
            store::BuildsRepo builds(db);
            Eviction e;
            auto row = builds.get(id);
            if (!row) return e;
            e.row = *row;
            if (row->state != BuildState::ready) {
                e.kind = Eviction::Kind::not_ready;
            } else if (row->open_jobs > 0) {
                e.kind = Eviction::Kind::needed;
            } else {
                builds.mark_evicted(row->key, reason, std::chrono::system_clock::now());
                e.kind = Eviction::Kind::evicted;
                e.row = builds.get(id).value_or(*row);
            }
            return e;
        },
        asio::use_awaitable);
    auto [err, e] = co_await std::move(write);
    if (err) co_return *err;
    const std::string name = "build " + std::to_string(id);
    switch (e.kind) {
        case Eviction::Kind::not_found:
            co_return make_error(Errc::not_found, "no " + name);
        case Eviction::Kind::not_ready:
            co_return make_error(Errc::conflict, name + " is " +
                                                     std::string(to_string(e.row.state)) +
                                                     ": only a ready build can be evicted");
        case Eviction::Kind::needed:
            co_return make_error(Errc::conflict, name + " is needed by " +
                                                     std::to_string(e.row.open_jobs) +
                                                     " queued or running jobs of its runs");
        case Eviction::Kind::evicted:
            break;
    }
    // The row says evicted (committed): a run that needs the key builds it again. The folder is
    // renamed aside and removed on a worker; it may be large.
    auto removal = on_workers(ctx.workers, [remove = ctx.remove_build, key = e.row.key] {
        remove(key);
        return Result<json>(json());
    });
    (void)co_await std::move(removal);
    spdlog::info("build={} id={} {}", e.row.key.substr(0, 12), id, reason);
    co_return ok_json(build_json(e.row));
}

}  // namespace crcrd::admin
