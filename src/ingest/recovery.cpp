#include "crcrd/ingest/recovery.hpp"

#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include <functional>
#include <map>
#include <set>

#include "crcrd/core/files.hpp"
#include "crcrd/core/time.hpp"
#include "crcrd/github/auth.hpp"
#include "crcrd/github/client.hpp"
#include "crcrd/store/recovery.hpp"

namespace crcrd::ingest {

using nlohmann::json;
using std::chrono::system_clock;

namespace {

/// The overlap between passes: a delivery still in flight when a pass started is listed by
/// the next one (guids seen twice are skipped by the checks above).
constexpr auto k_overlap = std::chrono::minutes(10);
constexpr int k_max_pages = 100;  // 10,000 deliveries: more than 3 days of a busy hook

/// GitHub's "2019-06-03T00:57:16Z" as crcrd stores times ("...:16.000Z"), for comparisons.
std::string normal_time(const std::string& t) {
    auto p = parse_rfc3339(t);
    return p ? rfc3339(*p) : t;
}

struct PassRecord {
    std::string started_at, since;
    std::int64_t listed = 0, failed = 0, redelivered = 0;
    std::vector<std::string> errors;
    bool listed_all = false;
};

/// The value of a read on the pass's connection. A failed read ends the pass with the storage
/// error's message (the loop logs it; the next pass opens a new connection).
template <class T>
T or_throw(Result<T> r) {
    if (!r) throw std::runtime_error(r.error().message);
    return std::move(r).value();
}

}  // namespace

std::vector<std::pair<std::string, std::int64_t>> to_redeliver(
    const std::vector<HookDelivery>& deliveries,
    const std::function<bool(const std::string&)>& accepted,
    const std::function<bool(const std::string&)>& redelivered) {
    struct Group {
        bool succeeded = false;
        std::int64_t newest = 0;
        std::string newest_at;
    };
    std::map<std::string, Group> groups;
    for (const auto& d : deliveries) {
        if (d.guid.empty()) continue;
        auto& g = groups[d.guid];
        if (d.status_code >= 200 && d.status_code < 300) g.succeeded = true;
        if (g.newest == 0 || d.delivered_at > g.newest_at ||
            (d.delivered_at == g.newest_at && d.id > g.newest)) {
            g.newest = d.id;
            g.newest_at = d.delivered_at;
        }
    }
    std::vector<std::pair<std::string, std::int64_t>> out;
    for (const auto& [guid, g] : groups) {
        if (g.succeeded || accepted(guid) || redelivered(guid)) continue;
        out.emplace_back(guid, g.newest);
    }
    return out;
}

Recovery::Recovery(store::Writer& writer, std::filesystem::path db_path, RecoverySettings settings,
                   const core::Clock& clock)
    : m_writer(writer),
      m_db_path(std::move(db_path)),
      m_clock(clock),
      m_settings(std::move(settings)) {}

Recovery::~Recovery() {
    stop();
}

void Recovery::start() {
    m_loop.start();
}

void Recovery::run_now() {
    m_loop.notify();
}

void Recovery::set_settings(RecoverySettings settings) {
    std::lock_guard lk(m_mu);
    m_settings = std::move(settings);
}

void Recovery::stop() {
    m_loop.stop();
}

namespace {

/// The deliveries path's prefix: the App's own hook, or the repository's hook.
std::string hook_path(const RecoverySettings& s) {
    return s.recovery.app
               ? "/app/hook"
               : "/repos/" + s.recovery.repo + "/hooks/" + std::to_string(s.recovery.hook_id);
}

/// Credentials: the App's JWT for its own hook, else the statuses' token (file or App
/// installation token) for a repository hook.
Result<std::string> hook_token(const RecoverySettings& s, SystemTime started) {
    Result<std::string> token = make_error(Errc::auth, "no credentials");
    if (s.recovery.app) {
        auto pem = read_file(s.github.private_key_file.value_or(""), 1 << 20);
        token = pem ? github::make_app_jwt(s.github.app_id.value_or(0), *pem, started)
                    : Result<std::string>(pem.error());
    } else {
        github::Auth auth(s.github, s.timeout);
        token = auth.token();
    }
    return token;
}

/// One element of GitHub's deliveries list.
HookDelivery parse_delivery(const json& d) {
    HookDelivery hd;
    hd.id = d.value("id", std::int64_t{0});
    hd.guid = d.value("guid", std::string());
    hd.delivered_at = normal_time(d.value("delivered_at", std::string()));
    hd.status_code = d.contains("status_code") && d["status_code"].is_number_integer()
                         ? d["status_code"].get<int>()
                         : 0;
    return hd;
}

/// Notes in rec.errors why the deliveries list could not be read to its end.
void note_list_error(PassRecord& rec, const github::ListError& e, const std::string& hook,
                     const github::Client& client) {
    using Kind = github::ListError::Kind;
    switch (e.kind) {
        case Kind::transport:
            rec.errors.push_back("GET " + hook + "/deliveries: " + e.message);
            break;
        case Kind::status:
            // 403/429 are GitHub's rate limits: this pass ends, the next one tries again.
            rec.errors.push_back("GET " + hook + "/deliveries answered " +
                                 std::to_string(e.status) + ": " + e.body.substr(0, 200));
            break;
        case Kind::not_a_list:
            rec.errors.push_back("GET " + hook + "/deliveries: not a list");
            break;
        case Kind::foreign_next:
            rec.errors.push_back("the Link header's next page is not on " + client.base() +
                                 "; not followed");
            break;
    }
}

/// The deliveries since rec.since, newest first; sets rec's listed, listed_all and errors.
std::vector<HookDelivery> list_deliveries(github::Client& client, const std::string& hook,
                                          PassRecord& rec) {
    std::vector<HookDelivery> seen;
    bool reached_watermark = false;
    auto listed = client.list(
        hook + "/deliveries?per_page=100", k_max_pages, [&](const nlohmann::json& page) {
            for (const auto& d : page) {
                if (!d.is_object()) continue;
                HookDelivery hd = parse_delivery(d);
                if (hd.delivered_at < rec.since) {
                    reached_watermark = true;  // newest first: the rest is older still
                    continue;
                }
                seen.push_back(std::move(hd));
            }
            return !reached_watermark;
        });
    if (const auto& e = listed.error) note_list_error(rec, *e, hook, client);
    rec.listed = static_cast<std::int64_t>(seen.size());
    rec.listed_all = rec.errors.empty() && (reached_watermark || listed.exhausted);
    return seen;
}

/// How many guids had no successful delivery among `seen`.
std::int64_t count_failed(const std::vector<HookDelivery>& seen) {
    std::set<std::string> failed_guids;
    {
        std::map<std::string, bool> ok;
        for (const auto& d : seen)
            ok[d.guid] = ok[d.guid] || (d.status_code >= 200 && d.status_code < 300);
        for (const auto& [g, succeeded] : ok)
            if (!succeeded) failed_guids.insert(g);
    }
    return static_cast<std::int64_t>(failed_guids.size());
}

/// Asks GitHub to redeliver each of `wanted` and records each one it accepted.
void redeliver(github::Client& client, const std::string& hook,
               const std::vector<std::pair<std::string, std::int64_t>>& wanted,
               store::Writer& writer, const core::Clock& clock, PassRecord& rec) {
    for (const auto& [guid, id] : wanted) {
        auto r = client.post(hook + "/deliveries/" + std::to_string(id) + "/attempts", "");
        if (!r || (r->status != 202 && r->status != 200 && r->status != 201)) {
            rec.errors.push_back(
                "redelivery of " + guid + ": " +
                (r ? "answered " + std::to_string(r->status) + ": " + r->body.substr(0, 200)
                   : r.error().message));
            if (r && (r->status == 403 || r->status == 429)) break;  // rate limited: the next pass
            continue;
        }
        ++rec.redelivered;
        auto s2 = writer.run_sync([&, guid = guid, id = id](store::Db& w) {
            store::RecoveryRepo(w).record_redelivery(guid, id, clock.now_text());
        });
        if (!s2)
            rec.errors.push_back("recording the redelivery of " + guid + ": " + s2.error().message);
        spdlog::info("recovery: asked GitHub to redeliver delivery_id={} (its delivery {})", guid,
                     id);
    }
}

/// Stores the pass; the watermark moves only after a pass that listed everything since the
/// last one.
void record_pass(store::Writer& writer, const core::Clock& clock, const PassRecord& rec,
                 const std::string& watermark) {
    auto st = writer.run_sync([&](store::Db& w) {
        store::RecoveryPassRecord record;
        record.started_at = rec.started_at;
        record.finished_at = clock.now_text();
        record.since = rec.since;
        record.listed = rec.listed;
        record.failed = rec.failed;
        record.redelivered = rec.redelivered;
        record.errors_json = json(rec.errors).dump();
        // Passes are kept for a month of history at the default interval (the newest 5,000).
        const bool moved = rec.listed_all && watermark > rec.since;
        store::RecoveryRepo(w).record_pass(
            record, moved ? std::optional<std::string>(watermark) : std::nullopt);
    });
    if (!st) spdlog::error("recovery: pass not recorded: {}", st.error().message);
}

}  // namespace

void Recovery::pass() {
    RecoverySettings s;
    {
        std::lock_guard lk(m_mu);
        s = m_settings;
    }
    PassRecord rec;
    const auto started = m_clock.now();
    rec.started_at = rfc3339(started);
    auto reads = store::RecoveryReads::open(m_db_path);
    if (!reads) throw std::runtime_error(reads.error().message);
    {
        const auto wm = or_throw(reads->watermark());
        rec.since = wm ? *wm : rfc3339(started - s.recovery.lookback);
    }
    std::string base = s.github.api_url;
    const std::string hook = hook_path(s);
    Result<std::string> token = hook_token(s, started);
    if (!token) {
        rec.errors.push_back("credentials: " + token.error().message);
    } else {
        github::Client client(base, *token, s.github.ca_file, s.timeout);
        const std::vector<HookDelivery> seen = list_deliveries(client, hook, rec);
        rec.failed = count_failed(seen);
        // What crcrd accepted and what it asked for before.
        auto wanted = to_redeliver(
            seen, [&](const std::string& g) { return or_throw(reads->accepted(g)); },
            [&](const std::string& g) { return or_throw(reads->redelivered(g)); });
        redeliver(client, hook, wanted, m_writer, m_clock, rec);
    }
    const std::string watermark = rfc3339(started - k_overlap);
    record_pass(m_writer, m_clock, rec, watermark);
    auto level = rec.errors.empty() ? spdlog::level::info : spdlog::level::warn;
    spdlog::log(level, "recovery: pass since {}: {} deliveries listed, {} failed, {} redelivered{}",
                rec.since, rec.listed, rec.failed, rec.redelivered,
                rec.errors.empty() ? "" : ", errors: " + json(rec.errors).dump());
}

}  // namespace crcrd::ingest
