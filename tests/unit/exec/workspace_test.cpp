// Pinned workspaces against a real git repository as upstream.
#include <gtest/gtest.h>

#include "crcrd/core/files.hpp"
#include "crcrd/exec/workspace.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"

namespace crcrd::exec {
namespace {

std::string git(const std::vector<std::string>& args) {
    std::vector<std::string> argv = {"git", "-c", "user.name=t", "-c", "user.email=t@example.org"};
    argv.insert(argv.end(), args.begin(), args.end());
    std::string out;
    if (run_command(argv, &out) != 0) throw std::runtime_error("git: " + out);
    return trim(out);
}

class WorkspaceTest : public ::testing::Test {
  protected:
    void SetUp() override {
        auto up = dir.path() / "upstream";
        git({"init", "--quiet", "-b", "main", up.string()});
        write_file(up / "torch" / "version.py", "v1\n");
        git({"-C", up.string(), "add", "-A"});
        git({"-C", up.string(), "commit", "--quiet", "-m", "one"});
        first = git({"-C", up.string(), "rev-parse", "HEAD"});
        write_file(up / "torch" / "version.py", "v2\n");
        git({"-C", up.string(), "commit", "--quiet", "-am", "two"});
        upstream.mirror = dir.path() / "mirror.git";
        upstream.remote = up.string();
        upstream.git_timeout = std::chrono::seconds(60);
        exec.work_root = dir.path() / "work";
        exec.min_free_bytes = 1;
    }
    TempDir dir;
    config::UpstreamConfig upstream;
    config::ExecutionConfig exec;
    std::string first;
};

TEST_F(WorkspaceTest, CheckoutIsPinnedToTheShaAndRemovedAfterwards) {
    auto ws = prepare_workspace(exec, upstream, 5, first);
    ASSERT_TRUE(ws) << ws.error().message;
    ASSERT_TRUE(ws->checkout);
    EXPECT_EQ(git({"-C", ws->checkout->string(), "rev-parse", "HEAD"}), first);
    EXPECT_EQ(read_file(*ws->checkout / "torch" / "version.py").value(), "v1\n");  // not main's tip
    EXPECT_TRUE(std::filesystem::is_directory(ws->job_dir));
    release_workspace(*ws, exec, upstream, false);
    EXPECT_FALSE(std::filesystem::exists(*ws->checkout));
    EXPECT_FALSE(std::filesystem::exists(ws->job_dir));
    EXPECT_EQ(git({"--git-dir=" + upstream.mirror.string(), "worktree", "list"}).find("checkouts"),
              std::string::npos);
}

TEST_F(WorkspaceTest, FailedWorkspacesAreKeptWhenAsked) {
    exec.keep_failed_workspaces = true;
    auto ws = prepare_workspace(exec, upstream, 6, first);
    ASSERT_TRUE(ws);
    release_workspace(*ws, exec, upstream, true);
    EXPECT_TRUE(std::filesystem::exists(*ws->checkout));
    // A retry of the same job starts clean.
    write_file(ws->job_dir / "stale.txt", "x");
    auto again = prepare_workspace(exec, upstream, 6, first);
    ASSERT_TRUE(again) << again.error().message;
    EXPECT_FALSE(std::filesystem::exists(again->job_dir / "stale.txt"));
}

TEST_F(WorkspaceTest, UnknownShaAndFullDiskAreInfraErrors) {
    auto missing = prepare_workspace(exec, upstream, 7, "1234567890abcdef1234567890abcdef12345678");
    ASSERT_FALSE(missing);
    EXPECT_EQ(missing.error().code, Errc::infra_error);
    EXPECT_NE(missing.error().message.find("checkout of 1234567890abcdef"), std::string::npos)
        << missing.error().message;

    exec.min_free_bytes = ~0ULL;
    auto full = prepare_workspace(exec, upstream, 8, first);
    ASSERT_FALSE(full);
    EXPECT_EQ(full.error().code, Errc::infra_error);
    EXPECT_NE(full.error().message.find("execution.min_free_bytes"), std::string::npos);
    EXPECT_FALSE(std::filesystem::exists(exec.work_root / "jobs" / "8"));

    config::UpstreamConfig none;
    exec.min_free_bytes = 1;
    auto no_mirror = prepare_workspace(exec, none, 9, first);
    ASSERT_TRUE(no_mirror);
    EXPECT_FALSE(no_mirror->checkout);
}

}  // namespace
}  // namespace crcrd::exec
