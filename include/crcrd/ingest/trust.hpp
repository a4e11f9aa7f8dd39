#pragma once
// The trust policy (docs/ingest.md), applied to a verified and normalised Event.

#include <string>

#include "crcrd/config/config.hpp"
#include "crcrd/ingest/event.hpp"

namespace crcrd::ingest {

struct TrustDecision {
    enum class Action { allow, forbid, ignore } action = Action::allow;
    std::string reason;  // why forbidden or ignored
};

/// The event type the `trust.events` list speaks of: the upstream event for CRCR v1 and
/// direct GitHub forms, the dispatch action for the flat forms.
std::string event_type(const Event& e);

/// forbid: the payload names another upstream repo, the dispatch came to another downstream
/// repo or from a sender not listed, or the event type is disabled. ignore: a fork PR the
/// fork policy does not run. Repository names compare case-insensitively, as GitHub's do.
/// A ping is always allowed (it carries no work).
TrustDecision decide(const Event& e, const config::TrustConfig& trust);

}  // namespace crcrd::ingest
