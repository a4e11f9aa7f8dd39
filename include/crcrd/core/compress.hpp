#pragma once
// Compression for stored payloads: GitHub webhook bodies are repetitive JSON (URLs, user
// objects) and shrink about tenfold, which is most of the database's size and write load.
// Zstandard at its fastest level: a 37 KiB delivery costs tens of microseconds.

#include <string>
#include <string_view>

#include "crcrd/core/result.hpp"

namespace crcrd {

/// A Zstandard frame of `data`.
std::string compress(std::string_view data);

/// The original bytes of a compress() result; code "corrupt" when the frame is damaged or
/// larger than `max_size`.
Result<std::string> decompress(std::string_view frame, std::size_t max_size = 64 * 1024 * 1024);

}  // namespace crcrd
