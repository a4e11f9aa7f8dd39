// The build stage through the real daemon (docs/build.md): one build per key on a CPU build slot
// however many runs and tiers need it, tiers only after it and with the published build
// read-only, a failed build as a regression that cancels the tiers, hostile builds (a link out
// of the output, a write outside it), a kill -9 mid-build, and the cache's eviction and start-up
// check.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>

#include "crcrd/core/crypto.hpp"
#include "crcrd/core/files.hpp"
#include "support/build_stage.hpp"
#include "support/ci_script.hpp"
#include "support/daemon.hpp"
#include "support/process.hpp"
#include "support/state.hpp"

namespace crcrd {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

// The backend's build, in miniature. By the upstream SHA's first characters: dead… fails to
// compile, 5111… leaves a link to /etc/passwd in its output, 57a1… hangs without a word,
// d15c… writes 3 MB, 0ff… leaves a process of its own behind (its pid in child.pid); any
// other writes lib.txt (and BUILD_BYTES more bytes), tries to write outside its output, and
// waits while $BUILD_HOLD exists.
constexpr const char* k_build_script = R"SH(#!/bin/sh
echo "build of $CRCR_PYTORCH_SHA into $CRCR_BUILD_OUT nearest=${CRCR_BUILD_NEAREST:-none}"
while [ -n "${BUILD_HOLD:-}" ] && [ -e "$BUILD_HOLD" ]; do sleep 0.05; done
case "$CRCR_PYTORCH_SHA" in
  dead*) echo "ops.cpp:12: error: 'at::foo' was not declared in this scope"; exit 3 ;;
  5111*) ln -s /etc/passwd "$CRCR_BUILD_OUT/passwd"; exit 0 ;;
  57a1*) exec sleep 600 ;;
  d15c*) head -c 3000000 /dev/zero > "$CRCR_BUILD_OUT/big" || exit 1 ;;
  0ff*) setsid sh -c 'echo $$ > "$CRCR_BUILD_OUT/child.pid"; exec sleep 3600' & sleep 0.2 ;;
esac
if echo escaped > "$CRCR_BUILD_OUT/../../escaped" 2>/dev/null; then echo "wrote outside"; fi
echo "built $CRCR_PYTORCH_SHA" > "$CRCR_BUILD_OUT/lib.txt"
if [ -n "${BUILD_BYTES:-}" ]; then head -c "$BUILD_BYTES" /dev/zero > "$CRCR_BUILD_OUT/blob"; fi
echo done
)SH";

// A tier's command: passes when the build is there, holds what this SHA's build wrote, and
// cannot be written to.
constexpr const char* k_test_script = R"SH(#!/bin/sh
echo "tier=$CRCR_TIER build_dir=${CRCR_BUILD_DIR:-none}"
status=ok
grep -q "built $CRCR_PYTORCH_SHA" "$CRCR_BUILD_DIR/lib.txt" || status=missing
if touch "$CRCR_BUILD_DIR/mine" 2>/dev/null; then status=writable; fi
echo "status=$status"
if [ "$status" = ok ]; then
  echo "<testsuite><testcase classname=\"build\" name=\"uses_build\"/></testsuite>" > "$CRCR_JUNIT_DIR/r.xml"
else
  echo "<testsuite><testcase classname=\"build\" name=\"uses_build\"><failure message=\"$status\"/></testcase></testsuite>" > "$CRCR_JUNIT_DIR/r.xml"
fi
)SH";

const std::string k_sha = "ec26c3e57ca3a959ca5aad62de7213c562f8c821";

class BuildStageTest : public ::testing::Test {
  protected:
    /// `more`: top-level configuration added at the end.
    void start(const std::string& build_extra = "", const std::string& env = "",
               const std::string& more = "") {
        if (auto why = bwrap_unavailable(); !why.empty()) GTEST_SKIP() << why;
        install_script(bin.path() / "build.sh", k_build_script);
        install_script(bin.path() / "test.sh", k_test_script);
        BuildStageSetup s;
        s.build_script = bin.path() / "build.sh";
        s.test_script = bin.path() / "test.sh";
        s.tiers =
            "  - {name: import, always: true, tests: [a]}\n"
            "  - {name: smoke, always: true, tests: [b]}\n";
        s.env = ", BUILD_HOLD: " + hold().string() + env;
        s.execution = "  infra_retries: 1\n";
        s.build = build_extra;
        s.admin_tokens =
            "{name: ops, role: admin, sha256: " + crypto::sha256_hex("ops-token") + "}";
        daemon = std::make_unique<TestDaemon>(dir.path(), build_stage_config(dir.path(), s) + more);
        daemon->start();
    }

