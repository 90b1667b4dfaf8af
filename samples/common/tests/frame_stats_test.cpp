// Frame statistics: percentiles as NumPy computes them, FPS from the mean, and the progress line.
#include "frame_stats.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <sstream>

namespace apps {
namespace {

using namespace std::chrono_literals;

TEST(frame_stats, percentiles_interpolate_between_order_statistics) {
  std::vector<double> v;
  for (int i = 100; i >= 1; --i) v.push_back(i);  // unsorted input
  EXPECT_DOUBLE_EQ(percentile(v, 0.0), 1.0);
  EXPECT_DOUBLE_EQ(percentile(v, 1.0), 100.0);
  EXPECT_DOUBLE_EQ(percentile(v, 0.5), 50.5);
  EXPECT_DOUBLE_EQ(percentile(v, 0.99), 99.01);  // numpy.percentile(range(1, 101), 99)
  EXPECT_DOUBLE_EQ(percentile(std::vector<double>{7.0}, 0.99), 7.0);
  EXPECT_TRUE(std::isnan(percentile(std::vector<double>{}, 0.5)));
}

TEST(frame_stats, summary_has_median_p99_mean_and_fps) {
  frame_stats stats(8);
  for (double ms : {2.0, 2.0, 2.0, 2.0, 10.0}) stats.add(ms);
  const frame_summary s = stats.summary();
  EXPECT_EQ(s.count, 5u);
  EXPECT_DOUBLE_EQ(s.median_ms, 2.0);
  EXPECT_NEAR(s.p99_ms, 9.68, 1e-12);
  EXPECT_DOUBLE_EQ(s.mean_ms, 3.6);
  EXPECT_NEAR(s.fps, 1000.0 / 3.6, 1e-9);
  const frame_summary tail = stats.summary(4);
  EXPECT_EQ(tail.count, 1u);
  EXPECT_DOUBLE_EQ(tail.median_ms, 10.0);
  EXPECT_EQ(stats.summary(99).count, 0u);
  EXPECT_TRUE(std::isnan(stats.summary(99).median_ms));
}

TEST(frame_stats, records_time_points) {
  frame_stats stats;
  const auto t0 = std::chrono::steady_clock::time_point{};
  stats.add(t0, t0 + 1500us);
  ASSERT_EQ(stats.count(), 1u);
  EXPECT_DOUBLE_EQ(stats.frame_ms()[0], 1.5);
  stats.clear();
  EXPECT_EQ(stats.count(), 0u);
}

TEST(frame_stats, progress_line_reads_well) {
  frame_summary s;
  s.median_ms = 1.917;
  s.p99_ms = 2.4;
  s.fps = 520.3;
  EXPECT_EQ(progress_line(1200, 3000, s), "frame 1200/3000  median 1.92 ms  p99 2.40 ms  520 FPS");
  EXPECT_EQ(progress_line(7, 0, s), "frame 7  median 1.92 ms  p99 2.40 ms  520 FPS");
}

TEST(frame_stats, progress_printer_prints_every_interval_over_new_frames) {
  std::ostringstream out;
  const auto t0 = std::chrono::steady_clock::time_point{} + 1h;
  progress_printer printer(out, 100, 2s, t0);
  frame_stats stats;
  stats.add(1.0);
  EXPECT_FALSE(printer.tick(stats, t0 + 1s));  // too early
  stats.add(3.0);
  EXPECT_TRUE(printer.tick(stats, t0 + 2s));
  EXPECT_EQ(out.str(), "frame 2/100  median 2.00 ms  p99 2.98 ms  500 FPS\n");
  EXPECT_FALSE(printer.tick(stats, t0 + 5s));  // no new frames
  stats.add(4.0);
  EXPECT_FALSE(printer.tick(stats, t0 + 3s));  // interval counts from the last line
  EXPECT_TRUE(printer.tick(stats, t0 + 5s));
  EXPECT_EQ(out.str(), "frame 2/100  median 2.00 ms  p99 2.98 ms  500 FPS\n"
                       "frame 3/100  median 4.00 ms  p99 4.00 ms  250 FPS\n");
}

}  // namespace
}  // namespace apps
