// GET /api/v1/trunk, /api/v1/tests/{name}/history and /api/v1/tests?flaky=1 (docs/dashboard.md,
// docs/operations.md): trunk health for scripts, and for the dashboard's pages that render it.
#include <algorithm>
#include <cctype>

#include "crcrd/store/admin_reads.hpp"
#include "routes.hpp"
#include "trunk.hpp"

namespace crcrd::admin {

namespace asio = boost::asio;
using nlohmann::json;

namespace {

/// How far back "red since" looks for the end of a streak.
constexpr int k_streak_runs = 1000;
/// The outcomes read at a time while looking for it.
constexpr int k_streak_step = 20;
/// The flaky results the flaky list reads, and the tests of them it ranks.
constexpr int k_flaky_results = 1000;
constexpr std::size_t k_flaky_names = 100;
/// The runs a test's flaky rate in the flaky list is taken over.
constexpr int k_flaky_window = 50;

/// A test's rows enough for `limit` runs: a run's tier has one row per attempt (reruns).
int rows_for(int limit) {
    return limit * 4;
}

/// "red_since": each column whose newest telling outcome on the ref is a regression, with the
/// culprit of a bisection of that streak when one found it.
Result<json> red_since_json(store::AdminReads& db, const std::string& ref, const json& tiers,
                            const store::TrunkPage& page) {
    json out = json::array();
    if (page.runs.empty()) return out;
    for (const auto& t : tiers) {
        const std::string tier = t.get<std::string>();
        // Read back a few runs at a time until the streak ends: a green tier costs one read.
        std::vector<store::TierOutcome> outcomes;
        for (std::int64_t from = page.runs.front().id;
             static_cast<int>(outcomes.size()) < k_streak_runs;) {
            auto more = db.tier_outcomes(ref, tier, from, k_streak_step);
            if (!more) return more.error();
            outcomes.insert(outcomes.end(), more->begin(), more->end());
            // Fewer runs than asked: the ref has no more (however many attempts a run has).
            if (static_cast<int>(more->size()) < k_streak_step || streak_ends(outcomes)) break;
            from = more->back().run_id - 1;
        }
        auto red = red_since(outcomes);
        if (!red) continue;
        // The streak's bisections wherever its runs are, not only those of this page's runs.
        auto bisections = db.bisections_of_runs(red->run_ids);
        if (!bisections) return bisections.error();
        const auto culprit = streak_culprit(*red, tier, *bisections);
        out.push_back({{"tier", tier},
                       {"run_id", red->run_id},
                       {"sha", red->sha},
                       {"runs", red->runs},
                       {"culprit", culprit ? json(*culprit) : json(nullptr)}});
    }
    return out;
}

struct TrunkAsk {
    std::string ref;
    std::vector<std::string> refs;
    store::TrunkQuery query;
    std::vector<std::string> tiers;
};

/// The page without the commits' subjects (the mirror is asked apart, off the database).
Result<std::pair<json, std::vector<std::string>>> read_trunk(const std::filesystem::path& path,
                                                             const TrunkAsk& a) {
    auto db = store::AdminReads::for_this_thread(path);
    if (!db) return db.error();
    auto page = db->trunk(a.query);
    if (!page) return page.error();
    json body = trunk_json(*page, a.tiers, json::object());
    body["ref"] = a.ref;
    body["refs"] = a.refs;
    body["red_since"] = json::array();
    if (!a.query.before_id) {  // the state of trunk now: only the first page says it
        auto red = red_since_json(*db, a.ref, body["tiers"], *page);
        if (!red) return red.error();
        body["red_since"] = std::move(*red);
    }
    body["next_cursor"] = nullptr;
    if (!page->runs.empty() && static_cast<int>(page->runs.size()) == a.query.limit)
        body["next_cursor"] = make_cursor(page->runs.back().id);
    std::vector<std::string> shas;
    for (const auto& r : page->runs) shas.push_back(r.sha);
    return std::make_pair(std::move(body), std::move(shas));
}

/// `s` with every %XX decoded (a test's name in a path segment); nullopt for a broken escape.
std::optional<std::string> path_decoded(const std::string& s) {
    std::string out;
    for (std::size_t i = 0; i < s.size(); ++i) {
        if (s[i] != '%') {
            out += s[i];
            continue;
        }
        if (i + 2 >= s.size() || !std::isxdigit(static_cast<unsigned char>(s[i + 1])) ||
            !std::isxdigit(static_cast<unsigned char>(s[i + 2])))
            return std::nullopt;
        out += static_cast<char>(std::stoi(s.substr(i + 1, 2), nullptr, 16));
        i += 2;
    }
    return out;
}

Result<json> read_history(const std::filesystem::path& path, const std::string& name, int limit) {
    auto db = store::AdminReads::for_this_thread(path);
    if (!db) return db.error();
    auto rows = db->test_results_of(name, std::nullopt, rows_for(limit));
    if (!rows) return rows.error();
    if (rows->empty()) return make_error(Errc::not_found, "no results of a test named " + name);
    return test_history_json(name, *rows, limit);
}

/// The flakiest tests among those with a flaky result lately: by flaky rate over their last
/// k_flaky_window runs, then the newest flaky result.
Result<json> read_flaky(const std::filesystem::path& path, int limit) {
    auto db = store::AdminReads::for_this_thread(path);
    if (!db) return db.error();
    auto names = db->recent_flaky(k_flaky_results);
    if (!names) return names.error();
    std::vector<std::pair<json, std::int64_t>> ranked;  // item, its newest flaky job
    for (std::size_t i = 0; i < names->size() && i < k_flaky_names; ++i) {
        const auto& n = (*names)[i];
        // The test's last runs from the roll-up (migration 23): a few clustered rows, where
        // its history would read up to 200 results and their jobs, each on a page of its own.
        auto window = db->flaky_window(n.name, k_flaky_window);
        if (!window) return window.error();
        ranked.emplace_back(flaky_item(n.name, *window), n.last_job_id);
    }
    std::stable_sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) {
        const double ra = a.first["flaky_rate"].template get<double>();
        const double rb = b.first["flaky_rate"].template get<double>();
        return ra != rb ? ra > rb : a.second > b.second;
    });
    json items = json::array();
    for (std::size_t i = 0; i < ranked.size() && static_cast<int>(i) < limit; ++i)
        items.push_back(std::move(ranked[i].first));
    return json{{"items", std::move(items)}, {"window", k_flaky_window}};
}

}  // namespace

