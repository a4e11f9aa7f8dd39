#include "crcrd/admin/queries.hpp"

#include <variant>
#include <vector>

#include "crcrd/core/crypto.hpp"
#include "crcrd/store/sqlite.hpp"

namespace crcrd::admin {

using nlohmann::json;

namespace {

/// One read-only connection per worker thread and database.
Result<store::Db*> reader(const std::filesystem::path& path) {
    thread_local std::unique_ptr<store::Db> db;
    thread_local std::filesystem::path opened;
    if (!db || opened != path) {
        auto d = store::Db::open(path, store::OpenOptions{true, 5000});
        if (!d) return d.error();
        db = std::move(*d);
        opened = path;
    }
    return db.get();
}

json opt_text(const store::Stmt& st, int col) {
    auto v = st.opt_text(col);
    return v ? json(*v) : json(nullptr);
}
json opt_int(const store::Stmt& st, int col) {
    auto v = st.opt_int64(col);
    return v ? json(*v) : json(nullptr);
}

constexpr const char* k_run_columns =
    "id, event, sha, pr, ref, base_sha, delivery_id, state, conclusion, reason, created_at, finished_at, selection, "
    "base_ref, head_repo";

json run_json(const store::Stmt& st) {
    json sel = nullptr;
    if (auto s = st.opt_text(12)) {
        sel = json::parse(*s, nullptr, false);
        if (sel.is_discarded()) sel = nullptr;
    }
    return {{"id", st.int64(0)},        {"event", st.text(1)},          {"sha", st.text(2)},
            {"pr", opt_int(st, 3)},     {"ref", opt_text(st, 4)},       {"base_sha", opt_text(st, 5)},
            {"delivery_id", opt_text(st, 6)}, {"state", st.text(7)},    {"conclusion", opt_text(st, 8)},
            {"reason", opt_text(st, 9)}, {"created_at", st.text(10)},   {"finished_at", opt_text(st, 11)},
            {"selection", sel},         {"base_ref", opt_text(st, 13)}, {"head_repo", opt_text(st, 14)}};
}

constexpr const char* k_job_columns =
    "id, run_id, tier, state, conclusion, reason, attempt, slot, started_at, finished_at, exit_status, tests, metadata, "
    "timeout_ms, counts, evidence";

json job_json(const store::Stmt& st) {
    json tests = json::parse(st.text(11), nullptr, false);
    json meta = st.is_null(12) ? json::object() : json::parse(st.text(12), nullptr, false);
    if (!meta.is_object()) meta = json::object();
    if (!meta.contains("tests")) meta["tests"] = tests.is_array() ? tests : json::array();
    json counts = st.is_null(14) ? json::object() : json::parse(st.text(14), nullptr, false);
    if (!counts.is_object()) counts = json::object();
    for (const char* k : {"passed", "failed", "skipped", "flaky"})
        if (!counts.contains(k)) counts[k] = 0;
    return {{"id", st.int64(0)},
            {"run_id", st.int64(1)},
            {"tier", st.text(2)},
            {"state", st.text(3)},
            {"conclusion", opt_text(st, 4)},
            {"reason", opt_text(st, 5)},
            {"attempt", st.int64(6)},
            {"slot", opt_text(st, 7)},
            {"started_at", opt_text(st, 8)},
            {"finished_at", opt_text(st, 9)},
            {"exit_status", opt_int(st, 10)},
            {"timeout_s", st.int64(13) / 1000},
            {"tests", counts},
            {"metadata", meta},
            {"evidence", st.is_null(15) ? json(nullptr) : json::parse(st.text(15), nullptr, false)}};
}

constexpr const char* k_outbox_columns =
    "id, sink, run_id, sha, context, state, description, target_url, delivery, attempts, next_attempt_at, last_error, "
    "http_status, created_at, sent_at";

json outbox_json(const store::Stmt& st) {
    return {{"id", st.int64(0)},
            {"sink", st.text(1)},
            {"run_id", st.int64(2)},
            {"sha", st.text(3)},
            {"context", st.text(4)},
            {"state", st.text(5)},
            {"description", st.text(6)},
            {"target_url", opt_text(st, 7)},
            {"delivery", st.text(8)},
            {"attempts", st.int64(9)},
            {"next_attempt_at", opt_text(st, 10)},
            {"last_error", opt_text(st, 11)},
            {"http_status", opt_int(st, 12)},
            {"created_at", st.text(13)},
            {"sent_at", opt_text(st, 14)}};
}

template <class Fn>
Result<json> guarded(Fn fn) {
    try {
        return fn();
    } catch (const store::SqlError& e) {
        return make_error(e.kind(), e.what());
    }
}

}  // namespace

std::string make_cursor(std::int64_t last_id) { return crypto::base64url_encode("id<" + std::to_string(last_id)); }

std::optional<std::int64_t> parse_cursor(const std::string& cursor) {
    std::string padded = cursor;
    for (char& c : padded) {
        if (c == '-') c = '+';
        else if (c == '_') c = '/';
    }
    while (padded.size() % 4) padded.push_back('=');
    auto raw = crypto::base64_decode(padded);
    if (!raw || raw->rfind("id<", 0) != 0) return std::nullopt;
    try {
        std::size_t used = 0;
        auto id = std::stoll(raw->substr(3), &used);
        if (used != raw->size() - 3) return std::nullopt;
        return id;
    } catch (const std::exception&) {
        return std::nullopt;
    }
}

namespace {

/// A WHERE clause built from optional filters, with its values in order.
struct Where {
    std::string sql;
    std::vector<std::variant<std::string, std::int64_t>> args;

