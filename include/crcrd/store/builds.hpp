#pragma once
// The `builds` table (docs/build.md): one row per build key, the single flight that every run
// and tier with that key waits on, and the cache's bookkeeping (size, last use, eviction). The
// writer-side calls run inside a writer item; the reads (`get`, `list`) also run on a
// read-only connection.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "crcrd/core/time.hpp"
#include "crcrd/core/vocab.hpp"
#include "crcrd/store/fwd.hpp"

namespace crcrd::store {

struct BuildRow {
    std::int64_t id = 0;
    std::string key;
    BuildState state = BuildState::queued;
    std::string upstream_sha;
    std::string backend_sha;
    std::optional<std::int64_t> job_id;  // the attempt building it now, or the last one
    std::int64_t attempts = 0;
    std::optional<std::int64_t> size_bytes;
    std::string reason;
    std::optional<Conclusion> conclusion;  // a failed build's class
    std::string created_at;
    std::optional<std::string> started_at;
    std::optional<std::string> finished_at;
    std::optional<std::string> last_used_at;
    std::int64_t runs = 0;       // runs whose build job names this key
    std::int64_t open_jobs = 0;  // their queued, leased or running jobs (they need it)

    /// It failed to build with a verdict of its own (regression or pre_existing), not for
    /// want of a machine: what a build compared with it as its base learns (docs/build.md).
    bool fails_to_build() const {
        return state == BuildState::failed &&
               (conclusion == Conclusion::regression || conclusion == Conclusion::pre_existing);
    }
};

/// What a run's build job does about its key (BuildsRepo::claim).
enum class BuildClaim {
    ready,  // published: the job passes at once (a cache hit)
    wait,   // another job is building it: the job waits, holding no slot
    build,  // this job builds it
};

/// A filter and page of GET /api/v1/builds: newest first, ids below `before`.
struct BuildsQuery {
    std::optional<BuildState> state = {};
    std::optional<std::string> upstream_sha = {};
    std::int64_t limit = 50;
    std::optional<std::int64_t> before = {};
};

class BuildsRepo {
  public:
    explicit BuildsRepo(Db& db) noexcept : m_db(db) {}

    /// Build job `job_id` (of a run at `upstream_sha`) needs the build `key`: records the key
    /// on the job and decides. A new key, or one that failed or was evicted, or one whose
    /// builder ended without a result (cancelled, retried as another job): this job builds it
    /// (queued). A key being built by another open job: wait. A ready key: its last use is
    /// `now`.
    BuildClaim claim(const std::string& key, const std::string& upstream_sha,
                     const std::string& backend_sha, std::int64_t job_id, SystemTime now);
    /// The builder's attempt started.
    void mark_running(const std::string& key, std::int64_t job_id, SystemTime now);
    /// Published at `<cache_dir>/<key>/` with `size_bytes`.
    void mark_ready(const std::string& key, std::int64_t size_bytes, SystemTime now);
    /// The build failed for good (no attempt left) with `reason`, as `conclusion`.
    void mark_failed(const std::string& key, const std::string& reason, SystemTime now,
                     std::optional<Conclusion> conclusion = std::nullopt);
    /// Its folder was removed (LRU, an operator, or found gone at start).
    void mark_evicted(const std::string& key, const std::string& reason, SystemTime now);
    /// The queued build jobs other than `except` that wait on `key` (not base checks: those
    /// judge a failed base themselves).
    std::vector<std::int64_t> waiting_jobs(const std::string& key, std::int64_t except);
    /// The key of run `run_id`'s build, once its build job passed.
    std::optional<std::string> key_of_run(std::int64_t run_id);
    /// What a run's build is compared with when it fails (docs/build.md): a PR's base SHA; a
    /// push's or a scheduled run's, the SHA of the newest earlier push or scheduled run of its
    /// ref at another SHA. nullopt for other runs or when there is none.
    std::optional<std::string> base_of_run(std::int64_t run_id);
    /// The build job `job_id` makes or waits on.
    std::optional<std::string> key_of_job(std::int64_t job_id);
    /// Ready builds, least recently used first, that no open job needs.
    std::vector<BuildRow> evictable();
    /// The bytes of every ready build.
    std::int64_t ready_bytes();
    /// Every ready build (at start-up: is its folder still there?).
    std::vector<BuildRow> ready();
    /// The newest ready builds of `backend_sha` other than `key`, newest first, at most `limit`
    /// (the candidates for CRCR_BUILD_NEAREST).
    std::vector<BuildRow> ready_of_backend(const std::string& backend_sha, const std::string& key,
                                           int limit = 20);
    /// Builds whose builder attempt was running when the daemon stopped: back to queued, but
    /// the keys in `except` (their builders go on outside the daemon, adopted).
    void requeue_running(const std::vector<std::string>& except = {});

    std::optional<BuildRow> get(std::int64_t id);
    std::optional<BuildRow> get(const std::string& key);
    std::vector<BuildRow> list(const BuildsQuery& q);

  private:
    Db& m_db;
};

}  // namespace crcrd::store
