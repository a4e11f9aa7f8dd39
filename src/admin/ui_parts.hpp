#pragma once
// Admin-internal: the pieces the dashboard's pages share (ui_pages.cpp, ui_builds.cpp): links,
// filter forms, the pager and the notice boxes. Every text they put in a page is escaped.

#include <nlohmann/json.hpp>

#include <span>
#include <string>
#include <string_view>

#include "ui_pages.hpp"

namespace crcrd::admin::ui {

/// j[key] when it is a string; "" otherwise.
std::string str(const nlohmann::json& j, const char* key);
/// A run id linked to its page (a non-integer as text).
std::string run_link(const nlohmann::json& id);
/// A job id linked to its page (a non-integer as text).
std::string job_link(const nlohmann::json& id);
/// A test's name linked to its history page (a non-string as text).
std::string test_link(const nlohmann::json& name);
/// "#N" linked to the upstream's pull page when `links` has one; "—" without a number.
std::string pr_link(const nlohmann::json& pr, const Links& links);
/// A filter form's select of `names` (plus "any") with the submitted value chosen.
std::string select(const char* name, const char* label, std::span<const std::string_view> names,
                   const FormValues& form);
/// A filter form's text input holding the submitted value.
std::string input(const char* name, const char* label, const FormValues& form,
                  const char* placeholder = "");
/// The "Older →" link to `base` with the form's values and the list's `next_cursor`; "" on the
/// last page.
std::string pager(const std::string& base, const nlohmann::json& list, const FormValues& form);
/// A refused filter or action, above the table; "" for none.
std::string problem_box(const std::string& problem);
/// An action's outcome at the top of a page; "" for none.
std::string notice_box(const std::string& notice);

}  // namespace crcrd::admin::ui
