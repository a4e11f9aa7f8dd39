// The sandbox launcher's request (sandbox_launcher.hpp): what the client encodes the launcher
// reads back whole, and a malformed request is refused with its reason.
#include <gtest/gtest.h>

#include "crcrd/exec/sandbox_launcher.hpp"

namespace crcrd::exec::sandbox {
namespace {

TEST(SandboxRequest, RoundTripsArgumentsEnvironmentAndFolder) {
    Request r{{"bwrap", "--ro-bind", "/", "/", "--", "sh", "-c", "echo 'a b'; printf '\\n'", ""},
              {"PATH=/usr/bin", "EMPTY=", "MULTI=line1\nline2"},
              "/var/lib/crcrd/work/jobs/7"};
    Request back;
    std::string why;
    ASSERT_TRUE(decode(encode(r), back, why)) << why;
    EXPECT_EQ(back.argv, r.argv);
    EXPECT_EQ(back.env, r.env);
    EXPECT_EQ(back.cwd, r.cwd);
}

TEST(SandboxRequest, RefusesWhatIsNotAWholeRequest) {
    const std::string good = encode(Request{{"bwrap", "true"}, {"A=1"}, "/tmp"});
    struct Case {
        std::string bytes;
        const char* why;
    };
    std::string no_args = good;
    no_args.replace(no_args.find('2', 16), 1, "0");  // argc, after the version
    const Case cases[] = {
        {"", "not a crcrd-sandbox/2 request"},
        {std::string("crcrd-sandbox/1\0", 16) + good.substr(16), "not a crcrd-sandbox/2 request"},
        {no_args, "no command"},
        {good.substr(0, good.find("true")), "the arguments end early"},
        {good.substr(0, good.find("A=1")), "the environment ends early"},
        {good.substr(0, good.find("/tmp")) + std::string("tmp\0", 4), "no absolute folder"},
        {good + "x", "bytes after the folder"},
        {std::string("crcrd-sandbox/2\0"
                     "99999999\0",
                     25),
         "no command"},
    };
    for (const auto& c : cases) {
        Request r;
        std::string why;
        EXPECT_FALSE(decode(c.bytes, r, why)) << c.why;
        EXPECT_EQ(why, c.why);
    }
}

}  // namespace
}  // namespace crcrd::exec::sandbox
