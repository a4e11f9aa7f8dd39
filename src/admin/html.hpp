#pragma once
// Admin-internal: the dashboard's HTML building blocks (docs/dashboard.md). Every text that
// comes from the database, a payload or a request goes through esc(); nothing here needs
// JavaScript.

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>

namespace crcrd::admin::html {

/// `s` with & < > " ' replaced by their character references: safe in text and in quoted
/// attribute values.
std::string esc(std::string_view s);
/// A JSON value as escaped text: strings as they are, null as an em dash, others dumped.
std::string text(const nlohmann::json& v);
/// Percent-encodes `s` for a query value or a path segment.
std::string url_encode(std::string_view s);
/// A class or state as a coloured badge (unknown names get the neutral colour).
std::string badge(const nlohmann::json& name);
/// A stored RFC 3339 UTC time as "2026-12-01 16:28:02", in a <time> element; "—" for null.
std::string when(const nlohmann::json& t);
/// The first 7 characters of a SHA, linked to `commit_url` + sha when that is set.
std::string sha_link(const nlohmann::json& sha, const std::string& commit_url);
/// A <pre> block of `s` (escaped).
std::string pre(std::string_view s);

/// Who is looking at a page, for its header and its forms.
struct Viewer {
    bool signed_in = false;  // a dashboard session (cookie)
    std::string name;        // the token's name; empty for ui_public visitors
    bool admin = false;      // may use the write forms (a session with an admin token)
    std::string csrf;        // the session's CSRF token
};

/// A POST form to `action` with the CSRF field and one submit button.
std::string action_form(const std::string& action, const std::string& label, const Viewer& v,
                        const std::string& css_class = "");
/// The whole document: head, stylesheet link, navigation (with `active` marked), the viewer
/// and sign-out form, then `body`.
std::string page(const std::string& title, const std::string& active, const std::string& body,
                 const Viewer& v);

/// The stylesheet served at /ui/style.css.
std::string_view stylesheet();

}  // namespace crcrd::admin::html
