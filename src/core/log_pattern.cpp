#include "crcrd/core/log_pattern.hpp"

namespace crcrd::log_pattern {

RE2::Options options() {
    RE2::Options o;
    o.set_encoding(RE2::Options::EncodingLatin1);
    o.set_never_nl(true);
    o.set_log_errors(false);
    return o;
}

std::string multiline(const std::string& pattern) {
    return "(?m)" + pattern;
}

Result<std::shared_ptr<const RE2>> compile(const std::string& pattern) {
    auto re = std::make_shared<const RE2>(multiline(pattern), options());
    if (re->ok()) return std::shared_ptr<const RE2>(std::move(re));
    // RE2's reason for the pattern as written, without the "(?m)" this file put in front.
    const RE2 as_written(pattern, options());
    return make_error(Errc::pattern, "'" + pattern + "' is not a valid RE2 regex: " +
                                         (as_written.ok() ? re->error() : as_written.error()));
}

}  // namespace crcrd::log_pattern
