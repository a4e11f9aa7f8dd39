#include "html.hpp"

#include <cctype>

namespace crcrd::admin::html {

using nlohmann::json;

std::string esc(std::string_view s) {
    std::string out;
    out.reserve(s.size() + s.size() / 8);
    for (char c : s) {
        switch (c) {
            case '&':
                out += "&amp;";
                break;
            case '<':
                out += "&lt;";
                break;
            case '>':
                out += "&gt;";
                break;
            case '"':
                out += "&quot;";
                break;
            case '\'':
                out += "&#39;";
                break;
            default:
                out += c;
        }
    }
    return out;
}

std::string text(const json& v) {
    if (v.is_null()) return "—";
    if (v.is_string()) return esc(v.get_ref<const std::string&>());
    return esc(v.dump());
}

std::string url_encode(std::string_view s) {
    static constexpr char k_hex[] = "0123456789ABCDEF";
    std::string out;
    for (unsigned char c : s) {
        if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
            out += static_cast<char>(c);
        } else {
            out += '%';
            out += k_hex[c >> 4];
            out += k_hex[c & 15];
        }
    }
    return out;
}

std::string badge(const json& name) {
    if (name.is_null()) return "<span class=\"badge\">—</span>";
    std::string n = name.is_string() ? name.get<std::string>() : name.dump();
    std::string cls;
    for (char c : n) cls += std::isalnum(static_cast<unsigned char>(c)) || c == '_' ? c : '-';
    return "<span class=\"badge b-" + cls + "\">" + esc(n) + "</span>";
}

std::string when(const json& t) {
    if (!t.is_string()) return "—";
    std::string s = t.get<std::string>();
    std::string shown = s.substr(0, 19);
    if (shown.size() == 19 && shown[10] == 'T') shown[10] = ' ';
    return "<time datetime=\"" + esc(s) + "\">" + esc(shown) + "</time>";
}

std::string sha_link(const json& sha, const std::string& commit_url) {
    if (!sha.is_string()) return "—";
    const std::string s = sha.get<std::string>();
    std::string shown = "<code>" + esc(s.substr(0, 7)) + "</code>";
    if (commit_url.empty()) return "<span title=\"" + esc(s) + "\">" + shown + "</span>";
    return "<a href=\"" + esc(commit_url + s) + "\" title=\"" + esc(s) + "\">" + shown + "</a>";
}

std::string pre(std::string_view s) {
    return "<pre>" + esc(s) + "</pre>";
}

std::string action_form(const std::string& action, const std::string& label, const Viewer& v,
                        const std::string& css_class) {
    return "<form method=\"post\" action=\"" + esc(action) +
           "\" class=\"inline\"><input type=\"hidden\" name=\"csrf\" value=\"" + esc(v.csrf) +
           "\"><button type=\"submit\"" +
           (css_class.empty() ? "" : " class=\"" + esc(css_class) + "\"") + ">" + esc(label) +
           "</button></form>";
}

std::string page(const std::string& title, const std::string& active, const std::string& body,
                 const Viewer& v) {
    std::string out =
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
        "<title>" +
        esc(title) +
        " · crcrd</title><link rel=\"stylesheet\" href=\"/ui/style.css\"></head><body><header><nav>"
        "<a class=\"brand\" href=\"/ui/\">crcrd</a>";
    for (const auto& [href, name] : {std::pair<const char*, const char*>{"/ui/trunk", "Trunk"},
                                     {"/ui/runs", "Runs"},
                                     {"/ui/tests?flaky=1", "Flaky tests"},
                                     {"/ui/trends", "Trends"},
                                     {"/ui/runners", "Runners"},
                                     {"/ui/builds", "Builds"},
                                     {"/ui/deliveries", "Deliveries"}}) {
        out += std::string("<a href=\"") + href + "\"" +
               (active == name ? " class=\"active\"" : "") + ">" + name + "</a>";
    }
    out += "<span class=\"who\">";
    if (v.signed_in) {
        out += esc(v.name) + (v.admin ? " (admin)" : " (read)") + " " +
               action_form("/ui/logout", "Sign out", v, "link");
    } else {
        out += "<a href=\"/ui/login\">Sign in</a>";
    }
    out += "</span></nav></header><main>" + body + "</main></body></html>\n";
    return out;
}

