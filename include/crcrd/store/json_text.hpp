#pragma once
// A JSON value as a TEXT column holds it. Repositories take it instead of a std::string, so
// that no caller passes arbitrary text as JSON; it is serialised where it is made (on the
// caller's thread, not in the writer's transaction).

#include <string>
#include <utility>

#include <nlohmann/json.hpp>

namespace crcrd::store {

class JsonText {
  public:
    explicit JsonText(const nlohmann::json& value) : m_text(value.dump()) {}
    /// Text a serialiser of this program wrote as JSON (select::Selection::to_json_text()).
    static JsonText serialised(std::string text) { return JsonText(Raw{std::move(text)}); }
    const std::string& text() const { return m_text; }

  private:
    struct Raw {
        std::string text;
    };
    explicit JsonText(Raw raw) : m_text(std::move(raw.text)) {}
    std::string m_text;
};

}  // namespace crcrd::store
