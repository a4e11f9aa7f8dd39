#include <gtest/gtest.h>

#include <set>

#include "crcrd/ingest/recovery.hpp"

namespace crcrd::ingest {
namespace {

TEST(Recovery, WhichGuidsAreRedelivered) {
    struct Case {
        const char* name;
        std::vector<HookDelivery> deliveries;
        std::set<std::string> accepted, redelivered;
        std::vector<std::pair<std::string, std::int64_t>> want;
    };
    const std::vector<Case> cases = {
        {"a failed guid, its newest try",
         {{1, "a", "2026-12-01T10:00:00.000Z", 0}, {2, "a", "2026-12-01T10:05:00.000Z", 502}},
         {},
         {},
         {{"a", 2}}},
        {"one success is enough",
         {{1, "b", "2026-12-01T10:00:00.000Z", 0}, {2, "b", "2026-12-01T11:00:00.000Z", 202}},
         {},
         {},
         {}},
        {"crcrd accepted it although GitHub saw a timeout",
         {{1, "c", "2026-12-01T10:00:00.000Z", 0}},
         {"c"},
         {},
         {}},
        {"asked once already", {{1, "d", "2026-12-01T10:00:00.000Z", 500}}, {}, {"d"}, {}},
        {"200 and 204 are successes too",
         {{1, "e", "2026-12-01T10:00:00.000Z", 200}, {2, "f", "2026-12-01T10:00:00.000Z", 204}},
         {},
         {},
         {}},
        {"a 4xx is not a success", {{1, "g", "2026-12-01T10:00:00.000Z", 401}}, {}, {}, {{"g", 1}}},
        {"no guid, nothing to ask", {{1, "", "2026-12-01T10:00:00.000Z", 0}}, {}, {}, {}},
    };
    for (const auto& c : cases) {
        auto got = to_redeliver(
            c.deliveries, [&](const std::string& g) { return c.accepted.count(g) > 0; },
            [&](const std::string& g) { return c.redelivered.count(g) > 0; });
        EXPECT_EQ(got, c.want) << c.name;
    }
}

}  // namespace
}  // namespace crcrd::ingest
