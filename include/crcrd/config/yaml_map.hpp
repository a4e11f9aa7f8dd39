#pragma once
// A checked view of one YAML mapping: typed getters that record errors under the key path,
// and a report of every key nobody asked for (unknown keys are errors, docs/configuration.md).
// Public because the rules file (select/rules.cpp) is read the same way as crcrd.yaml.

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "crcrd/core/units.hpp"

namespace crcrd::config {

struct ParseContext {
    std::vector<std::string>* errors;
    std::filesystem::path base_dir;

    void error(const std::string& path, const YAML::Node& at, const std::string& message) const;
};

class YamlMap {
  public:
    /// `node` may be undefined or null (an absent section): every getter then leaves its
    /// default, and `required` keys are reported missing.
    YamlMap(const ParseContext& ctx, const YAML::Node& node, std::string path);
    ~YamlMap();
    YamlMap(const YamlMap&) = delete;
    YamlMap& operator=(const YamlMap&) = delete;

    bool present() const { return m_ok && m_node.IsMap(); }
    bool has(const std::string& key) const;
    std::string key_path(const std::string& key) const;
    YAML::Node raw(const std::string& key);

    void get(const std::string& key, std::string& out, bool required = false);
    void get(const std::string& key, std::optional<std::string>& out);
    void get(const std::string& key, bool& out);
    void get(const std::string& key, std::uint16_t& out);
    void get(const std::string& key, std::uint32_t& out);
    void get(const std::string& key, std::optional<std::int64_t>& out);
    void get(const std::string& key, Duration& out);
    void get(const std::string& key, std::vector<std::string>& out, bool required = false);
    void get(const std::string& key, std::map<std::string, std::string>& out);
    void get_size(const std::string& key, std::uint64_t& out);
    void get_path(const std::string& key, std::filesystem::path& out, bool required = false);
    void get_path(const std::string& key, std::optional<std::filesystem::path>& out);

    /// Calls `each(item_map)` for every element of the sequence at `key`; each element must
    /// be a mapping.
    void each(const std::string& key, const std::function<void(YamlMap&)>& each);

    /// A nested mapping; absent when the key is not there.
    YamlMap child(const std::string& key);

    void error(const std::string& key, const std::string& message) const;
    const std::filesystem::path& base_dir() const { return m_ctx.base_dir; }

  private:
    std::optional<std::string> scalar(const std::string& key, const YAML::Node& n);

    const ParseContext& m_ctx;
    YAML::Node m_node;
    std::string m_path;
    bool m_ok = true;
    std::set<std::string> m_used;
};

}  // namespace crcrd::config
