// An answer lost after the server acted on the request (the stand-in relay stores a callback
// and closes the connection without answering, tests/support/fake_relay.hpp): the client
// reports a network error, never a success; when it sent the request again because the lost
// answer was on a kept connection, the answer it returns says so.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "crcrd/http/client.hpp"
#include "support/certs.hpp"
#include "support/fake_relay.hpp"

namespace crcrd::http {
namespace {

using nlohmann::json;

/// A callback the relay and HUD accept for job `job` of delivery "guid-1".
std::string callback(const std::string& job, const std::string& status) {
    json wf = {{"status", status},
               {"run_id", "42"},
               {"run_attempt", 1},
               {"name", "ci"},
               {"job_name", job},
               {"check_run_id", "7"},
               {"started_at", "2025-01-01T00:00:00Z"}};
    if (status == "completed") wf["conclusion"] = "success";
    return json{{"delivery_id", "guid-1"}, {"workflow", wf}}.dump();
}

Result<ClientResponse> post(const FakeRelay& relay, const std::string& body) {
    ClientOptions o;
    o.ca_file = test_certs().ca;
    return send("POST", relay.url(), {{"Authorization", "Bearer relay-oidc-token-1"}}, body, o);
}

std::vector<int> statuses(const FakeRelay& relay) {
    std::vector<int> out;
    for (const auto& ex : relay.exchanges()) out.push_back(ex.status);
    return out;
}

TEST(ClientLostAnswer, OnANewConnectionItIsANetworkErrorAndTheRequestWentOnce) {
    FakeRelay relay;
    relay.dispatched("guid-1");
    relay.lose_answers(1);
    auto r = post(relay, callback("unit", "in_progress"));
    ASSERT_FALSE(r) << "status " << r->status;
    EXPECT_EQ(r.error().code, Errc::network) << r.error().message;
    EXPECT_EQ(relay.accepted().size(), 1u) << "stored before the answer was lost";
    EXPECT_EQ(statuses(relay), (std::vector<int>{0}));
    // The next one is answered.
    auto next = post(relay, callback("unit", "completed"));
    ASSERT_TRUE(next) << next.error().message;
    EXPECT_EQ(next->status, 200);
    EXPECT_FALSE(next->resent);
}

TEST(ClientLostAnswer, OnAKeptConnectionTheRequestGoesAgainAndTheAnswerSaysResent) {
    FakeRelay relay;
    relay.dispatched("guid-1");
    auto first = post(relay, callback("unit", "in_progress"));
    ASSERT_TRUE(first) << first.error().message;
    ASSERT_EQ(first->status, 200);
    EXPECT_FALSE(first->resent);
    relay.lose_answers(1);
    // On the connection the first one kept: stored, answer lost, sent again on a new one,
    // where the relay refuses the repeat.
    auto r = post(relay, callback("unit", "completed"));
    ASSERT_TRUE(r) << r.error().message;
    EXPECT_TRUE(r->resent);
    EXPECT_EQ(r->status, 400);
    EXPECT_NE(r->body.find("invalid state transition"), std::string::npos) << r->body;
    EXPECT_EQ(relay.accepted().size(), 2u);
    EXPECT_EQ(statuses(relay), (std::vector<int>{200, 0, 400}));
}

}  // namespace
}  // namespace crcrd::http
