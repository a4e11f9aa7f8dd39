#include <gtest/gtest.h>

#include "crcrd/app/admin_cli.hpp"

namespace crcrd::app {
namespace {

TEST(CrcrctlUrl, EveryCommandAppendsItsRouteToTheDaemonsBaseUrl) {
    struct Case {
        const char* url;
        const char* route;
        const char* want;
    };
    const Case cases[] = {
        {"https://127.0.0.1:8443", "/api/v1/runs", "https://127.0.0.1:8443/api/v1/runs"},
        {"https://127.0.0.1:8443/", "/api/v1/runs", "https://127.0.0.1:8443/api/v1/runs"},
        {"https://127.0.0.1:8443", "/webhook", "https://127.0.0.1:8443/webhook"},
        // send's older form names the same daemon for every command.
        {"https://127.0.0.1:8443/webhook", "/webhook", "https://127.0.0.1:8443/webhook"},
        {"https://127.0.0.1:8443/webhook/", "/api/v1/runs", "https://127.0.0.1:8443/api/v1/runs"},
        // A proxy's path prefix is kept.
        {"https://ci.example/crcrd", "/api/v1/runs", "https://ci.example/crcrd/api/v1/runs"},
        {"https://ci.example/crcrd/webhook", "/webhook", "https://ci.example/crcrd/webhook"},
        // A host called webhook is a host, not a path.
        {"https://webhook", "/api/v1/runs", "https://webhook/api/v1/runs"},
        {"https://webhook:8443", "/webhook", "https://webhook:8443/webhook"},
    };
    for (const auto& c : cases)
        EXPECT_EQ(endpoint(c.url, c.route), c.want) << c.url << " " << c.route;
}

TEST(CrcrctlExitCodes, FollowTheContract) {
    const std::pair<int, int> statuses[] = {{200, 0}, {201, 0}, {202, 0}, {400, 1},
                                            {401, 4}, {403, 4}, {404, 5}, {405, 1},
                                            {409, 1}, {413, 1}, {500, 1}, {503, 1}};
    for (const auto& [status, code] : statuses)
        EXPECT_EQ(exit_code_of_status(status), code) << status;
    EXPECT_EQ(exit_code_of_error(Errc::network), k_exit_unreachable);
    EXPECT_EQ(exit_code_of_error(Errc::bad_url), k_exit_usage);
}

}  // namespace
}  // namespace crcrd::app
