#include "crcrd/core/log.hpp"

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_sinks.h>

#include <string>

namespace crcrd::log {

void init(std::string_view level) {
    spdlog::drop("crcrd");
    auto logger = spdlog::stderr_logger_mt("crcrd");
    logger->set_formatter(std::make_unique<spdlog::pattern_formatter>(
        "%Y-%m-%dT%H:%M:%S.%eZ %l %v", spdlog::pattern_time_type::utc));
    auto lvl = spdlog::level::from_str(std::string(level));
    if (lvl == spdlog::level::off && level != "off") lvl = spdlog::level::info;
    logger->set_level(lvl);
    logger->flush_on(spdlog::level::trace);
    spdlog::set_default_logger(logger);
}

}  // namespace crcrd::log
