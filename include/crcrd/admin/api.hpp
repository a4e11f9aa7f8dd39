#pragma once
// The admin REST API under /api/v1 (docs/operations.md): bearer tokens, a route table (method,
// path, admin-only, handler; src/admin/api.cpp) with one handler per resource and action
// (src/admin/*_routes.cpp) and one error mapper. Reads run on a worker pool, never on the
// network threads; writes go through the Writer.

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "crcrd/admin/metrics.hpp"
#include "crcrd/config/config.hpp"
#include "crcrd/http/message.hpp"
#include "crcrd/http/reject_log.hpp"
#include "crcrd/store/writer.hpp"

namespace crcrd::admin {

struct Context;
class Dashboard;

class Api {
  public:
    /// `workers` runs the blocking reads (a thread pool's executor).
    Api(std::filesystem::path db_path, std::vector<config::AdminToken> tokens,
        boost::asio::any_io_executor workers, store::Writer& writer);
    ~Api();

    /// SIGHUP: tokens replaced for requests that start afterwards.
    void set_tokens(std::vector<config::AdminToken> tokens);
    /// The configured runner slots (their labels are served with each slot's state).
    void set_runners(std::vector<config::RunnerConfig> runners);

    /// admin.metrics_public: /metrics without a token.
    void set_metrics_public(bool open);
    /// The rules file's tiers, in order: what a manual run may ask for.
    void set_tiers(std::vector<std::string> tiers);
    /// POST /api/v1/recovery/run starts a pass through this (unset: recovery is off, 409).
    void on_recovery_run(std::function<void()> fn) { m_on_recovery_run = std::move(fn); }

    /// GET /api/v1/runners adds what this returns as "cluster" (the Slurm executor's nodes).
    /// It blocks; it runs on the workers. Set before serving.
    void on_cluster(std::function<nlohmann::json()> fn) { m_cluster = std::move(fn); }
    /// GET /api/v1/outbox and /metrics add what this returns (an array of the reporting lanes'
    /// states, each with "sink"). Quick, never blocking. Set before serving.
    void on_outbox_lanes(std::function<nlohmann::json()> fn) { m_outbox_lanes = std::move(fn); }

    /// The build stage's cache (docs/build.md): POST /api/v1/builds/{id}/evict removes a
    /// build's folder through `remove` (given the key; blocking, run on the workers). Unset (no
    /// build section): an eviction is refused with 409. Replaced on SIGHUP.
    void set_build_cache(std::function<void(const std::string& key)> remove);

    /// Trunk health (docs/dashboard.md): the branches of the trunk grid (bisect.refs, the first
    /// the default) and where the commits' subjects come from (`commits`: {sha: {subject, author,
    /// committed_at}} for the SHAs the mirror has; blocking, run on the workers; unset: none).
    /// Replaced on SIGHUP.
    void set_trunk(std::vector<std::string> refs,
                   std::function<nlohmann::json(const std::vector<std::string>&)> commits);

    /// The dashboard (/ui/): `ui_public` makes its pages readable without a token; commits and
    /// PRs link to github.com/`upstream_repo` (no links when empty).
    void set_ui(bool ui_public, const std::string& upstream_repo);

    /// The counters and histograms /metrics serves; the daemon feeds them (the writer's
    /// events, each request's latency).
    Metrics& metrics_registry() { return m_metrics; }

    /// A bounded label for a request's path: the route pattern it matches
    /// ("/api/v1/runs/{id}", "/metrics"), or "other" for a path no route has.
    static std::string route_label(const std::string& path);

    /// True for paths this API answers: everything under /api/, /metrics, and the dashboard
    /// under /ui.
    static bool owns(const std::string& path);

    /// The dashboard's pages for /ui paths (HTML, src/admin/ui.cpp). Otherwise the JSON API:
    /// 401 without a valid token, 403 for a read token on an admin route, 404/405/400 as
    /// usual.
    boost::asio::awaitable<http::Response> handle(http::Request& req);

    /// The summary lines of refused requests (401, 403) that were counted rather than logged
    /// one by one, once their minute ended (docs/operations.md). Called by a timer.
    void flush_refused_log();

  private:
    /// GET /metrics: open with admin.metrics_public, else for any valid token.
    boost::asio::awaitable<http::Response> metrics(bool authenticated, const std::string& method);
    std::shared_ptr<const std::vector<config::AdminToken>> tokens() const;
    /// What a handler sees of this API now (tiers and runners as the last reload left them).
    Context context();
    /// One warn line for a refused request (401 or 403) with the client address, the route and
    /// why; never the token. The first per address and minute, the rest counted
    /// (flush_refused_log).
    void log_refused(const http::Request& req, int status, const std::string& token_name = {});

    std::filesystem::path m_db_path;
    mutable std::mutex m_mu;
    std::shared_ptr<const std::vector<config::AdminToken>> m_tokens;
    std::shared_ptr<const std::vector<config::RunnerConfig>> m_runners =
        std::make_shared<const std::vector<config::RunnerConfig>>();
    boost::asio::any_io_executor m_workers;
    store::Writer& m_writer;
    bool m_metrics_public = false;
    std::shared_ptr<const std::vector<std::string>> m_tiers =
        std::make_shared<const std::vector<std::string>>();
    std::function<void()> m_on_recovery_run;
    std::function<nlohmann::json()> m_cluster;
    std::function<nlohmann::json()> m_outbox_lanes;
    std::function<void(const std::string& key)> m_remove_build;  // under m_mu
    std::shared_ptr<const std::vector<std::string>> m_trunk_refs =
        std::make_shared<const std::vector<std::string>>();                    // under m_mu
    std::function<nlohmann::json(const std::vector<std::string>&)> m_commits;  // under m_mu
    std::unique_ptr<Dashboard> m_ui;
    http::RejectLog m_refused{std::chrono::seconds(60), 10'000, "failed admin authentications"};
    Metrics m_metrics;
};

}  // namespace crcrd::admin
