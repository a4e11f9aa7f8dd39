#include <gtest/gtest.h>

#include "crcrd/ingest/trust.hpp"

namespace crcrd::ingest {
namespace {

using V = TrustDecision::Action;

Event pr_event() {
    Event e;
    e.intent = Intent::run;
    e.form = "crcr-v1";
    e.event = RunEvent::pull_request;
    e.sha = "ec26c3e57ca3a959ca5aad62de7213c562f8c821";
    e.pr = 2;
    e.upstream_repo = "pytorch/pytorch";
    e.head_repo = "pytorch/pytorch";
    e.downstream_repo = "torch-spyre/torch-spyre";
    e.sender = "relay[bot]";
    return e;
}

config::TrustConfig trust() {
    config::TrustConfig t;
    t.downstream_repo = "torch-spyre/torch-spyre";
    t.fork_policy = config::ForkPolicy::require_label;
    t.fork_labels = {"ciflow/crcr/spyre"};
    return t;
}

TEST(Trust, Table) {
    struct Case {
        const char* name;
        std::function<void(Event&, config::TrustConfig&)> setup;
        V verdict;
    };
    const std::vector<Case> cases = {
        {"same-repo PR", [](Event&, config::TrustConfig&) {}, V::allow},
        {"repo names are case-insensitive",
         [](Event& e, config::TrustConfig&) { e.upstream_repo = "PyTorch/PyTorch"; }, V::allow},
        {"other upstream", [](Event& e, config::TrustConfig&) { e.upstream_repo = "evil/pytorch"; },
         V::forbid},
        {"other downstream",
         [](Event& e, config::TrustConfig&) { e.downstream_repo = "evil/spyre"; }, V::forbid},
        {"sender listed", [](Event&, config::TrustConfig& t) { t.senders = {"relay[bot]"}; },
         V::allow},
        {"sender not listed", [](Event&, config::TrustConfig& t) { t.senders = {"someone-else"}; },
         V::forbid},
        {"event disabled", [](Event&, config::TrustConfig& t) { t.events = {"push"}; }, V::forbid},
        {"fork without label",
         [](Event& e, config::TrustConfig&) { e.head_repo = "someone/pytorch"; }, V::ignore},
        {"fork with label",
         [](Event& e, config::TrustConfig&) {
             e.head_repo = "someone/pytorch";
             e.labels = {"bug", "ciflow/crcr/spyre"};
         },
         V::allow},
        {"fork, policy run",
         [](Event& e, config::TrustConfig& t) {
             e.head_repo = "someone/pytorch";
             t.fork_policy = config::ForkPolicy::run;
         },
         V::allow},
        {"fork, policy ignore even with label",
         [](Event& e, config::TrustConfig& t) {
             e.head_repo = "someone/pytorch";
             e.labels = {"ciflow/crcr/spyre"};
             t.fork_policy = config::ForkPolicy::ignore;
         },
         V::ignore},
        {"fork PR closed still cancels",
         [](Event& e, config::TrustConfig&) {
             e.head_repo = "someone/pytorch";
             e.intent = Intent::cancel_pr;
         },
         V::allow},
        {"legacy form type enabled",
         [](Event& e, config::TrustConfig&) {
             e.form = "pytorch-pr-trigger";
             e.upstream_repo.reset();
         },
         V::allow},
        {"legacy form type disabled",
         [](Event& e, config::TrustConfig& t) {
             e.form = "pytorch-pr-trigger";
             t.events = {"pull_request"};
         },
         V::forbid},
        {"ping is always allowed",
         [](Event& e, config::TrustConfig&) {
             e.intent = Intent::ping;
             e.downstream_repo = "other/repo";
         },
         V::allow},
    };
    for (const auto& c : cases) {
        Event e = pr_event();
        auto t = trust();
        c.setup(e, t);
        auto d = decide(e, t);
        EXPECT_EQ(d.action, c.verdict) << c.name << ": " << d.reason;
        if (c.verdict != V::allow) {
            EXPECT_FALSE(d.reason.empty()) << c.name;
        }
    }
}

}  // namespace
}  // namespace crcrd::ingest
