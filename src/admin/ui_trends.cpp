// The dashboard's trends page (docs/dashboard.md, "Trends"), rendered from GET
// /api/v1/stats/daily: five charts as inline SVG drawn with presentation attributes only (no
// script, no style attribute: the page's Content-Security-Policy stays as it is), each with its
// numbers in a table beneath it.
#include <cmath>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "ui_pages.hpp"
#include "ui_parts.hpp"

namespace crcrd::admin::ui {

using html::esc;
using nlohmann::json;

namespace {

constexpr int k_width = 900, k_height = 220, k_left = 56, k_bottom = 24, k_top = 8;

/// One line or one bar segment per day.
struct Series {
    std::string name, colour;
    std::vector<std::optional<double>> values;  // one per day; nullopt: nothing that day
    std::vector<bool> beyond;                   // per day: the value is a lower bound ("> v")
};

std::string number(double v, const char* format = "%.1f") {
    char buf[48];
    std::snprintf(buf, sizeof buf, format, v);
    return buf;
}

/// A value as the tables show it: `unit` "%" (of 1), "s" (of ms), "h" (of ms), "" as is.
std::string shown(const std::optional<double>& v, const std::string& unit) {
    if (!v) return "—";
    if (unit == "%") return number(100.0 * *v) + " %";
    if (unit == "s") return number(*v / 1000.0) + " s";
    if (unit == "h") return number(*v / 3'600'000.0, "%.2f") + " h";
    return number(*v, "%.0f");
}

const char* k_palette[] = {"#0969da", "#cf222e", "#1a7f37", "#8250df", "#bf8700",
                           "#0a3069", "#953800", "#57606a", "#116329", "#a40e26"};

std::string colour_of_class(const std::string& c) {
    if (c == "passed") return "#2da44e";
    if (c == "flaky") return "#d4a72c";
    if (c == "regression") return "#cf222e";
    if (c == "infra_error") return "#8250df";
    if (c == "device_unavailable") return "#0969da";
    if (c == "timeout") return "#bc4c00";
    if (c == "pre_existing") return "#1b7c83";
    return "#8c959f";
}

double x_of(std::size_t i, std::size_t n) {
    const double step = static_cast<double>(k_width - k_left - 8) / static_cast<double>(n);
    return k_left + step * (static_cast<double>(i) + 0.5);
}

double y_of(double v, double max) {
    const double h = k_height - k_bottom - k_top;
    return k_top + h - (max > 0 ? v / max : 0) * h;
}

/// The frame: the y axis's top and zero labels, the first and last day under the x axis.
std::string frame(const std::vector<std::string>& days, double max, const std::string& unit) {
    std::string out = "<line x1=\"" + std::to_string(k_left) + "\" y1=\"" +
                      std::to_string(k_height - k_bottom) + "\" x2=\"" + std::to_string(k_width) +
                      "\" y2=\"" + std::to_string(k_height - k_bottom) +
                      "\" stroke=\"#8c959f\" stroke-width=\"1\"/>";
    out += "<text x=\"4\" y=\"" + std::to_string(k_top + 10) +
           "\" font-size=\"11\" fill=\"#57606a\">" + esc(shown(max, unit)) + "</text>";
    out += "<text x=\"4\" y=\"" + std::to_string(k_height - k_bottom) +
           "\" font-size=\"11\" fill=\"#57606a\">0</text>";
    if (!days.empty()) {
        out += "<text x=\"" + std::to_string(k_left) + "\" y=\"" + std::to_string(k_height - 6) +
               "\" font-size=\"11\" fill=\"#57606a\">" + esc(days.front()) + "</text>";
        out += "<text x=\"" + std::to_string(k_width) + "\" y=\"" + std::to_string(k_height - 6) +
               "\" font-size=\"11\" fill=\"#57606a\" text-anchor=\"end\">" + esc(days.back()) +
               "</text>";
    }
    return out;
}

std::string legend(const std::vector<Series>& series) {
    std::string out = "<p class=\"legend\">";
    for (const auto& s : series) {
        out +=
            "<svg width=\"12\" height=\"12\" aria-hidden=\"true\"><rect width=\"12\" "
            "height=\"12\" fill=\"" +
            esc(s.colour) + "\"/></svg> " + esc(s.name) + " ";
    }
    return out + "</p>";
}

/// The chart's numbers: a row per day, a column per series.
std::string numbers_table(const std::string& id, const std::vector<std::string>& days,
                          const std::vector<Series>& series, const std::string& unit) {
    std::string out = "<table class=\"numbers\" id=\"" + esc(id) + "-numbers\"><tr><th>day</th>";
    for (const auto& s : series) out += "<th>" + esc(s.name) + "</th>";
    out += "</tr>";
    for (std::size_t i = 0; i < days.size(); ++i) {
        out += "<tr><td>" + esc(days[i]) + "</td>";
        for (const auto& s : series) {
            const bool beyond = i < s.beyond.size() && s.beyond[i];
            out += "<td>" + esc((beyond ? "> " : "") + shown(s.values[i], unit)) + "</td>";
        }
        out += "</tr>";
    }
    return out + "</table>";
}

std::string svg_open(const std::string& id, const std::string& title) {
    return "<svg id=\"" + esc(id) + "\" class=\"chart\" viewBox=\"0 0 " + std::to_string(k_width) +
           " " + std::to_string(k_height) + "\" role=\"img\" aria-label=\"" + esc(title) + "\">";
}

/// Lines, one per series, over the days; `max` at the top (the largest value when 0).
std::string line_chart(const std::string& id, const std::string& title,
                       const std::vector<std::string>& days, const std::vector<Series>& series,
                       const std::string& unit, double max = 0) {
    if (max <= 0) {
        for (const auto& s : series)
            for (const auto& v : s.values)
                if (v) max = std::max(max, *v);
        if (max <= 0) max = 1;
    }
    std::string out = "<h2>" + esc(title) + "</h2>" + svg_open(id, title) + frame(days, max, unit);
    for (const auto& s : series) {
        std::string points;
        for (std::size_t i = 0; i < s.values.size(); ++i) {
            if (!s.values[i]) continue;
            const double x = x_of(i, days.size()), y = y_of(*s.values[i], max);
            points += number(x) + "," + number(y) + " ";
            out += "<circle cx=\"" + number(x) + "\" cy=\"" + number(y) + "\" r=\"2.5\" fill=\"" +
                   esc(s.colour) + "\"/>";
        }
        if (!points.empty()) {
            out += "<polyline points=\"" + points + "\" fill=\"none\" stroke=\"" + esc(s.colour) +
                   "\" stroke-width=\"2\"/>";
        }
    }
    return out + "</svg>" + legend(series) + numbers_table(id, days, series, unit);
}

/// Bars stacked from the series, one per day.
std::string stacked_bars(const std::string& id, const std::string& title,
                         const std::vector<std::string>& days, const std::vector<Series>& series) {
    double max = 1;
    for (std::size_t i = 0; i < days.size(); ++i) {
        double sum = 0;
        for (const auto& s : series) sum += s.values[i].value_or(0);
        max = std::max(max, sum);
    }
    std::string out = "<h2>" + esc(title) + "</h2>" + svg_open(id, title) + frame(days, max, "");
    const double bar = std::max(
        2.0, static_cast<double>(k_width - k_left - 8) / static_cast<double>(days.size()) * 0.7);
    for (std::size_t i = 0; i < days.size(); ++i) {
        double base = 0;
        for (const auto& s : series) {
            const double v = s.values[i].value_or(0);
            if (v <= 0) continue;
            const double top = y_of(base + v, max), bottom = y_of(base, max);
            out += "<rect x=\"" + number(x_of(i, days.size()) - bar / 2) + "\" y=\"" + number(top) +
                   "\" width=\"" + number(bar) + "\" height=\"" + number(bottom - top) +
                   "\" fill=\"" + esc(s.colour) + "\"><title>" +
                   esc(days[i] + ": " + s.name + " " + shown(v, "")) + "</title></rect>";
            base += v;
        }
    }
    return out + "</svg>" + legend(series) + numbers_table(id, days, series, "");
}

/// The series of `key` (an object per day) for each of `names`.
std::vector<Series> per_name(const json& days, const char* key,
                             const std::vector<std::string>& names) {
    std::vector<Series> out;
    for (std::size_t k = 0; k < names.size(); ++k) {
        Series s{names[k], k_palette[k % std::size(k_palette)], {}, {}};
        for (const auto& d : days) {
            const json v = d.value(key, json::object()).value(names[k], json(nullptr));
            s.values.push_back(v.is_number() ? std::optional<double>(v.get<double>())
                                             : std::nullopt);
        }
        out.push_back(std::move(s));
    }
    return out;
}

std::vector<std::string> strings(const json& a) {
    std::vector<std::string> out;
    for (const auto& v : a)
        if (v.is_string()) out.push_back(v.get<std::string>());
    return out;
}

/// The series of a number field of each day; `beyond_key` names the flag that says the value
/// is only a lower bound.
Series field(const json& days, const char* key, const std::string& name, const char* colour,
             const char* beyond_key = nullptr) {
    Series s{name, colour, {}, {}};
    for (const auto& d : days) {
        const json v = d.value(key, json(nullptr));
        s.values.push_back(v.is_number() ? std::optional<double>(v.get<double>()) : std::nullopt);
        s.beyond.push_back(beyond_key && d.value(beyond_key, false));
    }
    return s;
}

}  // namespace

std::string trends_page(const json& stats, const std::string& problem, const html::Viewer& v) {
    const json days_json = stats.value("days", json::array());
    std::vector<std::string> days;
    for (const auto& d : days_json) days.push_back(str(d, "day"));
    std::string body = "<h1>Trends, the last " + std::to_string(days.size()) + " days</h1>" +
                       problem_box(problem) +
                       "<p class=\"muted\">By UTC day, from the daily roll-ups; each chart's "
                       "numbers are in the table beneath it.</p>";
    if (days.empty()) return html::page("Trends", "Trends", body, v);
    // Runs by class: the classes any day has, in the order of the vocabulary.
    std::vector<Series> classes;
    for (const char* c : {"passed", "flaky", "regression", "pre_existing", "infra_error",
                          "device_unavailable", "timeout", "cancelled"}) {
        Series s{c, colour_of_class(c), {}, {}};
        bool any = false;
        for (const auto& d : days_json) {
            const json n = d.value("runs", json::object()).value(c, json(nullptr));
            s.values.push_back(n.is_number() ? std::optional<double>(n.get<double>()) : 0.0);
            any = any || (n.is_number() && n.get<double>() > 0);
        }
        if (any) classes.push_back(std::move(s));
    }
    body += stacked_bars("runs", "Runs by class", days, classes);
    struct Lines {
        const char* id;
        const char* title;
        std::vector<Series> series;
        const char* unit;
        double max;  // 0: the largest value
    };
    const std::vector<std::string> tiers = strings(stats.value("tiers", json::array()));
    const std::vector<std::string> slots = strings(stats.value("slots", json::array()));
    const Lines charts[] = {
        {"pass-rate", "Pass rate per tier (its last attempt in push, scheduled and PR runs)",
         per_name(days_json, "pass_rate", tiers), "%", 1.0},
        {"wait",
         "Wait for a card, from when the attempt could start (at most, per percentile)",
         {field(days_json, "wait_p50_ms", "p50", "#0969da", "wait_p50_longer"),
          field(days_json, "wait_p95_ms", "p95", "#cf222e", "wait_p95_longer")},
         "s",
         0},
        {"utilisation", "Slot utilisation (time running attempts / wall time)",
         per_name(days_json, "utilisation", slots), "%", 1.0},
        {"device-time",
         "Device time: every attempt, the selected runs', and those runs with every tier",
         {field(days_json, "device_ms", "all attempts", "#1a7f37"),
          field(days_json, "runs_device_ms", "selected runs", "#0969da"),
          field(days_json, "full_ms", "every tier", "#8c959f")},
         "h",
         0},
    };
    for (const auto& c : charts) body += line_chart(c.id, c.title, days, c.series, c.unit, c.max);
    return html::page("Trends", "Trends", body, v);
}

}  // namespace crcrd::admin::ui
