#include "crcrd/core/metrics.hpp"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

namespace crcrd {
namespace {

TEST(MetricsText, ValuesAsTheTextFormatWritesThem) {
    const std::vector<std::pair<double, std::string>> cases = {
        {0, "0"},
        {3, "3"},
        {-2, "-2"},
        {0.005, "0.005"},
        {0.1, "0.1"},
        {2.5, "2.5"},
        {1e20, "1e+20"},
        {1.0 / 0.0, "+Inf"},
        {-1.0 / 0.0, "-Inf"},
        {0.0 / 0.0, "NaN"},
    };
    for (const auto& [v, want] : cases) EXPECT_EQ(format_metric_value(v), want) << v;
}

TEST(MetricsText, LabelValuesAndHelpAreEscaped) {
    EXPECT_EQ(escape_label_value("a\\b\"c\nd"), "a\\\\b\\\"c\\nd");
    std::string out;
    write_metric_header(out, "x_total", "counter", "line one\nback\\slash \"quoted\"");
    EXPECT_EQ(out, "# HELP x_total line one\\nback\\\\slash \"quoted\"\n# TYPE x_total counter\n");
    out.clear();
    write_metric_sample(out, "x_total", {"a", "b"}, {"say \"hi\"", "c:\\"}, 2);
    EXPECT_EQ(out, "x_total{a=\"say \\\"hi\\\"\",b=\"c:\\\\\"} 2\n");
}

TEST(MetricsText, CounterFamilyWritesOneLinePerSeriesInLabelOrder) {
    CounterFamily c("crcrd_things_total", "Things.", {"kind"});
    c.add({"b"});
    c.add({"a"}, 2);
    c.add({"b"}, 0.5);
    c.add({"a"}, -5);  // ignored: a counter never goes down
    std::string out;
    c.write(out);
    EXPECT_EQ(out,
              "# HELP crcrd_things_total Things.\n# TYPE crcrd_things_total counter\n"
              "crcrd_things_total{kind=\"a\"} 2\ncrcrd_things_total{kind=\"b\"} 1.5\n");
    EXPECT_EQ(c.value({"a"}), 2);
    EXPECT_EQ(c.value({"zzz"}), 0);
}

TEST(MetricsText, HistogramBucketsAreCumulativeWithInfSumAndCount) {
    HistogramFamily h("crcrd_wait_seconds", "Waits.", {"tier"}, {1, 0.5, 5});
    for (double v : {0.25, 0.5, 0.75, 3.0, 60.0}) h.observe({"import"}, v);
    std::string out;
    h.write(out);
    EXPECT_EQ(out,
              "# HELP crcrd_wait_seconds Waits.\n# TYPE crcrd_wait_seconds histogram\n"
              "crcrd_wait_seconds_bucket{tier=\"import\",le=\"0.5\"} 2\n"  // le is inclusive
              "crcrd_wait_seconds_bucket{tier=\"import\",le=\"1\"} 3\n"
              "crcrd_wait_seconds_bucket{tier=\"import\",le=\"5\"} 4\n"
              "crcrd_wait_seconds_bucket{tier=\"import\",le=\"+Inf\"} 5\n"
              "crcrd_wait_seconds_sum{tier=\"import\"} 64.5\n"
              "crcrd_wait_seconds_count{tier=\"import\"} 5\n");
    EXPECT_EQ(h.count({"import"}), 5u);
}

TEST(MetricsText, ObservationsFromManyThreadsAreAllCounted) {
    HistogramFamily h("h_seconds", "H.", {}, {1});
    CounterFamily c("c_total", "C.", {});
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
        threads.emplace_back([&] {
            for (int i = 0; i < 10000; ++i) {
                h.observe({}, 0.5);
                c.add({});
            }
        });
    }
    for (auto& t : threads) t.join();
    EXPECT_EQ(h.count({}), 40000u);
    EXPECT_EQ(c.value({}), 40000);
}

TEST(MetricsText, ProcessMetricsComeFromProc) {
    std::string out;
    write_process_metrics(out);
    for (const char* want :
         {"# TYPE process_cpu_seconds_total counter\n", "\nprocess_resident_memory_bytes ",
          "\nprocess_virtual_memory_bytes ", "\nprocess_open_fds ", "\nprocess_max_fds ",
          "\nprocess_start_time_seconds "}) {
        EXPECT_NE(out.find(want), std::string::npos) << want << " in:\n" << out;
    }
}

}  // namespace
}  // namespace crcrd
