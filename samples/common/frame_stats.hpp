// samples/common/frame_stats.hpp: frame times of a run (median, p99, mean FPS) and a progress
// line printed every few seconds during long runs.
#pragma once

#include <chrono>
#include <cstddef>
#include <iosfwd>
#include <span>
#include <string>
#include <vector>

namespace apps {

/// Milliseconds from `from` to `to`.
[[nodiscard]] inline double ms_between(std::chrono::steady_clock::time_point from,
                                       std::chrono::steady_clock::time_point to) {
  return std::chrono::duration<double, std::milli>(to - from).count();
}
/// Milliseconds from `start` to now.
[[nodiscard]] inline double ms_since(std::chrono::steady_clock::time_point start) {
  return ms_between(start, std::chrono::steady_clock::now());
}

/// Order statistics of some frame times. NaN fields (count 0) for no frames.
struct frame_summary {
  std::size_t count = 0;    ///< Frames.
  double median_ms = 0.0;   ///< Median frame time.
  double p99_ms = 0.0;      ///< 99th percentile frame time.
  double mean_ms = 0.0;     ///< Mean frame time.
  double fps = 0.0;         ///< Mean frames per second: 1000 / mean_ms.
};

/// The `fraction` quantile (0 = min, 0.5 = median, 1 = max) of `values`, interpolated linearly between
/// the two nearest order statistics (NumPy's default). NaN when empty.
[[nodiscard]] double percentile(std::span<const double> values, double fraction);

/// Count, median, p99, mean and FPS of `frame_ms` (milliseconds).
[[nodiscard]] frame_summary summarize_frames(std::span<const double> frame_ms);

/// The frame times of a run, in milliseconds, in order.
class frame_stats {
 public:
  /// An empty collection with room for `expected_frames` without reallocating.
  explicit frame_stats(std::size_t expected_frames = 0);

  /// Records one frame time.
  void add(double frame_ms);
  /// Records the time from `start` to `end` as one frame.
  void add(std::chrono::steady_clock::time_point start, std::chrono::steady_clock::time_point end);
  /// Frames recorded.
  [[nodiscard]] std::size_t count() const noexcept { return frame_ms_.size(); }
  /// Every frame time, in order.
  [[nodiscard]] std::span<const double> frame_ms() const noexcept { return frame_ms_; }
  /// Statistics of the frames from index `first` on (all frames by default).
  [[nodiscard]] frame_summary summary(std::size_t first = 0) const;
  /// Forgets every frame.
  void clear() noexcept { frame_ms_.clear(); }

 private:
  std::vector<double> frame_ms_;
};

/// One progress line: `frame 1200/3000  median 1.92 ms  p99 2.40 ms  520 FPS` (`frame 1200` when
/// total_frames is 0).
[[nodiscard]] std::string progress_line(std::size_t frame, std::size_t total_frames, const frame_summary& s);

/// Prints a progress line to a stream at most every `interval`, over the frames recorded since the
/// previous line (so a long run shows how the frame time evolves).
class progress_printer {
 public:
  /// Prints to `out` (which must outlive the printer); `total_frames` 0 means open-ended.
  progress_printer(std::ostream& out, std::size_t total_frames,
                   std::chrono::steady_clock::duration interval = std::chrono::seconds(2),
                   std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now());

  /// Prints a line for the frames of `stats` recorded since the last line if `interval` has passed
  /// since then (measured at `now`) and there are new frames. Returns true when it printed.
  bool tick(const frame_stats& stats, std::chrono::steady_clock::time_point now = std::chrono::steady_clock::now());

 private:
  std::ostream* out_;
  std::size_t total_frames_;
  std::chrono::steady_clock::duration interval_;
  std::chrono::steady_clock::time_point last_;
  std::size_t printed_up_to_ = 0;
};

}  // namespace apps
