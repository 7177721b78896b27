#include "runtime/metrics.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>
#include <vector>

#include "core/error.h"

namespace lazytrain::runtime {
namespace {

TEST(MetricsTest, TimeFormatFollowsPyTorchXla) {
  EXPECT_EQ(metric_fn_time(2658550535.0), "02s658ms550.535us");
  EXPECT_EQ(metric_fn_time(7346271.0), "007ms346.271us");
  EXPECT_EQ(metric_fn_time(2651204264.0), "02s651ms204.264us");
  EXPECT_EQ(metric_fn_time(1500.0), "001.500us");
  EXPECT_EQ(metric_fn_time(999.0), "000.999us");
  EXPECT_EQ(metric_fn_time(0.0), "000.000us");
  EXPECT_EQ(metric_fn_time(60e9), "01m00s000ms000.000us");
  EXPECT_EQ(metric_fn_time(90061001001000.0), "01d01h01m01s001ms001.000us");
  // Parts are truncated, never rounded up into the next unit.
  EXPECT_EQ(metric_fn_time(3599999999999.0), "59m59s999ms999.999us");
  EXPECT_EQ(metric_fn_time(21102853173.0), "21s102ms853.173us");
}

TEST(MetricsTest, BytesAndValueFormat) {
  EXPECT_EQ(metric_fn_bytes(100.0), "100.00B");
  EXPECT_EQ(metric_fn_bytes(1023.0), "1023.00B");
  EXPECT_EQ(metric_fn_bytes(1024.0), "1.00KB");
  EXPECT_EQ(metric_fn_bytes(1536.0), "1.50KB");
  EXPECT_EQ(metric_fn_bytes(1320702444.0), "1.23GB");
  EXPECT_EQ(metric_fn_bytes(1024.0 * 1024 * 1024 * 1024 * 1024 * 1024), "1024.00PB");
  EXPECT_EQ(metric_fn_value(12.5), "12.50");
}

TEST(MetricsTest, ReportMatchesPyTorchXlaFormat) {
  reset_metrics();
  Metric& compile = metric("CompileTime");
  compile.add_sample(int64_t{1'000'000'000}, 7346271.0);
  compile.add_sample(int64_t{6'000'000'000}, 2651204264.0);
  Metric& outbound = metric("OutboundData", MetricKind::kBytes);
  outbound.add_sample(int64_t{0}, 3.0 * 1024 * 1024);
  outbound.add_sample(int64_t{1'000'000'000}, 512.0);
  outbound.add_sample(int64_t{2'000'000'000}, 1536.0);
  metric("ExecuteTime");          // no samples: omitted
  counter("CreateCompileHandles");  // zero: omitted
  counter("CachedCompile").add(14);
  counter("aten::nonzero").add(3);

  const std::string expected =
      "Metric: CompileTime\n"
      "  TotalSamples: 2\n"
      "  Accumulator: 02s658ms550.535us\n"
      "  ValueRate: 531ms710.107us / second\n"
      "  Rate: 0.4 / second\n"
      "  Percentiles: 1%=007ms346.271us; 5%=007ms346.271us; 10%=007ms346.271us; 20%=007ms346.271us; "
      "50%=02s651ms204.264us; 80%=02s651ms204.264us; 90%=02s651ms204.264us; 95%=02s651ms204.264us; "
      "99%=02s651ms204.264us\n"
      "Metric: OutboundData\n"
      "  TotalSamples: 3\n"
      "  Accumulator: 3.00MB\n"
      "  ValueRate: 1.50MB / second\n"
      "  Rate: 1.5 / second\n"
      "  Percentiles: 1%=512.00B; 5%=512.00B; 10%=512.00B; 20%=512.00B; 50%=1.50KB; 80%=3.00MB; "
      "90%=3.00MB; 95%=3.00MB; 99%=3.00MB\n"
      "Counter: CachedCompile\n"
      "  Value: 14\n"
      "Counter: aten::nonzero\n"
      "  Value: 3\n";
  EXPECT_EQ(metrics_report(), expected);

  EXPECT_EQ(short_metrics_report({"CompileTime"}, {"CachedCompile"}),
            expected.substr(0, expected.find("Metric: OutboundData")) +
                "Counter: CachedCompile\n  Value: 14\nCounter: aten::nonzero\n  Value: 3\n");

  reset_metrics();
  EXPECT_EQ(metrics_report(), "");
  EXPECT_EQ(counter_value("CachedCompile"), 0);
  EXPECT_FALSE(metric_data("CompileTime").has_value());
}

TEST(MetricsTest, SingleSampleHasNoRateLines) {
  reset_metrics();
  metric("TransferToDeviceTime").add_sample(int64_t{5}, 1500.0);
  EXPECT_EQ(metrics_report(),
            "Metric: TransferToDeviceTime\n"
            "  TotalSamples: 1\n"
            "  Accumulator: 001.500us\n"
            "  Percentiles: 1%=001.500us; 5%=001.500us; 10%=001.500us; 20%=001.500us; 50%=001.500us; "
            "80%=001.500us; 90%=001.500us; 95%=001.500us; 99%=001.500us\n");
  reset_metrics();
}

TEST(MetricsTest, WindowKeepsLast1024SamplesButCountsAll) {
  Metric& m = metric("test.metrics.window", MetricKind::kValue);
  m.clear();
  for (int i = 1; i <= 1500; ++i) m.add_sample(int64_t{i}, static_cast<double>(i));
  std::optional<MetricData> data = metric_data("test.metrics.window");
  ASSERT_TRUE(data.has_value());
  EXPECT_EQ(data->total_samples, 1500);
  EXPECT_EQ(data->accumulator, 1500.0 * 1501.0 / 2.0);
  ASSERT_EQ(data->samples.size(), 1024u);
  EXPECT_EQ(data->samples.front().value, 477.0);  // oldest kept
  EXPECT_EQ(data->samples.back().value, 1500.0);
  EXPECT_EQ(data->samples.front().timestamp_ns, 477);
}

TEST(MetricsTest, CountersAndLookups) {
  EXPECT_EQ(counter_value("test.metrics.never_registered"), 0);
  EXPECT_FALSE(metric_data("test.metrics.never_registered").has_value());
  Counter& c = counter("test.metrics.counter");
  c.clear();
  c.add();
  c.add(41);
  EXPECT_EQ(counter_value("test.metrics.counter"), 42);
  EXPECT_EQ(&counter("test.metrics.counter"), &c);
}

TEST(MetricsTest, KindMismatchThrows) {
  metric("test.metrics.kind", MetricKind::kBytes);
  EXPECT_THROW(metric("test.metrics.kind", MetricKind::kTime), Error);
  try {
    metric("test.metrics.kind");
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(),
                 "[metrics] metric 'test.metrics.kind' is registered as a bytes metric; requested as a time metric");
  }
}

TEST(MetricsTest, ConcurrentUpdatesAreNotLost) {
  Metric& m = metric("test.metrics.threads", MetricKind::kValue);
  Counter& c = counter("test.metrics.threads");
  m.clear();
  c.clear();
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([] {
      for (int i = 0; i < 1000; ++i) {
        metric("test.metrics.threads", MetricKind::kValue).add_sample(2.0);
        counter("test.metrics.threads").add(3);
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(m.total_samples(), 8000);
  EXPECT_EQ(m.accumulator(), 16000.0);
  EXPECT_EQ(c.value(), 24000);
}

TEST(MetricsTest, ScopedTimerAddsElapsedNanoseconds) {
  Metric& m = metric("test.metrics.timer");
  m.clear();
  const int64_t before = now_ns();
  {
    ScopedTimer timer("test.metrics.timer");
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  const int64_t elapsed = now_ns() - before;
  std::optional<MetricData> data = metric_data("test.metrics.timer");
  ASSERT_TRUE(data.has_value());
  EXPECT_EQ(data->total_samples, 1);
  EXPECT_GE(data->accumulator, 2e6);
  EXPECT_LE(data->accumulator, static_cast<double>(elapsed));
}

}  // namespace
TEST(MetricsTest, SamplesFromSeveralDevicesAreAlsoReportedPerDevice) {
  Metric& m = metric("PerReplicaTestTime");
  m.clear();
  {
    DeviceGuard guard(Device{"cpu", 1});
    m.add_sample(3e6);
    m.add_sample(1e6);
  }
  m.add_sample(2e6);  // cpu:0
  const MetricData data = m.data();
  ASSERT_EQ(data.per_device.size(), 2u);
  EXPECT_EQ(data.per_device[1].device, "cpu:1");
  EXPECT_EQ(data.per_device[1].total_samples, 2);
  EXPECT_DOUBLE_EQ(data.per_device[1].accumulator, 4e6);
  const std::string report = metrics_report();
  EXPECT_NE(report.find("Metric: PerReplicaTestTime\n  TotalSamples: 3\n  Accumulator: 006ms000.000us\n"), std::string::npos) << report;
  EXPECT_NE(report.find("Metric: PerReplicaTestTime (cpu:0)\n  TotalSamples: 1\n  Accumulator: 002ms000.000us\n"), std::string::npos) << report;
  EXPECT_NE(report.find("Metric: PerReplicaTestTime (cpu:1)\n  TotalSamples: 2\n  Accumulator: 004ms000.000us\n"), std::string::npos) << report;
  m.clear();
  m.add_sample(1e6);
  EXPECT_EQ(metrics_report().find("PerReplicaTestTime (cpu:"), std::string::npos);  // one device: the aggregate alone
}

}  // namespace lazytrain::runtime
