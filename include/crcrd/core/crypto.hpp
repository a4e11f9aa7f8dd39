#pragma once
// Small wrappers over OpenSSL: HMAC, SHA-256, constant-time comparison, encodings, randomness.

#include <optional>
#include <string>
#include <string_view>

namespace crcrd::crypto {

/// HMAC-SHA256 of `data` under `key`; returns the 32 raw bytes.
std::string hmac_sha256(std::string_view key, std::string_view data);

/// SHA-256 of `data` as 64 lower-case hex characters.
std::string sha256_hex(std::string_view data);

/// True when a and b have the same length and bytes. The time taken depends only on the
/// lengths, never on where the first difference is.
bool constant_time_equal(std::string_view a, std::string_view b);

/// Lower-case hex of raw bytes.
std::string hex_encode(std::string_view bytes);

/// Raw bytes of a hex string (either case); nullopt when the length is odd or a character is
/// not hex.
std::optional<std::string> hex_decode(std::string_view hex);

/// Standard base64 with padding.
std::string base64_encode(std::string_view bytes);

/// Raw bytes of standard base64 (padding required when the length needs it); nullopt on any
/// character outside the alphabet or a bad length.
std::optional<std::string> base64_decode(std::string_view text);

/// base64url without padding (RFC 7515), as JWTs use it.
std::string base64url_encode(std::string_view bytes);

/// `n` bytes from OpenSSL's CSPRNG.
std::string random_bytes(std::size_t n);

/// A random RFC 4122 version-4 UUID in its canonical lower-case form.
std::string random_uuid();

}  // namespace crcrd::crypto
