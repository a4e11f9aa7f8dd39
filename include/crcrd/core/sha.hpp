#pragma once
// Commit SHAs as they arrive from outside (webhooks, the admin API, crcrctl).

#include <string_view>

namespace crcrd {

/// True for exactly 40 hex characters (either case) that are not all zeros. Only checks the
/// form: whether such a commit exists is the mirror's business.
bool valid_sha(std::string_view sha);

}  // namespace crcrd
