#include "crcrd/core/log.hpp"

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace crcrd::log {

namespace {

/// `%*`: the sd-daemon priority prefix of the line's level, "<3>" for an error.
class PriorityFlag final : public spdlog::custom_flag_formatter {
  public:
    void format(const spdlog::details::log_msg& msg, const std::tm&,
                spdlog::memory_buf_t& dest) override {
        const std::string_view p = priority_prefix(msg.level);
        dest.append(p.data(), p.data() + p.size());
    }
    std::unique_ptr<custom_flag_formatter> clone() const override {
        return std::make_unique<PriorityFlag>();
    }
};

}  // namespace

std::string_view priority_prefix(spdlog::level::level_enum level) {
    switch (level) {
        case spdlog::level::critical:
            return "<2>";  // SD_CRIT
        case spdlog::level::err:
            return "<3>";  // SD_ERR
        case spdlog::level::warn:
            return "<4>";  // SD_WARNING
        case spdlog::level::info:
            return "<6>";  // SD_INFO
        default:
            return "<7>";  // SD_DEBUG: debug and trace
    }
}

bool stderr_is_journal() {
    const char* stream = std::getenv("JOURNAL_STREAM");
    if (!stream) return false;
    unsigned long long dev = 0, ino = 0;
    char end = 0;
    if (std::sscanf(stream, "%llu:%llu%c", &dev, &ino, &end) != 2) return false;
    struct stat st {};
    if (::fstat(2, &st) != 0) return false;
    return static_cast<unsigned long long>(st.st_dev) == dev &&
           static_cast<unsigned long long>(st.st_ino) == ino;
}

void init(std::string_view level) {
    spdlog::drop("crcrd");
    auto logger = spdlog::stderr_logger_mt("crcrd");
    // Under systemd each line starts with its priority, so journald files an error as `err`
    // (journalctl -p err finds it); anywhere else the lines are as they always were.
    auto formatter = std::make_unique<spdlog::pattern_formatter>(spdlog::pattern_time_type::utc);
    formatter->add_flag<PriorityFlag>('*');
    formatter->set_pattern(stderr_is_journal() ? "%*%Y-%m-%dT%H:%M:%S.%eZ %l %v"
                                               : "%Y-%m-%dT%H:%M:%S.%eZ %l %v");
    logger->set_formatter(std::move(formatter));
    auto lvl = spdlog::level::from_str(std::string(level));
    if (lvl == spdlog::level::off && level != "off") lvl = spdlog::level::info;
    logger->set_level(lvl);
    logger->flush_on(spdlog::level::trace);
    spdlog::set_default_logger(logger);
}

}  // namespace crcrd::log
