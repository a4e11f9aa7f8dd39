#pragma once
// The webhook endpoint (docs/ingest.md): signature → JSON → normalise → trust → pin → a
// durable verdict. Every request leaves one row in the delivery log; a 2xx is answered only
// after the writer committed it.

#include <boost/asio/awaitable.hpp>

#include <map>
#include <memory>
#include <mutex>
#include <optional>

#include "crcrd/config/config.hpp"
#include "crcrd/http/message.hpp"
#include "crcrd/http/reject_log.hpp"
#include "crcrd/ingest/event.hpp"
#include "crcrd/ingest/signature.hpp"
#include "crcrd/store/deliveries.hpp"
#include "crcrd/store/writer.hpp"

namespace crcrd::ingest {

/// What SIGHUP may replace: secrets, trust, and the ingest settings.
struct Policy {
    KeyRing keys;
    config::IngestConfig ingest;
    config::TrustConfig trust;
    std::map<std::string, std::string> concurrency;  // event -> pr | branch | none
    bool post_merge = false;                         // selection.post_merge
    Duration retry_after = std::chrono::seconds(30);
};

/// What a request to the webhook path is, decided without storing anything: the delivery
/// row to write (a run, a cancel, an ignore, a pong, or a rejection), the normalised event
/// when the body was valid, and for a rejection the answer (status 0 otherwise).
struct Evaluation {
    std::shared_ptr<store::Delivery> delivery;
    http::Response rejection;
    std::optional<Event> event;
};

/// Signature, body, normalisation and trust (docs/ingest.md) as one pure function of
/// the request, the policy and the time (Unix seconds). Never throws for bad input; the
/// fuzz target calls it with arbitrary bytes.
Evaluation evaluate(const http::Request& req, const Policy& policy, std::int64_t now_unix);

class WebhookHandler {
  public:
    WebhookHandler(std::shared_ptr<const Policy> policy, store::Writer& writer);

    /// Swaps the policy atomically; requests in flight finish with the one they started with.
    void set_policy(std::shared_ptr<const Policy> policy);

    /// Answers one request to the webhook path (any method). Never throws for bad input.
    boost::asio::awaitable<http::Response> handle(http::Request& req);

    /// Logs the summaries of rejection floods whose minute ended; call it about once a minute.
    void flush_reject_log();

  private:
    std::shared_ptr<const Policy> policy() const;

    mutable std::mutex m_mu;
    std::shared_ptr<const Policy> m_policy;
    store::Writer& m_writer;
    http::RejectLog m_rejects;
};

}  // namespace crcrd::ingest
