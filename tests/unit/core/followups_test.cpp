// Which follow-ups a finished run leaves (core/vocab.hpp, followups_after), as a table.
#include <gtest/gtest.h>

#include "crcrd/core/vocab.hpp"

namespace crcrd {
namespace {

TEST(Followups, OnlyTrunkRegressionsAndBisectRunsLeaveWork) {
    using E = RunEvent;
    using S = RunState;
    using C = Conclusion;
    using K = FollowupKind;
    struct Case {
        E event;
        S ended;
        C conclusion;
        std::vector<K> want;
    };
    const Case cases[] = {
        {E::push, S::completed, C::regression, {K::bisect}},
        {E::schedule, S::completed, C::regression, {K::bisect, K::audit}},
        {E::pull_request, S::completed, C::regression, {}},
        {E::manual, S::completed, C::regression, {}},
        {E::push, S::completed, C::passed, {}},
        {E::push, S::completed, C::pre_existing, {}},
        {E::schedule, S::completed, C::infra_error, {}},
        {E::push, S::cancelled, C::cancelled, {}},
        {E::bisect, S::completed, C::regression, {K::bisect_step}},
        {E::bisect, S::completed, C::passed, {K::bisect_step}},
        {E::bisect, S::cancelled, C::cancelled, {K::bisect_step}},
    };
    for (const auto& c : cases) {
        EXPECT_EQ(followups_after(c.event, c.ended, c.conclusion), c.want)
            << to_string(c.event) << " " << to_string(c.ended) << " " << to_string(c.conclusion);
    }
}

}  // namespace
}  // namespace crcrd
