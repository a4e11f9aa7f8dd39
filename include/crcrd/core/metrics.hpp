#pragma once
// An in-process metrics registry for Prometheus' text format (0.0.4): counter and histogram
// families with fixed label names, kept as events happen, and the helpers that write any
// family's lines. Thread-safe: each family has its own mutex, held for a map lookup.

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace crcrd {

/// A label value escaped as the text format wants (backslash, double quote, newline).
std::string escape_label_value(std::string_view value);

/// A sample value as the text format wants: integers without a fraction, "+Inf", "NaN".
std::string format_metric_value(double value);

/// Appends the `# HELP` (backslash and newline escaped) and `# TYPE` lines of a family.
void write_metric_header(std::string& out, std::string_view name, std::string_view type,
                         std::string_view help);

/// Appends one sample line: `name{n1="v1",...} value`. `names` and `values` have the same size.
void write_metric_sample(std::string& out, std::string_view name,
                         const std::vector<std::string>& names,
                         const std::vector<std::string>& values, double value);

/// A counter per combination of label values. Values only go up (add() ignores a negative).
class CounterFamily {
  public:
    CounterFamily(std::string name, std::string help, std::vector<std::string> label_names);

    /// Adds `by` (≥ 0) to the series of `values` (one per label name), creating it at 0.
    void add(const std::vector<std::string>& values, double by = 1);
    /// The series' value, 0 when it does not exist.
    double value(const std::vector<std::string>& values) const;
    /// Appends the family (header and one line per series, in label order).
    void write(std::string& out) const;
    const std::string& name() const { return m_name; }

  private:
    std::string m_name, m_help;
    std::vector<std::string> m_labels;
    mutable std::mutex m_mu;
    std::map<std::vector<std::string>, double> m_series;
};

/// A histogram per combination of label values, with fixed upper bounds (ascending, without
/// +Inf, which is always added). Written as cumulative `_bucket{le=...}`, `_sum`, `_count`.
class HistogramFamily {
  public:
    HistogramFamily(std::string name, std::string help, std::vector<std::string> label_names,
                    std::vector<double> bounds);

    /// Counts `v` in the series of `values`.
    void observe(const std::vector<std::string>& values, double v);
    /// How many observations the series has (0 when it does not exist).
    std::uint64_t count(const std::vector<std::string>& values) const;
    void write(std::string& out) const;

  private:
    struct Series {
        std::vector<std::uint64_t> buckets;  // per bound, not cumulative; the last is +Inf
        double sum = 0;
        std::uint64_t count = 0;
    };
    std::string m_name, m_help;
    std::vector<std::string> m_labels;
    std::vector<double> m_bounds;
    mutable std::mutex m_mu;
    std::map<std::vector<std::string>, Series> m_series;
};

/// Appends the standard `process_*` families of this process, read from /proc/self
/// (cpu seconds, resident and virtual memory, open and maximum file descriptors, start
/// time). A value that cannot be read is left out; never throws.
void write_process_metrics(std::string& out);

}  // namespace crcrd
