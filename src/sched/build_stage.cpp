#include "crcrd/sched/build_stage.hpp"

#include <spdlog/spdlog.h>

#include "crcrd/exec/workspace.hpp"
#include "crcrd/sched/jobs.hpp"
#include "crcrd/store/builds.hpp"
#include "crcrd/store/jobs.hpp"
#include "crcrd/vcs/mirror.hpp"

namespace crcrd::sched {

namespace {

std::string short_key(const std::string& key) {
    return key.substr(0, 12);
}

/// Build job `job`'s spec for `key` (`in`: its key's inputs): its partial folder, and the base
/// it is compared with when it fails.
exec::BuildSpec build_spec(store::Db& db, const BuildStageSettings& s,
                           const exec::BuildKeyInputs& in, const exec::JobToRun& job,
                           const std::string& key, bool base_check) {
    exec::BuildSpec spec;
    spec.key = key;
    spec.out = exec::partial_dir(s.build.cache_dir, key, job.job_id);
    spec.base_check = base_check;
    if (auto base = store::BuildsRepo(db).base_of_run(job.run_id); base && *base != job.sha) {
        exec::BuildKeyInputs at_base = in;
        at_base.upstream_sha = *base;
        spec.base_sha = *base;
        spec.base_key = exec::build_key(at_base);
    }
    return spec;
}

}  // namespace

BuildStep step_build_job(store::Db& db, const BuildStageSettings& s,
                         const exec::BuildKeyInputs& recipe, const exec::JobToRun& job,
                         SystemTime now) {
    exec::BuildKeyInputs in = recipe;
    in.upstream_sha = job.sha;
    const std::string key = exec::build_key(in);
    store::BuildsRepo builds(db);
    const bool base_check = !store::JobsRepo(db).base_check_tests(job.job_id).empty();
    if (base_check) {
        // The base failed to build already: no need to build it again to know.
        if (auto row = builds.get(key); row && row->fails_to_build()) {
            BuildStep step{BuildStep::Kind::known, {}, {}};
            step.known.conclusion = Conclusion::regression;
            step.known.reason = "build " + short_key(key) + " failed" +
                                (row->job_id ? " in job " + std::to_string(*row->job_id) : "") +
                                ": " + row->reason;
            return step;
        }
    }
    auto claim = builds.claim(key, job.sha, in.backend_sha, job.job_id, now);
    if (claim == store::BuildClaim::ready) {
        std::error_code ec;
        if (std::filesystem::is_directory(exec::build_dir(s.build.cache_dir, key), ec)) {
            const auto row = builds.get(key);
            if (base_check) {
                BuildStep step{BuildStep::Kind::known, {}, {}};
                step.known.reason = "build " + short_key(key) + " from the cache";
                return step;
            }
            finish_job(
                db, job.job_id, Conclusion::passed,
                "build " + short_key(key) + " from the cache" +
                    (row && row->job_id ? " (built by job " + std::to_string(*row->job_id) + ")"
                                        : std::string()),
                std::nullopt, now);
            return {BuildStep::Kind::passed, {}, {}};
        }
        builds.mark_evicted(
            key, "its folder was gone when run " + std::to_string(job.run_id) + " needed it", now);
        claim = builds.claim(key, job.sha, in.backend_sha, job.job_id, now);
    }
    if (claim == store::BuildClaim::wait) return {BuildStep::Kind::wait, {}, {}};
    BuildStep step{BuildStep::Kind::lease, {}, {}};
    step.spec = build_spec(db, s, in, job, key, base_check);
    for (const auto& r : builds.ready_of_backend(in.backend_sha, key))
        step.spec.nearest_candidates.emplace_back(r.upstream_sha,
                                                  exec::build_dir(s.build.cache_dir, r.key));
    return step;
}

Status prepare_build_attempt(const BuildStageSettings& s, exec::JobToRun& job) {
    if (!job.build) return Ok{};
    auto out = exec::make_partial(s.build.cache_dir, job.build->key, job.job_id);
    if (!out) return out.error();
    job.build->out = *out;
    if (s.upstream.mirror.empty() || job.build->nearest_candidates.empty()) return Ok{};
    // The ancestry is the mirror's: the job's commit may not be fetched yet (its checkout is
    // made later, by the executor). Without it, no nearest build.
    if (!vcs::has_commit(s.upstream, job.sha) && !vcs::fetch(s.upstream, {job.sha})) return Ok{};
    for (const auto& [sha, dir] : job.build->nearest_candidates) {
        auto r = vcs::git(s.upstream, {"merge-base", "--is-ancestor", sha, job.sha});
        std::error_code ec;
        if (r && r->exit_code == 0 && std::filesystem::is_directory(dir, ec)) {
            job.build->nearest = dir;
            break;
        }
    }
    return Ok{};
}

std::optional<std::int64_t> finish_build_attempt(const BuildStageSettings& s,
                                                 const exec::JobToRun& job,
                                                 const exec::RawOutcome& raw, Judged& judged) {
    if (!job.build) return std::nullopt;
    // The build command failed on its own (no pattern, no cluster verdict, it ran): the change
    // broke the build.
    const bool pattern = judged.evidence.contains("log_lines") &&
                         judged.evidence["log_lines"].is_array() &&
                         !judged.evidence["log_lines"].empty();
    if (judged.conclusion == Conclusion::infra_error && !raw.not_run && !raw.infra_failure &&
        !raw.junit_error && !pattern && (raw.exit_code.value_or(0) != 0 || raw.signal)) {
        judged.conclusion = Conclusion::regression;
        judged.reason = "the build failed (" +
                        (raw.exit_code ? "exit " + std::to_string(*raw.exit_code)
                                       : "signal " + std::to_string(raw.signal.value_or(0))) +
                        ")";
    }
    if (judged.conclusion != Conclusion::passed) {
        std::error_code ec;
        std::filesystem::remove_all(job.build->out, ec);
        return std::nullopt;
    }
    auto size = exec::publish_build(job.build->out, s.build.cache_dir, job.build->key);
    if (!size) {
        judged.conclusion = Conclusion::infra_error;
        judged.reason = size.error().message;
        return std::nullopt;
    }
    judged.reason = "built " + short_key(job.build->key);
    return *size;
}

void settle_build(store::Db& db, const exec::JobToRun& job, const std::optional<EndPlan>& plan,
                  const Judged& judged, std::optional<std::int64_t> size, SystemTime now) {
    if (!job.build || !plan) return;
    store::BuildsRepo builds(db);
    const std::string& key = job.build->key;
    if (plan->next == EndPlan::Next::retry) return;  // the retry claims it again
    const Conclusion conclusion = job.build->base_check ? judged.conclusion : plan->conclusion;
    const std::string& reason = job.build->base_check ? judged.reason : plan->reason;
    if (conclusion == Conclusion::passed && size) {
        builds.mark_ready(key, *size, now);
        return;
    }
    if (conclusion == Conclusion::cancelled) return;  // the next job that asks builds it
    builds.mark_failed(key, reason, now, conclusion);
    for (auto id : builds.waiting_jobs(key, job.job_id)) {
        finish_job(db, id, conclusion,
                   "the build " + short_key(key) + " by job " + std::to_string(job.job_id) +
                       " ended " + std::string(to_string(conclusion)) + ": " + reason,
                   std::nullopt, now);
    }
}

std::vector<std::string> choose_evictions(store::Db& db, const BuildStageSettings& s,
                                          SystemTime now) {
    store::BuildsRepo builds(db);
    std::int64_t used = builds.ready_bytes();
    const auto limit = static_cast<std::int64_t>(s.build.cache_max_bytes);
    std::int64_t free = static_cast<std::int64_t>(exec::free_bytes(s.build.cache_dir));
    const auto keep_free = static_cast<std::int64_t>(s.min_free_bytes);
    std::vector<std::string> out;
    if (used <= limit && free >= keep_free) return out;
    for (const auto& b : builds.evictable()) {
        if (used <= limit && free >= keep_free) break;
        const std::int64_t size = b.size_bytes.value_or(0);
        builds.mark_evicted(b.key,
                            used > limit ? "the cache was over build.cache_max_bytes"
                                         : "execution.min_free_bytes asked for the space",
                            now);
        used -= size;
        free += size;
        out.push_back(b.key);
    }
    return out;
}

bool resume_build(store::Db& db, const BuildStageSettings& s, const exec::BuildKeyInputs& recipe,
                  exec::JobToRun& job) {
    if (job.tier != k_build_stage) return false;
    const auto key = store::BuildsRepo(db).key_of_job(job.job_id);
    if (!key) return false;
    exec::BuildKeyInputs in = recipe;
    in.upstream_sha = job.sha;
    job.build =
        build_spec(db, s, in, job, *key, !store::JobsRepo(db).base_check_tests(job.job_id).empty());
    return true;
}

void recover_builds(store::Db& db, const BuildStageSettings& s, SystemTime now,
                    const std::vector<exec::JobToRun>& adopted) {
    std::vector<std::filesystem::path> keep;
    std::vector<std::string> running;
    for (const auto& job : adopted) {
        if (!job.build) continue;
        keep.push_back(job.build->out);
        running.push_back(job.build->key);
    }
    exec::clean_partials(s.build.cache_dir, keep);
    store::BuildsRepo builds(db);
    builds.requeue_running(running);
    for (const auto& b : builds.ready()) {
        std::error_code ec;
        if (!std::filesystem::is_directory(exec::build_dir(s.build.cache_dir, b.key), ec)) {
            builds.mark_evicted(b.key, "its folder was gone at start-up", now);
            spdlog::warn("build={} its folder is gone: evicted, a run that needs it builds again",
                         short_key(b.key));
        }
    }
}

std::optional<std::filesystem::path> run_build_dir(store::Db& db, const BuildStageSettings& s,
                                                   std::int64_t run_id) {
    auto key = store::BuildsRepo(db).key_of_run(run_id);
    if (!key) return std::nullopt;
    return exec::build_dir(s.build.cache_dir, *key);
}

}  // namespace crcrd::sched
