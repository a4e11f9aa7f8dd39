// The build stage's files (exec/build.hpp): the key, as a table of what changes it, and the
// publication of a build's output on a real file system, with the outputs it must refuse.
#include "crcrd/exec/build.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include "crcrd/core/files.hpp"
#include "support/temp_dir.hpp"

namespace crcrd::exec {
namespace {

namespace fs = std::filesystem;

BuildKeyInputs base() {
    BuildKeyInputs in;
    in.upstream_sha = "ec26c3e57ca3a959ca5aad62de7213c562f8c821";
    in.backend_sha = "1111111111111111111111111111111111111111";
    in.argv = {"/opt/ci/build.sh", "--release"};
    in.command_sha256 = std::string(64, 'a');
    in.key_env = {{"TORCH_CUDA_ARCH_LIST", ""}, {"USE_SPYRE", "1"}};
    return in;
}

TEST(BuildKey, EveryInputChangesTheKeyAndNothingElseDoes) {
    const std::string k = build_key(base());
    EXPECT_EQ(k.size(), 64u);
    EXPECT_EQ(build_key(base()), k) << "the same inputs, the same key";
    struct Case {
        const char* name;
        void (*change)(BuildKeyInputs&);
    };
    const Case cases[] = {
        {"upstream SHA", [](BuildKeyInputs& i) { i.upstream_sha[0] = 'f'; }},
        {"backend SHA", [](BuildKeyInputs& i) { i.backend_sha = ""; }},
        {"an argument", [](BuildKeyInputs& i) { i.argv[1] = "--debug"; }},
        {"one argument more", [](BuildKeyInputs& i) { i.argv.push_back(""); }},
        {"arguments split differently",
         [](BuildKeyInputs& i) { i.argv = {"/opt/ci/build.sh --release"}; }},
        {"the command file's bytes", [](BuildKeyInputs& i) { i.command_sha256[0] = 'b'; }},
        {"a key_env value", [](BuildKeyInputs& i) { i.key_env[1].second = "0"; }},
        {"a value moved to the next name",
         [](BuildKeyInputs& i) {
             i.key_env = {{"TORCH_CUDA_ARCH_LIST", "1"}, {"USE_SPYRE", ""}};
         }},
        {"the recipe version", [](BuildKeyInputs& i) { i.version += 1; }},
    };
    for (const auto& c : cases) {
        BuildKeyInputs in = base();
        c.change(in);
        EXPECT_NE(build_key(in), k) << c.name;
    }
}

TEST(BuildRecipe, ReadsTheCommandFileAndTheKeyEnvValues) {
    TempDir dir;
    write_file(dir.path() / "build.sh", "#!/bin/sh\nmake\n");
    config::BuildConfig b;
    b.command = {(dir.path() / "build.sh").string(), "-j8"};
    b.key_env = {"USE_SPYRE", "MISSING"};
    auto in = build_recipe(b, {{"USE_SPYRE", "1"}, {"OTHER", "x"}}, std::nullopt);
    EXPECT_EQ(in.argv, b.command);
    EXPECT_EQ(in.backend_sha, "");
    EXPECT_EQ(in.command_sha256.size(), 64u);
    EXPECT_EQ(in.key_env, (std::vector<std::pair<std::string, std::string>>{{"USE_SPYRE", "1"},
                                                                            {"MISSING", ""}}));
    in.upstream_sha = "ec26c3e57ca3a959ca5aad62de7213c562f8c821";
    const auto before = build_key(in);
    write_file(dir.path() / "build.sh", "#!/bin/sh\nmake -k\n");
    auto changed = build_recipe(b, {{"USE_SPYRE", "1"}}, std::nullopt);
    changed.upstream_sha = in.upstream_sha;
    EXPECT_NE(build_key(changed), before) << "an edited build script is a new key";
}

class PublishTest : public ::testing::Test {
  protected:
    fs::path cache() { return dir.path() / "cache"; }
    fs::path partial() {
        auto p = make_partial(cache(), "k1", 7);
        EXPECT_TRUE(p) << p.error().message;
        return *p;
    }
    TempDir dir;
};

TEST_F(PublishTest, AGoodOutputIsRenamedIntoPlaceWithItsSize) {
    const auto out = partial();
    EXPECT_EQ(out, cache() / ".partial" / "k1.7");
    write_file(out / "lib" / "libspyre.so", std::string(1000, 'x'));
    write_file(out / "include" / "spyre.h", "int f();\n");
    fs::create_symlink("../lib/libspyre.so", out / "include" / "link.so");
    fs::create_symlink("lib", out / "lib-alias");
    auto size = publish_build(out, cache(), "k1");
    ASSERT_TRUE(size) << size.error().message;
    EXPECT_EQ(*size, 1009);
    EXPECT_FALSE(fs::exists(out));
    EXPECT_EQ(read_file(cache() / "k1" / "include" / "link.so").value(), std::string(1000, 'x'));
}

TEST_F(PublishTest, WhatABuildMustNotLeaveIsRefusedByNameAndNothingIsPublished) {
    struct Case {
        const char* name;
        void (*make)(const fs::path& out);
        const char* says;
    };
    const Case cases[] = {
        {"absolute link", [](const fs::path& o) { fs::create_symlink("/etc/passwd", o / "p"); },
         "the symbolic link k1/p points outside the build (to /etc/passwd)"},
        {"link up and out",
         [](const fs::path& o) {
             fs::create_directories(o / "a");
             fs::create_symlink("../../../secret", o / "a" / "s");
         },
         "the symbolic link k1/a/s points outside the build"},
        {"link to the folder's parent",
         [](const fs::path& o) { fs::create_symlink("..", o / "up"); }, "k1/up points outside"},
        {"a fifo", [](const fs::path& o) { ::mkfifo((o / "f").c_str(), 0600); },
         "k1/f is neither a file, a folder nor a link"},
    };
    for (const auto& c : cases) {
        const auto out = partial();
        write_file(out / "ok.txt", "fine");
        c.make(out);
        auto r = publish_build(out, cache(), "k1");
        ASSERT_FALSE(r) << c.name;
        EXPECT_NE(r.error().message.find(c.says), std::string::npos)
            << c.name << ": " << r.error().message;
        EXPECT_FALSE(fs::exists(cache() / "k1")) << c.name;
        EXPECT_FALSE(fs::exists(out)) << c.name << ": the refused output is removed";
    }
    // Too many entries.
    const auto out = partial();
    for (int i = 0; i < 5; ++i) write_file(out / std::to_string(i), "");
    auto r = publish_build(out, cache(), "k1", 4);
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().message.find("more than 4 entries"), std::string::npos);
}

TEST_F(PublishTest, AnOutputFolderReplacedByALinkIsRefused) {
    const auto out = partial();
    fs::remove(out);
    fs::create_symlink("/etc", out);
    auto r = publish_build(out, cache(), "k1");
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().message.find("is no longer a folder"), std::string::npos);
    EXPECT_FALSE(fs::exists(cache() / "k1"));
    EXPECT_TRUE(fs::exists("/etc/passwd"));
}

TEST_F(PublishTest, ALeftoverFolderIsReplacedAndRemovalAndCleaningLeaveNothing) {
    write_file(cache() / "k1" / "old.txt", "old");
    const auto out = partial();
    write_file(out / "new.txt", "new");
    ASSERT_TRUE(publish_build(out, cache(), "k1"));
    EXPECT_FALSE(fs::exists(cache() / "k1" / "old.txt"));
    EXPECT_TRUE(fs::exists(cache() / "k1" / "new.txt"));
    remove_build(cache(), "k1");
    EXPECT_FALSE(fs::exists(cache() / "k1"));
    (void)partial();
    clean_partials(cache());
    EXPECT_FALSE(fs::exists(cache() / ".partial"));
    // An adopted build's partial folder (its Slurm job goes on) is kept, with what it wrote.
    const auto adopted = make_partial(cache(), "k2", 8).value();
    write_file(adopted / "half.o", "obj");
    (void)partial();
    clean_partials(cache(), {adopted});
    EXPECT_TRUE(fs::exists(adopted / "half.o"));
    EXPECT_FALSE(fs::exists(cache() / ".partial" / "k1.7"));
}

}  // namespace
}  // namespace crcrd::exec
