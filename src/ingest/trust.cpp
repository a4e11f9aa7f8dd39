#include "crcrd/ingest/trust.hpp"

#include <strings.h>
#include <algorithm>

namespace crcrd::ingest {

namespace {

bool same_repo(const std::string& a, const std::string& b) {
    return a.size() == b.size() && strncasecmp(a.c_str(), b.c_str(), a.size()) == 0;
}

bool contains(const std::vector<std::string>& v, const std::string& x) {
    return std::find(v.begin(), v.end(), x) != v.end();
}

TrustDecision forbid(std::string reason) {
    return {TrustDecision::Action::forbid, std::move(reason)};
}

}  // namespace

std::string event_type(const Event& e) {
    if (e.form == "pytorch-pr-trigger" || e.form == "pytorch-crcr") return e.form;
    return e.event ? std::string(to_string(*e.event)) : std::string();
}

TrustDecision decide(const Event& e, const config::TrustConfig& trust) {
    if (e.intent == Intent::ping) return {};
    if (e.upstream_repo && !same_repo(*e.upstream_repo, trust.upstream_repo)) {
        return forbid("upstream repository '" + *e.upstream_repo + "' is not " +
                      trust.upstream_repo);
    }
    if (e.downstream_repo && !same_repo(*e.downstream_repo, trust.downstream_repo)) {
        return forbid("dispatch for repository '" + *e.downstream_repo + "', expected " +
                      trust.downstream_repo);
    }
    if (e.downstream_repo && !trust.senders.empty() &&
        (!e.sender || !contains(trust.senders, *e.sender))) {
        return forbid("sender '" + e.sender.value_or("") + "' is not in trust.senders");
    }
    // An unknown dispatch action or an unhandled GitHub event has no type to enable.
    if (e.intent == Intent::ignore && !e.event) return {};
    std::string type = event_type(e);
    if (!contains(trust.events, type)) return forbid("event type '" + type + "' is not enabled");

    const bool fork =
        e.head_repo && !same_repo(*e.head_repo, e.upstream_repo.value_or(trust.upstream_repo));
    if (fork && e.intent == Intent::run) {
        if (trust.fork_policy == config::ForkPolicy::ignore) {
            return {TrustDecision::Action::ignore,
                    "pull request from fork " + *e.head_repo + " ignored by trust.fork_policy"};
        }
        if (trust.fork_policy == config::ForkPolicy::require_label) {
            bool labelled =
                std::any_of(e.labels.begin(), e.labels.end(),
                            [&](const std::string& l) { return contains(trust.fork_labels, l); });
            if (!labelled) {
                return {TrustDecision::Action::ignore,
                        "pull request from fork " + *e.head_repo +
                            " has none of the labels in trust.fork_labels"};
            }
        }
    }
    return {};
}

}  // namespace crcrd::ingest
