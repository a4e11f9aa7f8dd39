#include "crcrd/core/metrics.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace crcrd {

std::string escape_label_value(std::string_view value) {
    std::string out;
    out.reserve(value.size());
    for (char c : value) {
        if (c == '\\') {
            out += "\\\\";
        } else if (c == '"') {
            out += "\\\"";
        } else if (c == '\n') {
            out += "\\n";
        } else {
            out += c;
        }
    }
    return out;
}

std::string format_metric_value(double value) {
    if (std::isnan(value)) return "NaN";
    if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
    if (value == std::floor(value) && std::fabs(value) < 9.007199254740992e15) {
        return std::to_string(static_cast<std::int64_t>(value));
    }
    // The shortest form that reads back as the same double (0.005, not 0.0050000000000000001).
    char buf[32];
    for (int precision = 1; precision <= 17; ++precision) {
        std::snprintf(buf, sizeof buf, "%.*g", precision, value);
        if (std::strtod(buf, nullptr) == value) break;
    }
    return buf;
}

void write_metric_header(std::string& out, std::string_view name, std::string_view type,
                         std::string_view help) {
    out += "# HELP ";
    out += name;
    out += ' ';
    for (char c : help) {
        if (c == '\\') {
            out += "\\\\";
        } else if (c == '\n') {
            out += "\\n";
        } else {
            out += c;
        }
    }
    out += "\n# TYPE ";
    out += name;
    out += ' ';
    out += type;
    out += '\n';
}

void write_metric_sample(std::string& out, std::string_view name,
                         const std::vector<std::string>& names,
                         const std::vector<std::string>& values, double value) {
    out += name;
    if (!names.empty()) {
        out += '{';
        for (std::size_t i = 0; i < names.size(); ++i) {
            if (i) out += ',';
            out += names[i];
            out += "=\"";
            out += escape_label_value(i < values.size() ? values[i] : std::string());
            out += '"';
        }
        out += '}';
    }
    out += ' ';
    out += format_metric_value(value);
    out += '\n';
}

CounterFamily::CounterFamily(std::string name, std::string help,
                             std::vector<std::string> label_names)
    : m_name(std::move(name)), m_help(std::move(help)), m_labels(std::move(label_names)) {}

void CounterFamily::add(const std::vector<std::string>& values, double by) {
    if (!(by >= 0)) return;
    std::lock_guard lk(m_mu);
    m_series[values] += by;
}

double CounterFamily::value(const std::vector<std::string>& values) const {
    std::lock_guard lk(m_mu);
    auto it = m_series.find(values);
    return it == m_series.end() ? 0 : it->second;
}

void CounterFamily::write(std::string& out) const {
    std::map<std::vector<std::string>, double> copy;
    {
        std::lock_guard lk(m_mu);
        copy = m_series;
    }
    write_metric_header(out, m_name, "counter", m_help);
    for (const auto& [values, v] : copy) write_metric_sample(out, m_name, m_labels, values, v);
}

HistogramFamily::HistogramFamily(std::string name, std::string help,
                                 std::vector<std::string> label_names, std::vector<double> bounds)
    : m_name(std::move(name)),
      m_help(std::move(help)),
      m_labels(std::move(label_names)),
      m_bounds(std::move(bounds)) {
    std::sort(m_bounds.begin(), m_bounds.end());
}

void HistogramFamily::observe(const std::vector<std::string>& values, double v) {
    if (std::isnan(v)) return;
    const auto slot = static_cast<std::size_t>(
        std::lower_bound(m_bounds.begin(), m_bounds.end(), v) - m_bounds.begin());
    std::lock_guard lk(m_mu);
    auto& s = m_series[values];
    if (s.buckets.empty()) s.buckets.assign(m_bounds.size() + 1, 0);
    ++s.buckets[slot];
    s.sum += v;
    ++s.count;
}

std::uint64_t HistogramFamily::count(const std::vector<std::string>& values) const {
    std::lock_guard lk(m_mu);
    auto it = m_series.find(values);
    return it == m_series.end() ? 0 : it->second.count;
}

void HistogramFamily::write(std::string& out) const {
    std::map<std::vector<std::string>, Series> copy;
    {
        std::lock_guard lk(m_mu);
        copy = m_series;
    }
    write_metric_header(out, m_name, "histogram", m_help);
    auto names = m_labels;
    names.emplace_back("le");
    const std::string bucket = m_name + "_bucket";
    for (const auto& [values, s] : copy) {
        auto with_le = values;
        with_le.resize(m_labels.size());
        with_le.emplace_back();
        std::uint64_t cumulative = 0;
        for (std::size_t i = 0; i <= m_bounds.size(); ++i) {
            cumulative += s.buckets[i];
            with_le.back() = i < m_bounds.size() ? format_metric_value(m_bounds[i]) : "+Inf";
            write_metric_sample(out, bucket, names, with_le, static_cast<double>(cumulative));
        }
        write_metric_sample(out, m_name + "_sum", m_labels, values, s.sum);
        write_metric_sample(out, m_name + "_count", m_labels, values, static_cast<double>(s.count));
    }
}

}  // namespace crcrd