asio::awaitable<Reply> trunk_route(Context& ctx, Call& call) {
    TrunkAsk a;
    for (const auto& r : *ctx.trunk_refs) a.refs.push_back(full_ref(r));
    if (a.refs.empty()) a.refs.push_back("refs/heads/main");
    a.ref = a.refs.front();
    if (auto ref = call.req.query_param("ref"); ref && !ref->empty()) {
        a.ref = full_ref(*ref);
        if (std::find(a.refs.begin(), a.refs.end(), a.ref) == a.refs.end()) {
            std::string known;
            for (const auto& r : a.refs) known += (known.empty() ? "" : ", ") + r;
            co_return make_error(Errc::bad_request,
                                 "ref must be one of bisect.refs (" + known + "), not " + *ref);
        }
    }
    auto page = page_of(call.req);
    if (!page) co_return page.error();
    a.query = {a.ref, page->limit, page->before_id};
    a.tiers = *ctx.tiers;
    auto query = on_workers(ctx.workers, [db = ctx.db_path, a]() -> Result<json> {
        auto r = read_trunk(db, a);
        if (!r) return r.error();
        return json{{"body", std::move(r->first)}, {"shas", std::move(r->second)}};
    });
    auto read = co_await std::move(query);
    if (!read) co_return read.error();
    json body = std::move((*read)["body"]);
    if (ctx.commits && !(*read)["shas"].empty()) {
        // Subjects and authors from the mirror (git, cached), on the workers too.
        auto lookup = on_workers(ctx.workers, [fn = ctx.commits, shas = (*read)["shas"]] {
            return Result<json>(fn(shas.get<std::vector<std::string>>()));
        });
        auto info = co_await std::move(lookup);
        if (info && info->is_object()) {
            for (auto& row : body["rows"]) {
                const json c = info->value(row["sha"].get<std::string>(), json::object());
                for (const char* k : {"subject", "author", "committed_at"})
                    if (c.contains(k)) row[k] = c[k];
            }
        }
    }
    co_return ok_json(body);
}

asio::awaitable<Reply> test_history_route(Context& ctx, Call& call) {
    auto name = path_decoded(call.params.at(0));
    if (!name || name->empty())
        co_return make_error(Errc::bad_request, "the test's name is not a valid path segment");
    auto limit = int_param(call.req, "limit", 1, 200);
    if (!limit) co_return limit.error();
    auto query = on_workers(
        ctx.workers, [db = ctx.db_path, n = *name, l = static_cast<int>(limit->value_or(50))] {
            return read_history(db, n, l);
        });
    co_return json_reply(co_await std::move(query));
}

asio::awaitable<Reply> list_tests_route(Context& ctx, Call& call) {
    if (call.req.query_param("flaky") != "1") {
        co_return make_error(Errc::bad_request,
                             "flaky=1 is required: the list is of flaky tests (a test's results "
                             "are at /api/v1/tests/{name}/history)");
    }
    auto limit = int_param(call.req, "limit", 1, 200);
    if (!limit) co_return limit.error();
    auto query =
        on_workers(ctx.workers, [db = ctx.db_path, l = static_cast<int>(limit->value_or(50))] {
            return read_flaky(db, l);
        });
    co_return json_reply(co_await std::move(query));
}

}  // namespace crcrd::admin