    template <class T>
    void add(const std::optional<T>& v, const char* clause) {
        if (!v) return;
        sql += std::string(" AND ") + clause;
        args.emplace_back(*v);
    }
    void bind(store::Stmt& st, int limit) const {
        int i = 1;
        for (const auto& a : args) {
            if (const auto* s = std::get_if<std::string>(&a)) st.bind(i++, *s);
            else st.bind(i++, std::get<std::int64_t>(a));
        }
        st.bind(i, std::int64_t{limit});
    }
};

json page(std::vector<json> items, int limit) {
    json next = nullptr;
    if (static_cast<int>(items.size()) == limit && !items.empty()) next = make_cursor(items.back()["id"].get<std::int64_t>());
    return {{"items", std::move(items)}, {"next_cursor", next}};
}

}  // namespace

Result<json> list_runs(const std::filesystem::path& path, const RunFilter& f) {
    auto db = reader(path);
    if (!db) return db.error();
    return guarded([&]() -> json {
        Where w;
        w.add(f.state, "state = ?");
        w.add(f.conclusion, "conclusion = ?");
        w.add(f.sha, "sha = ?");
        w.add(f.event, "event = ?");
        w.add(f.pr, "pr = ?");
        w.add(f.since, "created_at >= ?");
        w.add(f.until, "created_at < ?");
        w.add(f.page.before_id, "id < ?");
        auto st = (*db)->prepare(std::string("SELECT ") + k_run_columns + " FROM runs WHERE 1=1" + w.sql +
                                 " ORDER BY id DESC LIMIT ?");
        w.bind(st, f.page.limit);
        std::vector<json> items;
        while (st.step()) {
            items.push_back(run_json(st));  // a list item is a run without jobs and statuses
        }
        return page(std::move(items), f.page.limit);
    });
}

Result<json> get_run(const std::filesystem::path& path, std::int64_t id) {
    auto db = reader(path);
    if (!db) return db.error();
    return guarded([&]() -> Result<json> {
        auto st = (*db)->prepare(std::string("SELECT ") + k_run_columns + " FROM runs WHERE id = ?");
        st.bind(1, id);
        if (!st.step()) return make_error("not_found", "no run " + std::to_string(id));
        json run = run_json(st);
        auto jobs = (*db)->prepare(std::string("SELECT ") + k_job_columns + " FROM jobs WHERE run_id = ? ORDER BY position, attempt");
        jobs.bind(1, id);
        json list = json::array();
        while (jobs.step()) list.push_back(job_json(jobs));
        run["jobs"] = std::move(list);
        // The newest status of each context and sink, in the order they were first reported.
        auto statuses = (*db)->prepare(std::string("SELECT ") + k_outbox_columns +
                                       " FROM outbox o WHERE run_id = ? AND sink <> 'callback' AND id = "
                                       "(SELECT max(id) FROM outbox n WHERE n.run_id = o.run_id AND n.sink = o.sink "
                                       "AND n.context = o.context) ORDER BY sink, "
                                       "(SELECT min(id) FROM outbox f WHERE f.run_id = o.run_id AND f.sink = o.sink "
                                       "AND f.context = o.context)");
        statuses.bind(1, id);
        json sl = json::array();
        while (statuses.step()) sl.push_back(outbox_json(statuses));
        run["statuses"] = std::move(sl);
        return run;
    });
}

Result<json> list_deliveries(const std::filesystem::path& path, const DeliveryFilter& f) {
    auto db = reader(path);
    if (!db) return db.error();
    return guarded([&]() -> json {
        Where w;
        w.add(f.verdict, "verdict = ?");
        w.add(f.page.before_id, "id < ?");
        auto st = (*db)->prepare(
            "SELECT id, delivery_id, received_at, scheme, event, verdict, http_status, reason, run_id, crcr_delivery_id, "
            "run_ids FROM deliveries WHERE 1=1" + w.sql + " ORDER BY id DESC LIMIT ?");
        w.bind(st, f.page.limit);
        std::vector<json> items;
        while (st.step()) {
            json run_ids = st.is_null(10) ? json::array() : json::parse(st.text(10), nullptr, false);
            items.push_back({{"id", st.int64(0)},
                             {"delivery_id", opt_text(st, 1)},
                             {"received_at", st.text(2)},
                             {"scheme", opt_text(st, 3)},
                             {"event", opt_text(st, 4)},
                             {"verdict", st.text(5)},
                             {"http_status", st.int64(6)},
                             {"reason", opt_text(st, 7)},
                             {"run_id", opt_int(st, 8)},
                             {"crcr_delivery_id", opt_text(st, 9)},
                             {"run_ids", run_ids}});
        }
        return page(std::move(items), f.page.limit);
    });
}

Result<json> list_outbox(const std::filesystem::path& path, const OutboxFilter& f) {
    auto db = reader(path);
    if (!db) return db.error();
    return guarded([&]() -> json {
        Where w;
        w.add(f.state, "delivery = ?");
        w.add(f.sink, "sink = ?");
        w.add(f.run_id, "run_id = ?");
        w.add(f.page.before_id, "id < ?");
        auto st = (*db)->prepare(std::string("SELECT ") + k_outbox_columns + " FROM outbox WHERE 1=1" + w.sql +
                                 " ORDER BY id DESC LIMIT ?");
        w.bind(st, f.page.limit);
        std::vector<json> items;
        while (st.step()) items.push_back(outbox_json(st));
        return page(std::move(items), f.page.limit);
    });
}

Result<json> get_job(const std::filesystem::path& path, std::int64_t id) {
    auto db = reader(path);
    if (!db) return db.error();
    return guarded([&]() -> Result<json> {
        auto st = (*db)->prepare(std::string("SELECT ") + k_job_columns + " FROM jobs WHERE id = ?");
        st.bind(1, id);
        if (!st.step()) return make_error("not_found", "no job " + std::to_string(id));
        return job_json(st);
    });
}

Result<std::string> job_log_path(const std::filesystem::path& path, std::int64_t id) {
    auto db = reader(path);
    if (!db) return db.error();
    try {
        auto st = (*db)->prepare("SELECT log_path FROM jobs WHERE id = ?");
        st.bind(1, id);
        if (!st.step()) return make_error("not_found", "no job " + std::to_string(id));
        if (st.is_null(0)) return make_error("not_found", "job " + std::to_string(id) + " has no log yet");
        return st.text(0);
    } catch (const store::SqlError& e) {
        return make_error(e.kind(), e.what());
    }
}

Result<json> list_tests(const std::filesystem::path& path, std::int64_t job, const std::optional<std::string>& outcome,
                        const Page& p) {
    auto db = reader(path);
    if (!db) return db.error();
    return guarded([&]() -> json {
        Where w;
        w.add(std::optional<std::int64_t>(job), "job_id = ?");
        w.add(outcome, "outcome = ?");
        w.add(p.before_id, "rowid < ?");
        auto st = (*db)->prepare("SELECT rowid, name, outcome, duration_s, message FROM test_results WHERE 1=1" + w.sql +
                                 " ORDER BY rowid DESC LIMIT ?");
        w.bind(st, p.limit);
        std::vector<json> items;
        while (st.step()) {
            items.push_back({{"id", st.int64(0)},
                             {"name", st.text(1)},
                             {"outcome", st.text(2)},
                             {"duration_s", st.real(3)},
                             {"message", opt_text(st, 4)}});
        }
        return page(std::move(items), p.limit);
    });
}

Result<json> list_slots(const std::filesystem::path& path) {
    auto db = reader(path);
    if (!db) return db.error();
    return guarded([&]() -> json {
        auto st = (*db)->prepare("SELECT name, state, drained, job_id, last_health FROM slots ORDER BY name");
        json items = json::array();
        while (st.step()) {
            std::string state = st.text(1);
            if (st.int64(2) && state == "idle") state = "drained";
            json health = st.is_null(4) ? json(nullptr) : json::parse(st.text(4), nullptr, false);
            items.push_back({{"name", st.text(0)}, {"state", state}, {"drained", st.int64(2) != 0},
                             {"job_id", opt_int(st, 3)}, {"last_health", health}});
        }
        return items;
    });
}

Result<json> list_recovery(const std::filesystem::path& path, int limit) {
    auto opened = reader(path);
    if (!opened) return opened.error();
    auto& db = **opened;
    return guarded([&]() -> json {
        json items = json::array();
        auto st = db.prepare(
            "SELECT id, started_at, finished_at, since, listed, failed, redelivered, errors FROM recovery_passes "
            "ORDER BY id DESC LIMIT ?");
        st.bind(1, std::int64_t{limit});
        while (st.step()) {
            items.push_back({{"id", st.int64(0)}, {"started_at", st.text(1)}, {"finished_at", st.text(2)},
                             {"since", st.text(3)}, {"listed", st.int64(4)}, {"failed", st.int64(5)},
                             {"redelivered", st.int64(6)}, {"errors", json::parse(st.text(7), nullptr, false)}});
        }
        auto wm = db.prepare("SELECT value FROM meta WHERE key = 'recovery_watermark'");
        json watermark = wm.step() ? json(wm.text(0)) : json(nullptr);
        return json{{"items", items}, {"watermark", watermark}};
    });
}

}  // namespace crcrd::admin
