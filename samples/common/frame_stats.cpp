// Frame-time statistics and the progress line.
#include "frame_stats.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <numeric>
#include <ostream>

namespace apps {

double percentile(std::span<const double> values, double fraction) {
  if (values.empty()) return std::numeric_limits<double>::quiet_NaN();
  std::vector<double> sorted(values.begin(), values.end());
  std::sort(sorted.begin(), sorted.end());
  const double position = std::clamp(fraction, 0.0, 1.0) * static_cast<double>(sorted.size() - 1);
  const auto below = static_cast<std::size_t>(std::floor(position));
  const std::size_t above = std::min(below + 1, sorted.size() - 1);
  const double weight = position - static_cast<double>(below);
  return sorted[below] + (sorted[above] - sorted[below]) * weight;
}

frame_summary summarize_frames(std::span<const double> frame_ms) {
  frame_summary s;
  s.count = frame_ms.size();
  if (frame_ms.empty()) {
    s.median_ms = s.p99_ms = s.mean_ms = s.fps = std::numeric_limits<double>::quiet_NaN();
    return s;
  }
  s.median_ms = percentile(frame_ms, 0.5);
  s.p99_ms = percentile(frame_ms, 0.99);
  s.mean_ms = std::accumulate(frame_ms.begin(), frame_ms.end(), 0.0) / static_cast<double>(frame_ms.size());
  s.fps = s.mean_ms > 0.0 ? 1000.0 / s.mean_ms : std::numeric_limits<double>::infinity();
  return s;
}

frame_stats::frame_stats(std::size_t expected_frames) { frame_ms_.reserve(expected_frames); }

void frame_stats::add(double frame_ms) { frame_ms_.push_back(frame_ms); }

void frame_stats::add(std::chrono::steady_clock::time_point start, std::chrono::steady_clock::time_point end) {
  add(std::chrono::duration<double, std::milli>(end - start).count());
}

frame_summary frame_stats::summary(std::size_t first) const {
  const std::span<const double> all = frame_ms_;
  return summarize_frames(all.subspan(std::min(first, all.size())));
}

std::string progress_line(std::size_t frame, std::size_t total_frames, const frame_summary& s) {
  std::string line = "frame " + std::to_string(frame);
  if (total_frames > 0) line += "/" + std::to_string(total_frames);
  char numbers[128];
  (void)std::snprintf(numbers, sizeof numbers, "  median %.2f ms  p99 %.2f ms  %.0f FPS", s.median_ms, s.p99_ms, s.fps);
  return line + numbers;
}

progress_printer::progress_printer(std::ostream& out, std::size_t total_frames,
                                   std::chrono::steady_clock::duration interval,
                                   std::chrono::steady_clock::time_point start)
    : out_(&out), total_frames_(total_frames), interval_(interval), last_(start) {}

bool progress_printer::tick(const frame_stats& stats, std::chrono::steady_clock::time_point now) {
  if (now - last_ < interval_ || stats.count() <= printed_up_to_) return false;
  *out_ << progress_line(stats.count(), total_frames_, stats.summary(printed_up_to_)) << '\n' << std::flush;
  printed_up_to_ = stats.count();
  last_ = now;
  return true;
}

}  // namespace apps
