// The mirror against a real git repository as upstream.
#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <thread>

#include "crcrd/core/files.hpp"
#include "crcrd/vcs/mirror.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"

namespace crcrd::vcs {
namespace {

std::string run_git(const std::vector<std::string>& args) {
    std::vector<std::string> argv = {"git", "-c", "user.name=t", "-c", "user.email=t@example.org"};
    argv.insert(argv.end(), args.begin(), args.end());
    std::string out;
    if (run_command(argv, &out) != 0) throw std::runtime_error("git: " + out);
    return trim(out);
}

class MirrorTest : public ::testing::Test {
  protected:
    void SetUp() override {
        up = dir.path() / "upstream";
        run_git({"init", "--quiet", "-b", "main", up.string()});
        write_file(up / "torch" / "a.py", "a\n");
        write_file(up / "docs" / "b.md", "b\n");
        run_git({"-C", up.string(), "add", "-A"});
        run_git({"-C", up.string(), "commit", "--quiet", "-m", "one"});
        base = run_git({"-C", up.string(), "rev-parse", "HEAD"});
        run_git({"-C", up.string(), "checkout", "--quiet", "-b", "pr"});
        write_file(up / "torch" / "a.py", "a2\n");
        run_git({"-C", up.string(), "mv", "docs/b.md", "docs/c.md"});
        run_git({"-C", up.string(), "commit", "--quiet", "-am", "two"});
        head = run_git({"-C", up.string(), "rev-parse", "HEAD"});
        upstream.mirror = dir.path() / "mirror.git";
        upstream.remote = up.string();
        upstream.git_timeout = std::chrono::seconds(60);
    }
    TempDir dir;
    std::filesystem::path up;
    config::UpstreamConfig upstream;
    std::string base;
    std::string head;
};

TEST_F(MirrorTest, NewestShaFetchesTheBranch) {
    auto main_tip = newest_sha(upstream, "main");
    ASSERT_TRUE(main_tip) << main_tip.error().message;
    EXPECT_EQ(*main_tip, base);
    EXPECT_EQ(newest_sha(upstream, "pr").value(), head);
    EXPECT_TRUE(has_commit(upstream, head));
    auto none = newest_sha(upstream, "no-such-branch");
    ASSERT_FALSE(none);
    EXPECT_EQ(none.error().code, Errc::git);
    EXPECT_FALSE(newest_sha(config::UpstreamConfig{}, "main"));
}

TEST_F(MirrorTest, ChangedPathsFromAShaOrABranch) {
    const std::vector<std::string> want = {"docs/b.md", "docs/c.md", "torch/a.py"};
    auto by_sha = changed_paths(upstream, base, head);
    ASSERT_TRUE(by_sha) << by_sha.error().message;
    EXPECT_EQ(*by_sha, want);
    auto by_ref = changed_paths(upstream, "refs/heads/main", head);
    ASSERT_TRUE(by_ref) << by_ref.error().message;
    EXPECT_EQ(*by_ref, want);

    upstream.remote.clear();  // what the mirror lacks can no longer be fetched
    auto missing = changed_paths(upstream, "refs/heads/release", head);
    ASSERT_FALSE(missing);
    EXPECT_NE(missing.error().message.find("upstream.remote is not set"), std::string::npos)
        << missing.error().message;
}

TEST_F(MirrorTest, FirstParentCommitsWithTheirMessagesAndPaths) {
    // main: one, then the PR merged with a merge commit, then a direct commit.
    run_git({"-C", up.string(), "checkout", "--quiet", "main"});
    run_git({"-C", up.string(), "merge", "--quiet", "--no-ff", "-m",
             "Merge the PR (#5)\n\nPull Request resolved: x", "pr"});
    const auto merge = run_git({"-C", up.string(), "rev-parse", "HEAD"});
    write_file(up / "torch" / "b.py", "b\n");
    run_git({"-C", up.string(), "add", "-A"});
    run_git({"-C", up.string(), "commit", "--quiet", "-m", "three"});
    const auto tip = run_git({"-C", up.string(), "rev-parse", "HEAD"});
    ASSERT_TRUE(ensure_mirror(upstream));
    ASSERT_TRUE(fetch(upstream, {base, tip}));

    auto commits = first_parent_commits(upstream, base, tip, 10);
    ASSERT_TRUE(commits) << commits.error().message;
    ASSERT_EQ(commits->size(), 2u);  // the PR's own commit "two" is not on the first-parent line
    EXPECT_EQ((*commits)[0].sha, merge);
    EXPECT_EQ((*commits)[0].parent, base);
    EXPECT_EQ((*commits)[1].sha, tip);
    EXPECT_EQ((*commits)[1].parent, merge);
    auto newest = first_parent_commits(upstream, base, tip, 1);
    ASSERT_TRUE(newest);
    ASSERT_EQ(newest->size(), 1u);
    EXPECT_EQ(newest->front().sha, tip);
    EXPECT_TRUE(first_parent_commits(upstream, tip, tip, 10)->empty());
    auto bad = first_parent_commits(upstream, "no-such-rev", tip, 10);
    ASSERT_FALSE(bad);
    EXPECT_EQ(bad.error().code, Errc::git);

    auto msg = commit_message(upstream, merge);
    ASSERT_TRUE(msg) << msg.error().message;
    EXPECT_EQ(msg->subject, "Merge the PR (#5)");
    EXPECT_EQ(msg->body, "Merge the PR (#5)\n\nPull Request resolved: x");

    // A merge against its first parent: what the PR brought; a root commit: its files.
    EXPECT_EQ(commit_paths(upstream, merge, base).value(),
              (std::vector<std::string>{"docs/b.md", "docs/c.md", "torch/a.py"}));
    EXPECT_EQ(commit_paths(upstream, tip, merge).value(), (std::vector<std::string>{"torch/b.py"}));
    EXPECT_EQ(commit_paths(upstream, base, "").value(),
              (std::vector<std::string>{"docs/b.md", "torch/a.py"}));
}

TEST_F(MirrorTest, HooksAndFsmonitorInTheMirrorNeverRun) {
    // What a process that could write into the mirror would leave for the daemon to run.
    ASSERT_TRUE(add_checkout(upstream, dir.path() / "first", base));
    const auto mark = dir.path() / "ran";
    for (const char* hook :
         {"post-checkout", "reference-transaction", "post-index-change", "fsmonitor-watchman"}) {
        write_file(upstream.mirror / "hooks" / hook,
                   "#!/bin/sh\necho " + std::string(hook) + " >> " + mark.string() + "\n", 0755);
    }
    write_file(dir.path() / "fsmonitor.sh", "#!/bin/sh\necho fsmonitor >> " + mark.string() + "\n",
               0755);
    run_git({"--git-dir=" + upstream.mirror.string(), "config", "core.fsmonitor",
             (dir.path() / "fsmonitor.sh").string()});

    ASSERT_TRUE(add_checkout(upstream, dir.path() / "second", head));
    ASSERT_TRUE(changed_paths(upstream, "refs/heads/main", head));
    ASSERT_TRUE(newest_sha(upstream, "pr"));
    remove_checkout(upstream, dir.path() / "second");
    EXPECT_FALSE(std::filesystem::exists(mark)) << read_file(mark).value_or("");
}

TEST_F(MirrorTest, AMirrorWhoseConfigIncludesAnotherFileIsRefused) {
    ASSERT_TRUE(ensure_mirror(upstream));
    // An include could bring in settings (hooks, filters, an fsmonitor) from a file the daemon
    // does not own.
    run_git({"--git-dir=" + upstream.mirror.string(), "config", "include.path",
             (dir.path() / "elsewhere").string()});
    auto s = add_checkout(upstream, dir.path() / "co", base);
    ASSERT_FALSE(s);
    EXPECT_NE(s.error().message.find("include"), std::string::npos) << s.error().message;
    run_git({"--git-dir=" + upstream.mirror.string(), "config", "--unset", "include.path"});
    run_git(
        {"--git-dir=" + upstream.mirror.string(), "config", "includeIf.onbranch:main.path", "x"});
    EXPECT_FALSE(changed_paths(upstream, base, head));
}

TEST_F(MirrorTest, CheckoutsMadeAndRemovedAtOnceOnTwoSlotsAllSucceed) {
    // Two slots' workers add and remove worktrees of the one mirror at the same time; git's
    // `worktree prune` of one removed the half-made record of the other's `worktree add`
    // ("could not open .../worktrees/N/gitdir"), an infra error of a job that did nothing.
    ASSERT_TRUE(ensure_mirror(upstream));
    ASSERT_TRUE(fetch(upstream, {base, head}));
    std::atomic<int> failures{0};
    std::string first_failure;
    std::mutex mu;
    auto slot = [&](int n) {
        for (int i = 0; i < 60; ++i) {
            const auto dest = dir.path() / ("co-" + std::to_string(n) + "-" + std::to_string(i));
            if (auto s = add_checkout(upstream, dest, i % 2 ? base : head); !s) {
                std::lock_guard lk(mu);
                if (failures++ == 0) first_failure = s.error().message;
            }
            remove_checkout(upstream, dest);
        }
    };
    std::vector<std::thread> slots;
    for (int n = 0; n < 4; ++n) slots.emplace_back(slot, n);
    for (auto& t : slots) t.join();
    EXPECT_EQ(failures.load(), 0) << first_failure;
}

}  // namespace
}  // namespace crcrd::vcs