    fs::path hold() const { return bin.path() / "hold"; }
    fs::path cache() const { return dir.path() / "state" / "builds"; }

    std::int64_t post(const std::string& sha, const std::string& id) {
        return post_sha(*daemon, sha, next_pr++, id);
    }
    /// A push to main (no PR) at `sha`, or a PR at `sha` whose base is `base`.
    std::int64_t post_push(const std::string& sha, const std::string& id) {
        json j = {{"event_type", "pytorch-crcr"},
                  {"client_payload", {{"upstream_sha", sha}, {"ref", "refs/heads/main"}}}};
        auto r = daemon->post_standard(j.dump(), id);
        EXPECT_EQ(r->status, 202) << r->body;
        return json::parse(r->body)["run_id"].get<std::int64_t>();
    }
    std::int64_t post_pr(const std::string& sha, const std::string& base, const std::string& id) {
        const int pr = next_pr++;
        json j = {{"event_type", "pytorch-crcr"},
                  {"client_payload",
                   {{"upstream_sha", sha},
                    {"ref", "refs/pull/" + std::to_string(pr) + "/head"},
                    {"pr_number", pr},
                    {"base_sha", base}}}};
        auto r = daemon->post_standard(j.dump(), id);
        EXPECT_EQ(r->status, 202) << r->body;
        return json::parse(r->body)["run_id"].get<std::int64_t>();
    }
    JobRow build_job(std::int64_t run) { return last_job(*daemon, {.run = run, .tier = "build"}); }
    /// Waits (polling the database, bounded) until `pred` holds.
    template <class Pred>
    bool eventually(Pred pred) {
        for (int i = 0; i < 600; ++i) {
            if (pred()) return true;
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
        return false;
    }

    TempDir dir;
    TempDir bin;
    std::unique_ptr<TestDaemon> daemon;
    int next_pr = 300;
};

TEST_F(BuildStageTest, ThreeRunsOfOneShaBuildOnceOnABuildSlotAndTheirTiersStartOnlyAfterIt) {
    start();
    write_file(hold(), "");  // the build waits until every run is queued
    const auto a = post(k_sha, "b-1");
    ASSERT_TRUE(eventually([&] { return build_job(a).state == "running"; }));
    const auto b = post(k_sha, "b-2");
    const auto c = post(k_sha, "b-3");
    // While they wait, their build's status says for what. (Runs of one SHA share its
    // contexts: the report file may coalesce one run's row with another's, the outbox keeps
    // each.)
    const std::string waiting = "waiting for the build by job " + std::to_string(build_job(a).id);
    auto reported = [&](std::int64_t run) {
        for (const auto& row : outbox_rows(*daemon, {.run = run, .context = "crcr/build"}))
            if (row.description == waiting && row.state == "pending") return true;
        return false;
    };
    EXPECT_TRUE(eventually([&] { return reported(b) && reported(c); }))
        << read_file(dir.path() / "state" / "statuses.jsonl").value_or("");
    fs::remove(hold());
    for (auto run : {a, b, c}) {
        EXPECT_EQ(daemon->finished(run), "completed/passed");
        EXPECT_EQ(jobs_of(*daemon, run),
                  "build:completed:passed:1 import:completed:passed:1 smoke:completed:passed:1");
    }
    // One build: run a's job on the build slot; b and c waited on it, holding no slot.
    const auto built = build_job(a);
    EXPECT_EQ(built.slot, "build-1");
    EXPECT_EQ(built.metadata["slot"], "build-1");
    for (auto run : {b, c}) {
        const auto waited = build_job(run);
        EXPECT_EQ(waited.slot, "") << waited.reason;
        EXPECT_NE(waited.reason.find("from the cache (built by job " + std::to_string(built.id)),
                  std::string::npos)
            << waited.reason;
        EXPECT_EQ(waited.build_key, built.build_key);
    }
    const auto builds = build_rows(*daemon);
    ASSERT_EQ(builds.size(), 1u);
    EXPECT_EQ(builds[0].state, "ready");
    EXPECT_EQ(builds[0].attempts, 1);
    EXPECT_EQ(builds[0].key, built.build_key);
    EXPECT_EQ(builds[0].upstream_sha, k_sha);
    // No tier started before the build ended, and every tier ran on the card, not the build slot.
    for (const auto& j : job_rows(*daemon)) {
        if (j.tier == "build") continue;
        EXPECT_GE(j.started_at, built.finished_at) << j.tier << " of run " << j.run_id;
        EXPECT_EQ(j.slot, "card-0");
        const auto log = read_file(j.log_path).value();
        EXPECT_NE(log.find("build_dir=" + (cache() / built.build_key).string()), std::string::npos)
            << log;
        EXPECT_NE(log.find("status=ok"), std::string::npos) << log;
    }
    // The published build holds what the build wrote, and nothing it tried to write elsewhere.
    EXPECT_EQ(read_file(cache() / built.build_key / "lib.txt").value(), "built " + k_sha + "\n");
    EXPECT_FALSE(fs::exists(dir.path() / "state" / "escaped"));
    EXPECT_FALSE(fs::exists(cache() / "escaped"));
    const auto log = read_file(built.log_path).value();
    EXPECT_EQ(log.find("wrote outside"), std::string::npos) << log;
    // The stage is reported like a tier: its own status context, pending then success.
    const auto statuses = read_file(dir.path() / "state" / "statuses.jsonl").value();
    EXPECT_NE(statuses.find(R"("context":"crcr/build")"), std::string::npos) << statuses;
    EXPECT_EQ(count_outbox(*daemon, {.run = a,
                                     .context = std::string("crcr/build"),
                                     .state = std::string("success")}),
              1);
}

TEST_F(BuildStageTest, AFailedBuildIsARegressionThatCancelsTheTiersWithTheReason) {
    start();
    const auto run = post("dead00000000000000000000000000000000beef", "b-dead");
    EXPECT_EQ(daemon->finished(run), "completed/regression");
    const auto build = first_job(*daemon, {.run = run, .tier = "build"});
    EXPECT_EQ(build.conclusion, "regression");
    EXPECT_EQ(build.reason,
              "the build failed (exit 3); built again to tell a flaky build (retried)");
    EXPECT_EQ(last_job(*daemon, {.run = run, .tier = "build"}).reason,
              "the build failed (exit 3), again on rerun");
    EXPECT_EQ(last_job(*daemon, {.run = run, .tier = "import"}).reason, "build ended regression");
    EXPECT_EQ(last_job(*daemon, {.run = run, .tier = "import"}).state, "cancelled");
    const auto builds = build_rows(*daemon);
    ASSERT_EQ(builds.size(), 1u);
    EXPECT_EQ(builds[0].state, "failed");
    EXPECT_FALSE(fs::exists(cache() / builds[0].key));
    // No card was leased for the run.
    EXPECT_EQ(count_jobs(*daemon, {.run = run, .state = std::string("completed")}),
              count_jobs(*daemon, {.run = run, .tier = std::string("build")}));
}

TEST_F(BuildStageTest, ABuildFailureIsComparedWithItsBasesBuild) {
    start();
    const std::string broken_main = "dead000000000000000000000000000000000001";
    // Trunk breaks the build: nothing earlier on main to compare with.
    const auto trunk = post_push(broken_main, "b-trunk");
    EXPECT_EQ(daemon->finished(trunk), "completed/regression");
    EXPECT_EQ(build_job(trunk).reason, "the build failed (exit 3), again on rerun");
    // A PR on the broken trunk whose build fails too: the base's failure, not the PR's.
    const auto on_broken =
        post_pr("dead000000000000000000000000000000000002", broken_main, "b-on-broken");
    EXPECT_EQ(daemon->finished(on_broken), "completed/pre_existing");
    const auto pre = build_job(on_broken);
    EXPECT_EQ(pre.conclusion, "pre_existing");
    EXPECT_EQ(pre.reason, "the build fails on dead000 too");
    EXPECT_EQ(pre.evidence["pre_existing"]["base_sha"], broken_main);
    EXPECT_EQ(count_jobs(*daemon, {.run = on_broken, .tier = std::string("build")}), 1)
        << "a failure the base has too is not built again";
    EXPECT_EQ(last_job(*daemon, {.run = on_broken, .tier = "import"}).reason,
              "build ended pre_existing");
    // A PR on a base that builds: the PR broke the build.
    const auto good = post_push(k_sha, "b-good");
    EXPECT_EQ(daemon->finished(good), "completed/passed");
    const auto breaks = post_pr("dead000000000000000000000000000000000003", k_sha, "b-breaks");
    EXPECT_EQ(daemon->finished(breaks), "completed/regression");
    EXPECT_EQ(build_job(breaks).reason,
              "the build failed (exit 3), again on rerun; ec26c3e builds");
    // A PR whose base was never built here says so.
    const auto unknown =
        post_pr("dead000000000000000000000000000000000004", std::string(40, 'b'), "b-unknown");
    EXPECT_EQ(daemon->finished(unknown), "completed/regression");
    EXPECT_NE(build_job(unknown).reason.find("bbbbbbb was not built here"), std::string::npos)
        << build_job(unknown).reason;
}

TEST_F(BuildStageTest, WithBaseCheckRunABaseNeverBuiltHereIsBuiltToCompare) {
    start("", "", "classify: {base_check: run}\n");
    // The PR's base fails to build too: the failure is the base's. Built once (the PR's
    // build, its rebuild, then the base), each on the build slot.
    const std::string broken_base = "dead000000000000000000000000000000000010";
    const auto on_broken =
        post_pr("dead000000000000000000000000000000000011", broken_base, "bc-broken");
    EXPECT_EQ(daemon->finished(on_broken), "completed/pre_existing");
    auto jobs = job_rows(*daemon, {.run = on_broken, .tier = std::string("build")});
    ASSERT_EQ(jobs.size(), 3u);
    EXPECT_EQ(jobs[1].reason,
              "the build failed (exit 3), again on rerun; building dead000 to compare");
    EXPECT_EQ(jobs[2].sha, broken_base);
    EXPECT_EQ(jobs[2].slot, "build-1");
    EXPECT_EQ(jobs[2].conclusion, "pre_existing");
    EXPECT_EQ(jobs[2].reason, "the build fails on dead000 too");
    EXPECT_EQ(jobs[2].evidence["pre_existing"]["base_sha"], broken_base);
    const auto statuses = read_file(dir.path() / "state" / "statuses.jsonl").value_or("");
    EXPECT_NE(
        statuses.find(R"("context":"crcr/build","description":"building base dead000 to compare")"),
        std::string::npos)
        << statuses;
    EXPECT_EQ(last_job(*daemon, {.run = on_broken, .tier = "import"}).reason,
              "build ended pre_existing");
    // The PR's base builds: the PR broke the build, and the base's build is in the cache now.
    const std::string base = "c0ffee0000000000000000000000000000000012";
    const auto breaks = post_pr("dead000000000000000000000000000000000013", base, "bc-breaks");
    EXPECT_EQ(daemon->finished(breaks), "completed/regression");
    jobs = job_rows(*daemon, {.run = breaks, .tier = std::string("build")});
    ASSERT_EQ(jobs.size(), 3u);
    EXPECT_EQ(jobs[2].sha, base);
    EXPECT_EQ(jobs[2].reason, "the build fails; c0ffee0 builds: the change broke it");
    const auto rows = build_rows(*daemon);
    auto of = [&](const std::string& sha) {
        return std::find_if(rows.begin(), rows.end(),
                            [&](const auto& b) { return b.upstream_sha == sha; });
    };
    ASSERT_NE(of(base), rows.end());
    EXPECT_EQ(of(base)->state, "ready");
    EXPECT_EQ(of(broken_base)->state, "failed");
    // A push of that base needs no build of its own.
    const auto push = post_push(base, "bc-push");
    EXPECT_EQ(daemon->finished(push), "completed/passed");
    EXPECT_NE(build_job(push).reason.find("from the cache (built by job " +
                                          std::to_string(jobs[2].id) + ")"),
              std::string::npos)
        << build_job(push).reason;
    // A second PR on the broken base: its base's failure is known, nothing is built for it.
    const auto again = post_pr("dead000000000000000000000000000000000014", broken_base, "bc-again");
    EXPECT_EQ(daemon->finished(again), "completed/pre_existing");
    EXPECT_EQ(count_jobs(*daemon, {.run = again, .tier = std::string("build")}), 1);
}

TEST_F(BuildStageTest, AHangingBuildStallsOutAndItsTiersNeverStart) {
    start("  stall_timeout: 1s\n");
    const auto run = post("57a1000000000000000000000000000000000000", "b-hang");
    EXPECT_EQ(daemon->finished(run), "completed/timeout");
    const auto build = build_job(run);
    EXPECT_EQ(build.conclusion, "timeout");
    EXPECT_NE(build.reason.find("no output"), std::string::npos) << build.reason;
    EXPECT_EQ(last_job(*daemon, {.run = run, .tier = "import"}).reason, "build ended timeout");
    const auto builds = build_rows(*daemon);
    ASSERT_EQ(builds.size(), 1u);
    EXPECT_EQ(builds[0].state, "failed");
    EXPECT_FALSE(fs::exists(cache() / builds[0].key));
}

TEST_F(BuildStageTest, NothingABuildStartsOutlivesIt) {
    start();
    const auto run = post("0ff0000000000000000000000000000000000000", "b-orphan");
    EXPECT_EQ(daemon->finished(run), "completed/passed");
    const auto build = build_job(run);
    // The child wrote its pid (in the sandbox's pid namespace) before the build ended.
    EXPECT_TRUE(fs::exists(cache() / build.build_key / "child.pid"));
    // No process on the host still carries the build's job id in its environment.
    const std::string mark = "CRCR_JOB_ID=" + std::to_string(build.id);
    auto survivors = [&] {
        int n = 0;
        for (const auto& e : fs::directory_iterator("/proc")) {
            const auto name = e.path().filename().string();
            if (name.find_first_not_of("0123456789") != std::string::npos) continue;
            auto env = read_file(e.path() / "environ", 1 << 20);
            if (!env) continue;
            for (std::size_t at = 0; at < env->size();) {
                const auto end = env->find('\0', at);
                if (env->compare(at, (end == std::string::npos ? env->size() : end) - at, mark) ==
                    0)
                    ++n;
                if (end == std::string::npos) break;
                at = end + 1;
            }
        }
        return n;
    };
    EXPECT_TRUE(eventually([&] { return survivors() == 0; })) << survivors() << " survived";
}

TEST_F(BuildStageTest, AFullDiskIsAnInfraErrorAndTheCacheStaysConsistent) {
    if (::geteuid() != 0) GTEST_SKIP() << "mounting a small file system needs root";
    fs::create_directories(cache());
    ASSERT_EQ(run_command({"mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", cache().string()}), 0);
    struct Unmount {
        fs::path at;
        ~Unmount() { run_command({"umount", "-l", at.string()}); }
    } unmount{cache()};
    start();
    const auto run = post("d15c000000000000000000000000000000000000", "b-full");
    EXPECT_EQ(daemon->finished(run), "completed/infra_error");
    const auto build = build_job(run);
    EXPECT_NE(build.reason.find("No space left on device"), std::string::npos) << build.reason;
    EXPECT_EQ(count_jobs(*daemon, {.run = run, .tier = std::string("build")}), 2) << "retried once";
    const auto builds = build_rows(*daemon);
    ASSERT_EQ(builds.size(), 1u);
    EXPECT_EQ(builds[0].state, "failed");
    EXPECT_FALSE(fs::exists(cache() / builds[0].key));
    // Nothing half-written is left: the attempts' partial folders were removed.
    std::error_code ec;
    EXPECT_TRUE(!fs::exists(cache() / ".partial") || fs::is_empty(cache() / ".partial", ec));
    // The cache works again once there is room: a small build publishes.
    const auto ok = post(k_sha, "b-after-full");
    EXPECT_EQ(daemon->finished(ok), "completed/passed");
}

TEST_F(BuildStageTest, ALinkOutOfTheOutputIsNeverPublished) {
    start();
    const auto run = post("5111000000000000000000000000000000000000", "b-link");
    EXPECT_EQ(daemon->finished(run), "completed/infra_error");
    // Retried once (infra_retries: 1), refused both times, with the link named.
    EXPECT_EQ(count_jobs(*daemon, {.run = run, .tier = std::string("build")}), 2);
    const auto last = last_job(*daemon, {.run = run, .tier = "build"});
    EXPECT_NE(last.reason.find("the symbolic link"), std::string::npos) << last.reason;
    EXPECT_NE(last.reason.find("/passwd points outside the build (to /etc/passwd)"),
              std::string::npos)
        << last.reason;
    const auto builds = build_rows(*daemon);
    ASSERT_EQ(builds.size(), 1u);
    EXPECT_EQ(builds[0].state, "failed");
    EXPECT_FALSE(fs::exists(cache() / builds[0].key));
    EXPECT_FALSE(
        fs::exists(cache() / ".partial" / (builds[0].key + "." + std::to_string(last.id))));
}

TEST_F(BuildStageTest, AKillMidBuildPublishesNothingAndTheRestartBuildsAgain) {
    start();
    write_file(hold(), "");
    const auto run = post(k_sha, "b-kill");
    ASSERT_TRUE(eventually([&] { return build_job(run).state == "running"; }));
    const auto first = build_job(run);
    ASSERT_TRUE(
        fs::exists(cache() / ".partial" / (first.build_key + "." + std::to_string(first.id))));
    daemon->kill9();
    EXPECT_FALSE(fs::exists(cache() / first.build_key));
    fs::remove(hold());
    daemon->start();
    EXPECT_EQ(daemon->finished(run), "completed/passed");
    EXPECT_EQ(jobs_of(*daemon, run),
              "build:completed:infra_error:1 build:completed:passed:2 import:completed:passed:1 "
              "smoke:completed:passed:1");
    EXPECT_EQ(first_job(*daemon, {.run = run, .tier = "build"}).reason,
              "daemon restarted (retried)");
    const auto builds = build_rows(*daemon);
    ASSERT_EQ(builds.size(), 1u);
    EXPECT_EQ(builds[0].state, "ready");
    EXPECT_EQ(builds[0].attempts, 2);
    // The killed attempt's half-written folder was removed at the start.
    EXPECT_FALSE(
        fs::exists(cache() / ".partial" / (first.build_key + "." + std::to_string(first.id))));
    EXPECT_TRUE(fs::exists(cache() / first.build_key / "lib.txt"));
}

TEST_F(BuildStageTest, TheCacheEvictsTheLeastRecentlyUsedAndForgetsAFolderGoneAtStart) {
    start("  cache_max_bytes: 1MiB\n", ", BUILD_BYTES: \"700000\"");
    const std::string sha_a = "aaaa000000000000000000000000000000000001";
    const std::string sha_b = "bbbb000000000000000000000000000000000002";
    const auto a = post(sha_a, "b-a");
    EXPECT_EQ(daemon->finished(a), "completed/passed");
    const auto b = post(sha_b, "b-b");
    EXPECT_EQ(daemon->finished(b), "completed/passed");
    auto builds = build_rows(*daemon);
    ASSERT_EQ(builds.size(), 2u);
    // Two builds of 700 kB do not fit in 1 MiB: a's, the older, went once b's was published.
    EXPECT_EQ(builds[0].upstream_sha, sha_a);
    EXPECT_EQ(builds[0].state, "evicted");
    EXPECT_NE(builds[0].reason.find("build.cache_max_bytes"), std::string::npos);
    EXPECT_FALSE(fs::exists(cache() / builds[0].key));
    EXPECT_EQ(builds[1].state, "ready");
    EXPECT_GE(builds[1].size_bytes.value_or(0), 700000);
    // b's folder disappears while the daemon is down: at the start its row becomes evicted, and
    // the next run of b builds it again.
    EXPECT_EQ(daemon->stop(), 0);
    fs::remove_all(cache() / builds[1].key);
    daemon->start();
    EXPECT_EQ(build_rows(*daemon)[1].state, "evicted");
    const auto again = post(sha_b, "b-b2");
    EXPECT_EQ(daemon->finished(again), "completed/passed");
    EXPECT_EQ(build_job(again).slot, "build-1");
    builds = build_rows(*daemon);
    EXPECT_EQ(builds[1].state, "ready");
    EXPECT_EQ(builds[1].attempts, 2);
}

}  // namespace
}  // namespace crcrd
