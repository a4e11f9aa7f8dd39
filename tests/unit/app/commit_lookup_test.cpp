// The trunk grid's commit subjects (app/commit_lookup.hpp, issue 34's review): text that is not
// UTF-8 from a real git commit, one read for concurrent asks of the same commits, and what is
// remembered kept across a configuration reload.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <atomic>
#include <future>
#include <thread>

#include "app/commit_lookup.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"

namespace crcrd::app {
namespace {

using nlohmann::json;

const std::string k_a = std::string(40, 'a');
const std::string k_b = std::string(40, 'b');

config::UpstreamConfig upstream(const std::filesystem::path& mirror) {
    config::UpstreamConfig up;
    up.mirror = mirror;
    return up;
}

TEST(CommitLookup, ASubjectAndAuthorNotInUtf8HaveTheirBadBytesReplaced) {
    TempDir dir;
    const auto repo = dir.path() / "repo";
    run_test_git({"init", "--quiet", "-b", "main", repo.string()});
    write_file(repo / "f.txt", "x\n");
    run_test_git({"-C", repo.string(), "add", "-A"});
    // Latin-1 bytes, as an old import tool wrote them: not UTF-8 (`git commit` would have
    // converted them; the object is written as such, as fast-import or a push would).
    const std::string tree = run_test_git({"-C", repo.string(), "write-tree"});
    write_file(dir.path() / "commit",
               "tree " + tree +
                   "\nauthor J\xe9r\xf4me <j@example.org> 1700000000 +0000\n"
                   "committer J\xe9r\xf4me <j@example.org> 1700000000 +0000\n\nfix \xff\xfe "
                   "caf\xe9\n");
    const std::string sha = run_test_git({"-C", repo.string(), "hash-object", "-t", "commit", "-w",
                                          (dir.path() / "commit").string()});

    CommitLookup lookup;
    lookup.set_upstream(upstream(repo / ".git"));
    const json found = lookup.lookup({sha});
    ASSERT_TRUE(found.contains(sha)) << found.dump(-1, ' ', false, json::error_handler_t::replace);
    // The API's serialisation is strict: it would have thrown (a 500 for the whole grid).
    std::string body;
    ASSERT_NO_THROW(body = found.dump());
    const std::string fffd = "\xEF\xBF\xBD";
    EXPECT_EQ(found[sha]["subject"], "fix " + fffd + fffd + " caf" + fffd);
    EXPECT_EQ(found[sha]["author"], "J" + fffd + "r" + fffd + "me");
}

TEST(CommitLookup, ConcurrentAsksOfTheSameCommitsRunOneReadAndTheMemoryOutlivesAReload) {
    std::atomic<int> reads{0};
    std::promise<void> release;
    std::shared_future<void> released = release.get_future().share();
    std::promise<void> reading;
    CommitLookup lookup([&](const config::UpstreamConfig&, const std::vector<std::string>& shas) {
        if (++reads == 1) {
            reading.set_value();
            released.wait();  // a slow mirror
        }
        json out = json::object();
        for (const auto& s : shas) out[s] = {{"subject", "s " + s.substr(0, 1)}, {"author", "a"}};
        return out;
    });
    TempDir dir;
    lookup.set_upstream(upstream(dir.path()));
    auto first = std::async(std::launch::async, [&] { return lookup.lookup({k_a, k_b}); });
    reading.get_future().wait();
    // While the first read hangs, a second ask of the same commits does not start another
    // (git on a second admin reader thread): it answers without them after a short wait.
    const json second = lookup.lookup({k_a, k_b});
    EXPECT_EQ(reads.load(), 1);
    EXPECT_TRUE(second.empty()) << second.dump();
    release.set_value();
    EXPECT_EQ(first.get()[k_a]["subject"], "s a");
    // A reload (the same mirror or another) keeps what was read: no read again.
    lookup.set_upstream(upstream(dir.path()));
    EXPECT_EQ(lookup.lookup({k_a, k_b})[k_b]["subject"], "s b");
    lookup.set_upstream(upstream(dir.path() / "other"));
    EXPECT_EQ(lookup.lookup({k_a})[k_a]["subject"], "s a");
    EXPECT_EQ(reads.load(), 1);
}

TEST(CommitLookup, AnAskThatJoinsAQuickReadGetsItsAnswer) {
    std::atomic<int> reads{0};
    std::promise<void> reading, release;
    auto released = release.get_future().share();
    CommitLookup lookup([&](const config::UpstreamConfig&, const std::vector<std::string>& shas) {
        ++reads;
        reading.set_value();
        released.wait();
        json out = json::object();
        for (const auto& s : shas) out[s] = {{"subject", "quick"}};
        return out;
    });
    TempDir dir;
    lookup.set_upstream(upstream(dir.path()));
    auto first = std::async(std::launch::async, [&] { return lookup.lookup({k_a}); });
    reading.get_future().wait();
    auto second = std::async(std::launch::async, [&] { return lookup.lookup({k_a}); });
    release.set_value();  // the read ends while the second ask waits for it
    EXPECT_EQ(first.get()[k_a]["subject"], "quick");
    EXPECT_EQ(second.get()[k_a]["subject"], "quick");
    EXPECT_EQ(reads.load(), 1);
}

}  // namespace
}  // namespace crcrd::app
