#pragma once
// Five-field cron expressions (minute hour day-of-month month day-of-week), evaluated in UTC,
// for `full_matrix.schedule`.

#include <bitset>
#include <chrono>
#include <string>

#include "crcrd/core/result.hpp"

namespace crcrd::select {

class Cron {
  public:
    /// Parses "m h dom mon dow": each field `*`, a number, `a-b`, a list `a,b`, and steps
    /// `*/n` or `a-b/n`. Day of week 0-7 (0 and 7 are Sunday). As in Vixie cron, when both
    /// day fields are restricted a day matching either one fires. Errors name the field.
    static Result<Cron> parse(const std::string& text);

    /// The first firing time strictly after `after`, at a whole minute (UTC).
    std::chrono::system_clock::time_point next_after(
        std::chrono::system_clock::time_point after) const;

    const std::string& text() const { return m_text; }

  private:
    std::string m_text;
    std::bitset<60> m_minute;
    std::bitset<24> m_hour;
    std::bitset<32> m_dom;
    std::bitset<13> m_month;
    std::bitset<8> m_dow;
    bool m_dom_any = true;
    bool m_dow_any = true;
};

}  // namespace crcrd::select
