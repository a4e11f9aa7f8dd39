// The mirror against a real git repository as upstream.
#include <gtest/gtest.h>

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
    EXPECT_EQ(none.error().code, "git");
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
    EXPECT_NE(missing.error().message.find("upstream.remote is not set"), std::string::npos) << missing.error().message;
}

}  // namespace
}  // namespace crcrd::vcs
