#include "crcrd/config/yaml_map.hpp"

#include <charconv>
#include <limits>
#include <set>

namespace crcrd::config {

void ParseContext::error(const std::string& path, const YAML::Node& at,
                         const std::string& message) const {
    std::string where;
    if (at.IsDefined() && at.Mark().line >= 0) {
        where = " (line " + std::to_string(at.Mark().line + 1) + ")";
    }
    errors->push_back((path.empty() ? std::string("(top)") : path) + ": " + message + where);
}

YamlMap::YamlMap(const ParseContext& ctx, const YAML::Node& node, std::string path)
    : m_ctx(ctx), m_node(node), m_path(std::move(path)) {
    if (m_node.IsDefined() && !m_node.IsNull() && !m_node.IsMap()) {
        m_ctx.error(m_path, m_node, "must be a mapping");
        m_ok = false;
    }
}

YamlMap::~YamlMap() {
    if (!present()) return;
    std::set<std::string> seen;
    for (const auto& kv : m_node) {
        std::string key;
        try {
            key = kv.first.as<std::string>();
        } catch (const YAML::Exception&) {
            m_ctx.error(m_path, kv.first, "keys must be strings");
            continue;
        }
        // yaml-cpp keeps the first of two equal keys without a word: an error, not a surprise.
        if (!seen.insert(key).second) m_ctx.error(key_path(key), kv.first, "given twice");
        if (!m_used.count(key)) m_ctx.error(key_path(key), kv.first, "unknown key");
    }
}

std::string YamlMap::key_path(const std::string& key) const {
    return m_path.empty() ? key : m_path + "." + key;
}

bool YamlMap::has(const std::string& key) const {
    return present() && m_node[key].IsDefined() && !m_node[key].IsNull();
}

YAML::Node YamlMap::raw(const std::string& key) {
    m_used.insert(key);
    if (!present()) return YAML::Node(YAML::NodeType::Undefined);
    return m_node[key];
}

void YamlMap::error(const std::string& key, const std::string& message) const {
    YAML::Node at = present() ? m_node[key] : m_node;
    m_ctx.error(key_path(key), at.IsDefined() ? at : m_node, message);
}

std::optional<std::string> YamlMap::scalar(const std::string& key, const YAML::Node& n) {
    if (!n.IsScalar()) {
        error(key, "must be a single value");
        return std::nullopt;
    }
    return n.Scalar();
}

void YamlMap::get(const std::string& key, std::string& out, bool required) {
    YAML::Node n = raw(key);
    if (!n.IsDefined() || n.IsNull()) {
        if (required) error(key, "required");
        return;
    }
    if (auto s = scalar(key, n)) out = *s;
}

void YamlMap::get(const std::string& key, std::optional<std::string>& out) {
    if (!has(key)) {
        raw(key);
        return;
    }
    std::string s;
    get(key, s);
    out = s;
}

void YamlMap::get(const std::string& key, bool& out) {
    YAML::Node n = raw(key);
    if (!n.IsDefined() || n.IsNull()) return;
    auto s = scalar(key, n);
    if (!s) return;
    if (*s == "true")
        out = true;
    else if (*s == "false")
        out = false;
    else
        error(key, "must be true or false");
}

namespace {
template <class T>
std::optional<T> to_int(const std::string& s) {
    T v{};
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
    return v;
}
}  // namespace

void YamlMap::get(const std::string& key, std::uint16_t& out) {
    YAML::Node n = raw(key);
    if (!n.IsDefined() || n.IsNull()) return;
    if (auto s = scalar(key, n)) {
        if (auto v = to_int<std::uint16_t>(*s))
            out = *v;
        else
            error(key, "must be an integer from 0 to 65535");
    }
}

void YamlMap::get(const std::string& key, std::uint32_t& out) {
    YAML::Node n = raw(key);
    if (!n.IsDefined() || n.IsNull()) return;
    if (auto s = scalar(key, n)) {
        if (auto v = to_int<std::uint32_t>(*s))
            out = *v;
        else
            error(key, "must be a non-negative integer");
    }
}

void YamlMap::get(const std::string& key, std::optional<std::int64_t>& out) {
    YAML::Node n = raw(key);
    if (!n.IsDefined() || n.IsNull()) return;
    if (auto s = scalar(key, n)) {
        if (auto v = to_int<std::int64_t>(*s))
            out = *v;
        else
            error(key, "must be an integer");
    }
}

void YamlMap::get(const std::string& key, Duration& out) {
    YAML::Node n = raw(key);
    if (!n.IsDefined() || n.IsNull()) return;
    if (auto s = scalar(key, n)) {
        auto d = parse_duration(*s);
        if (d)
            out = *d;
        else
            error(key, d.error().message);
    }
}

void YamlMap::get_size(const std::string& key, std::uint64_t& out) {
    YAML::Node n = raw(key);
    if (!n.IsDefined() || n.IsNull()) return;
    if (auto s = scalar(key, n)) {
        auto v = parse_size(*s);
        if (v)
            out = *v;
        else
            error(key, v.error().message);
    }
}

void YamlMap::get(const std::string& key, std::vector<std::string>& out, bool required) {
    YAML::Node n = raw(key);
    if (!n.IsDefined() || n.IsNull()) {
        if (required) error(key, "required");
        return;
    }
    if (!n.IsSequence()) {
        error(key, "must be a list");
        return;
    }
    std::vector<std::string> v;
    for (std::size_t i = 0; i < n.size(); ++i) {
        if (!n[i].IsScalar()) {
            m_ctx.error(key_path(key) + "[" + std::to_string(i) + "]", n[i], "must be a string");
            return;
        }
        v.push_back(n[i].Scalar());
    }
    out = std::move(v);
}

void YamlMap::get(const std::string& key, std::map<std::string, std::string>& out) {
    YAML::Node n = raw(key);
    if (!n.IsDefined() || n.IsNull()) return;
    if (!n.IsMap()) {
        error(key, "must be a mapping of names to strings");
        return;
    }
    std::map<std::string, std::string> m;
    for (const auto& kv : n) {
        if (!kv.first.IsScalar() || !kv.second.IsScalar()) {
            m_ctx.error(key_path(key), kv.first, "entries must map a name to a string");
            return;
        }
        m[kv.first.Scalar()] = kv.second.Scalar();
    }
    out = std::move(m);
}

void YamlMap::get_path(const std::string& key, std::filesystem::path& out, bool required) {
    std::string s;
    get(key, s, required);
    if (s.empty()) {
        if (has(key)) error(key, "must not be empty");
        return;
    }
    std::filesystem::path p(s);
    out = p.is_absolute() ? p : (m_ctx.base_dir / p).lexically_normal();
}

void YamlMap::get_path(const std::string& key, std::optional<std::filesystem::path>& out) {
    if (!has(key)) {
        raw(key);
        return;
    }
    std::filesystem::path p;
    get_path(key, p);
    if (!p.empty()) out = p;
}

void YamlMap::each(const std::string& key, const std::function<void(YamlMap&)>& fn) {
    YAML::Node n = raw(key);
    if (!n.IsDefined() || n.IsNull()) return;
    if (!n.IsSequence()) {
        error(key, "must be a list");
        return;
    }
    for (std::size_t i = 0; i < n.size(); ++i) {
        std::string p = key_path(key) + "[" + std::to_string(i) + "]";
        if (!n[i].IsMap()) {
            m_ctx.error(p, n[i], "must be a mapping");
            continue;
        }
        YamlMap item(m_ctx, n[i], p);
        fn(item);
    }
}

YamlMap YamlMap::child(const std::string& key) {
    return YamlMap(m_ctx, raw(key), key_path(key));
}

}  // namespace crcrd::config
