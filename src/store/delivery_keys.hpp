#pragma once
// Store-internal: the idempotency keys an accepted delivery claims in `delivery_keys`
// (deliveries.cpp writes them, recovery.cpp looks them up).

#include <string>

namespace crcrd::store {

/// The key of a transport delivery id (X-GitHub-Delivery or webhook-id).
inline std::string transport_key(const std::string& delivery_id) {
    return "transport:" + delivery_id;
}

/// The key of the relay's client_payload.delivery_id.
inline std::string crcr_key(const std::string& crcr_delivery_id) {
    return "crcr:" + crcr_delivery_id;
}

}  // namespace crcrd::store
