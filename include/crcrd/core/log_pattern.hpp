#pragma once
// Classification patterns (classify.device_patterns, classify.infra_patterns): RE2 regexes
// searched in a job's log. One definition of how they compile, so that the configuration
// refuses exactly what the classifier could not use.

#include <re2/re2.h>

#include <memory>
#include <string>

#include "crcrd/core/result.hpp"

namespace crcrd::log_pattern {

/// RE2's options for every classification pattern: Latin-1 (one character per byte, so a log
/// that is not UTF-8 is still searched byte for byte, as std::regex did) and never matching
/// "\n" (a match lies within one line even when a whole log is searched at once).
RE2::Options options();

/// `pattern` in multi-line mode: `^` and `$` match at the ends of every line of a log.
std::string multiline(const std::string& pattern);

/// The compiled multiline(pattern). Code "pattern" when RE2 refuses it; the message names
/// the pattern and RE2's reason.
Result<std::shared_ptr<const RE2>> compile(const std::string& pattern);

}  // namespace crcrd::log_pattern
