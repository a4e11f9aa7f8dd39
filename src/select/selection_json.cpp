// The stored form of a Selection: the nlohmann tree (to_json(), for callers that edit or indent
// it) and the same compact text written directly (to_json_text(), what the planner stores).
#include <charconv>

#include "crcrd/select/selection.hpp"

namespace crcrd::select {

using nlohmann::json;

namespace {

/// The size of the well-formed UTF-8 sequence that starts at s[i] (a byte ≥ 0x80), or 0 when
/// none does (Unicode table 3-7: no overlong forms, surrogates or code points past U+10FFFF;
/// what nlohmann's dump() accepts).
std::size_t utf8_sequence(std::string_view s, std::size_t i) {
    const auto byte = [&](std::size_t k) {
        return i + k < s.size() ? static_cast<unsigned char>(s[i + k]) : 0u;
    };
    const unsigned lead = byte(0);
    std::size_t n = 0;
    unsigned lo = 0x80, hi = 0xbf;  // the range of the second byte
    if (lead >= 0xc2 && lead <= 0xdf) {
        n = 2;
    } else if (lead >= 0xe0 && lead <= 0xef) {
        n = 3;
        if (lead == 0xe0) lo = 0xa0;
        if (lead == 0xed) hi = 0x9f;
    } else if (lead >= 0xf0 && lead <= 0xf4) {
        n = 4;
        if (lead == 0xf0) lo = 0x90;
        if (lead == 0xf4) hi = 0x8f;
    } else {
        return 0;
    }
    if (byte(1) < lo || byte(1) > hi) return 0;
    for (std::size_t k = 2; k < n; ++k)
        if (byte(k) < 0x80 || byte(k) > 0xbf) return 0;
    return n;
}

/// Writes JSON as nlohmann's dump() (no indent, ensure_ascii off) does; `valid` turns false
/// when a string is not UTF-8, the one case where dump() throws instead.
class Writer {
  public:
    explicit Writer(std::size_t reserve) { m_out.reserve(reserve); }

    Writer& raw(std::string_view s) {
        m_out += s;
        return *this;
    }

    Writer& number(std::size_t n) {
        char buf[24];
        m_out.append(buf, std::to_chars(buf, buf + sizeof buf, n).ptr);
        return *this;
    }

    Writer& string(std::string_view s) {
        static constexpr char k_hex[] = "0123456789abcdef";
        m_out += '"';
        std::size_t plain = 0;  // start of the bytes not yet written
        for (std::size_t i = 0; i < s.size();) {
            const auto c = static_cast<unsigned char>(s[i]);
            if (c >= 0x80) {
                const std::size_t n = utf8_sequence(s, i);
                if (n == 0) m_valid = false;
                i += n ? n : 1;
                continue;
            }
            if (c >= 0x20 && c != '"' && c != '\\') {
                ++i;
                continue;
            }
            m_out.append(s, plain, i - plain);
            switch (c) {
                case '"':
                    m_out += "\\\"";
                    break;
                case '\\':
                    m_out += "\\\\";
                    break;
                case '\b':
                    m_out += "\\b";
                    break;
                case '\f':
                    m_out += "\\f";
                    break;
                case '\n':
                    m_out += "\\n";
                    break;
                case '\r':
                    m_out += "\\r";
                    break;
                case '\t':
                    m_out += "\\t";
                    break;
                default:
                    m_out += "\\u00";
                    m_out += k_hex[c >> 4];
                    m_out += k_hex[c & 15];
            }
            plain = ++i;
        }
        m_out.append(s, plain);
        m_out += '"';
        return *this;
    }

    /// `v` as a JSON array, `write_one` writing each element.
    template <class T, class WriteOne>
    Writer& list(const std::vector<T>& v, WriteOne write_one) {
        m_out += '[';
        for (std::size_t i = 0; i < v.size(); ++i) {
            if (i) m_out += ',';
            write_one(v[i]);
        }
        m_out += ']';
        return *this;
    }

    Writer& strings(const std::vector<std::string>& v) {
        return list(v, [this](const std::string& s) { string(s); });
    }

    bool valid() const { return m_valid; }
    std::string take() { return std::move(m_out); }

  private:
    std::string m_out;
    bool m_valid = true;
};

std::size_t text_size(const std::vector<std::string>& v) {
    std::size_t n = 2;
    for (const auto& s : v) n += s.size() + 3;
    return n;
}

}  // namespace

json Selection::to_json() const {
    json rules_j = json::array();
    for (const auto& r : rules)
        rules_j.push_back({{"name", r.name}, {"paths", r.paths}, {"matched", r.matched}});
    json tiers_j = json::array();
    for (const auto& t : tiers)
        tiers_j.push_back({{"name", t.name}, {"reason", t.reason}, {"tests", t.tests}});
    json j = {{"source", to_string(source)},
              {"changed_paths", changed_paths},
              {"rules", rules_j},
              {"tiers", tiers_j},
              {"unmatched", unmatched},
              {"unmatched_paths", unmatched_paths},
              {"docs_only", docs_only}};
    if (!reason.empty()) j["reason"] = reason;
    if (!note.empty()) j["note"] = note;
    return j;
}

std::string Selection::to_json_text() const {
    std::size_t size = 256 + reason.size() + note.size() + text_size(unmatched_paths);
    for (const auto& r : rules) size += 64 + r.name.size() + text_size(r.paths);
    for (const auto& t : tiers) size += 64 + t.name.size() + t.reason.size() + text_size(t.tests);
    // The keys in nlohmann's order (sorted, its objects are std::maps).
    Writer w(size);
    w.raw("{\"changed_paths\":")
        .number(changed_paths)
        .raw(",\"docs_only\":")
        .raw(docs_only ? "true" : "false");
    if (!note.empty()) w.raw(",\"note\":").string(note);
    if (!reason.empty()) w.raw(",\"reason\":").string(reason);
    w.raw(",\"rules\":").list(rules, [&](const RuleMatch& r) {
        w.raw("{\"matched\":").number(r.matched).raw(",\"name\":").string(r.name);
        w.raw(",\"paths\":").strings(r.paths).raw("}");
    });
    w.raw(",\"source\":")
        .string(to_string(source))
        .raw(",\"tiers\":")
        .list(tiers, [&](const TierChoice& t) {
            w.raw("{\"name\":").string(t.name).raw(",\"reason\":").string(t.reason);
            w.raw(",\"tests\":").strings(t.tests).raw("}");
        });
    w.raw(",\"unmatched\":")
        .number(unmatched)
        .raw(",\"unmatched_paths\":")
        .strings(unmatched_paths)
        .raw("}");
    if (!w.valid()) return to_json().dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    return w.take();
}

}  // namespace crcrd::select
