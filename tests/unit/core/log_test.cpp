// Journald priorities (docs/operations.md, "Logs"): with stderr as the journal stream every
// line starts with the sd-daemon prefix of its level; anywhere else the lines are unchanged.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "crcrd/core/files.hpp"
#include "crcrd/core/log.hpp"
#include "support/temp_dir.hpp"

namespace crcrd {
namespace {

/// The lines the logger writes to stderr while stderr is a fresh file, with $JOURNAL_STREAM
/// set to `journal_stream(file)` (unset when it returns "").
template <class Stream>
std::vector<std::string> logged(Stream journal_stream) {
    TempDir dir;
    const auto file = dir.path() / "stderr";
    std::fflush(stderr);
    const int saved = ::dup(2);
    const int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    EXPECT_GE(fd, 0);
    ::dup2(fd, 2);
    ::close(fd);
    const std::string stream = journal_stream(file);
    if (stream.empty())
        ::unsetenv("JOURNAL_STREAM");
    else
        ::setenv("JOURNAL_STREAM", stream.c_str(), 1);
    log::init("trace");
    spdlog::critical("c line");
    spdlog::error("e line");
    spdlog::warn("w line");
    spdlog::info("i line");
    spdlog::debug("d line");
    spdlog::trace("t line");
    std::fflush(stderr);
    ::dup2(saved, 2);
    ::close(saved);
    ::unsetenv("JOURNAL_STREAM");
    log::init("info");
    std::vector<std::string> lines;
    std::istringstream in(read_file(file).value());
    for (std::string l; std::getline(in, l);) lines.push_back(l);
    return lines;
}

std::string dev_ino(const std::filesystem::path& p) {
    struct stat st {};
    EXPECT_EQ(::stat(p.c_str(), &st), 0);
    return std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino);
}

TEST(Log, UnderJournaldEveryLineStartsWithThePriorityOfItsLevel) {
    const auto lines = logged([](const std::filesystem::path& f) { return dev_ino(f); });
    ASSERT_EQ(lines.size(), 6u);
    const char* want[][2] = {{"<2>", "critical c line"}, {"<3>", "error e line"},
                             {"<4>", "warning w line"},  {"<6>", "info i line"},
                             {"<7>", "debug d line"},    {"<7>", "trace t line"}};
    for (std::size_t i = 0; i < lines.size(); ++i) {
        EXPECT_EQ(lines[i].substr(0, 3), want[i][0]) << lines[i];
        EXPECT_NE(lines[i].find(want[i][1]), std::string::npos) << lines[i];
        EXPECT_EQ(lines[i].find('<', 1), std::string::npos) << lines[i];  // one prefix
    }
}

TEST(Log, ElsewhereTheLinesAreUnchanged) {
    // Not set; set for another file (stderr redirected by a child of the service); malformed.
    for (auto stream : {std::string(), std::string("1:2"), std::string("garbage")}) {
        const auto lines = logged([&](const std::filesystem::path&) { return stream; });
        ASSERT_EQ(lines.size(), 6u) << stream;
        for (const auto& l : lines) {
            EXPECT_NE(l.front(), '<') << stream << ": " << l;
            EXPECT_EQ(l[4], '-') << l;  // starts with the date
        }
        EXPECT_NE(lines[1].find("Z error e line"), std::string::npos) << lines[1];
    }
}

TEST(Log, PriorityPrefixes) {
    EXPECT_EQ(log::priority_prefix(spdlog::level::err), "<3>");
    EXPECT_EQ(log::priority_prefix(spdlog::level::warn), "<4>");
    EXPECT_EQ(log::priority_prefix(spdlog::level::info), "<6>");
    EXPECT_EQ(log::priority_prefix(spdlog::level::debug), "<7>");
    EXPECT_EQ(log::priority_prefix(spdlog::level::critical), "<2>");
}

}  // namespace
}  // namespace crcrd