std::string_view stylesheet() {
    return R"css(:root{--fg:#1b1f24;--muted:#5b636d;--line:#d8dde3;--bg:#fff;--head:#f4f6f8}
*{box-sizing:border-box}
body{margin:0;font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;color:var(--fg);background:var(--bg)}
header{background:#24292f}
nav{display:flex;gap:1.2em;align-items:center;max-width:1280px;margin:0 auto;padding:.6em 1em}
nav a{color:#d0d7de;text-decoration:none}nav a.active,nav a:hover{color:#fff;text-decoration:underline}
nav .brand{color:#fff;font-weight:600}
nav .who{margin-left:auto;color:#d0d7de}
main{max-width:1280px;margin:0 auto;padding:1em}
h1{font-size:1.4em;margin:.2em 0 .6em}h2{font-size:1.1em;margin:1.4em 0 .5em;border-bottom:1px solid var(--line);padding-bottom:.2em}
table{border-collapse:collapse;width:100%}
th,td{text-align:left;padding:.3em .5em;border-bottom:1px solid var(--line);vertical-align:top}
th{background:var(--head);font-weight:600;white-space:nowrap}
td.reason{max-width:32em;overflow-wrap:anywhere}
dl.facts{display:grid;grid-template-columns:max-content 1fr;gap:.2em 1em;margin:0}
dl.facts dt{color:var(--muted)}dl.facts dd{margin:0;overflow-wrap:anywhere}
pre{background:#f6f8fa;border:1px solid var(--line);padding:.6em;overflow:auto;max-height:32em;font-size:12px;white-space:pre-wrap;overflow-wrap:anywhere}
code{font-size:12px}
.badge{display:inline-block;padding:0 .5em;border-radius:1em;font-size:12px;background:#eaeef2;color:#24292f;white-space:nowrap}
.b-passed,.b-success,.b-sent,.b-queued-verdict,.b-idle,.b-found,.b-ready{background:#dafbe1;color:#116329}
.b-regression,.b-failure,.b-dead,.b-rejected,.b-offline,.b-failed{background:#ffebe9;color:#a40e26}
.b-infra_error,.b-error{background:#fbefff;color:#6e40c9}
.b-device_unavailable,.b-drained{background:#ddf4ff;color:#0a3069}
.b-timeout,.b-budget_spent,.b-paused{background:#fff1e5;color:#953800}
.b-flaky,.b-pending,.b-waiting{background:#fff8c5;color:#7d4e00}
.b-pre_existing{background:#d8f3f0;color:#0b5f56}
.b-running,.b-leased,.b-busy,.b-queued{background:#ddf4ff;color:#0969da}
.b-cancelled,.b-coalesced,.b-duplicate,.b-ignored,.b-evicted{background:#eaeef2;color:#57606a}
form.filters{display:flex;flex-wrap:wrap;gap:.5em;align-items:end;margin-bottom:1em}
form.filters label{display:flex;flex-direction:column;font-size:12px;color:var(--muted)}
input,select,button{font:inherit;padding:.2em .4em}
form.inline{display:inline}
button.link{background:none;border:none;color:#d0d7de;text-decoration:underline;cursor:pointer;padding:0}
button.danger{color:#a40e26}
.notice{background:#ddf4ff;border:1px solid #54aeff;padding:.5em .8em;margin-bottom:1em}
.problem{background:#ffebe9;border:1px solid #ff8182;padding:.5em .8em;margin-bottom:1em}
.muted{color:var(--muted)}
.pager{margin-top:1em}
.b-culprit{background:#a40e26;color:#fff}
.b-skipped{background:#eaeef2;color:#57606a}
p.red{background:#ffebe9;border:1px solid #ff8182;padding:.5em .8em;margin:0 0 .6em}
p.green{background:#dafbe1;border:1px solid #4ac26b;padding:.5em .8em;margin:0 0 .6em}
table.trunk td.cell,table.trunk th.tier{text-align:center}
table.trunk td.subject{max-width:28em;overflow-wrap:anywhere}
table.trunk tr.culprit td{background:#fff5f5}
table.trunk .mark{font-size:12px;color:var(--muted)}
p.strip{display:flex;flex-wrap:wrap;gap:2px}
a.strip-cell{text-decoration:none;min-width:1.6em;text-align:center;font-weight:600}
svg.chart{width:100%;height:auto;max-width:900px;display:block}
p.legend{font-size:12px;margin:.2em 0}
table.numbers{font-size:12px;width:auto;margin-bottom:1em}
.login{max-width:28em}
.login input{width:100%;margin:.3em 0 .8em}
)css";
}

}  // namespace crcrd::admin::html
