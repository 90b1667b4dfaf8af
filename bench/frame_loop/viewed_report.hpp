// bench/frame_loop/viewed_report.hpp: the viewed part's figures (sim throughput with a viewer over
// the sim alone, drawn frames per second, the viewer's GPU time, the handoff cost per drawn frame),
// its goal, table and JSON.
#pragma once

#include "report.hpp"  // goal
#include "viewed.hpp"

#include <iosfwd>
#include <vector>

namespace membridge::bench::frame_loop {

/// The target of sim_throughput_viewed_144hz: sim steps/s with the viewer >= 0.97 x alone.
inline constexpr double viewed_goal_ratio = 0.97;
/// The rate that goal is judged at.
inline constexpr int viewed_goal_rate_hz = 144;

/// The figures of one viewed run.
struct viewed_run_summary {
  double baseline_steps_per_s = 0.0;  ///< Mean of the sim-alone runs just before and after its kind.
  double ratio = 0.0;                 ///< Sim steps/s with the viewer / baseline.
  double drawn_per_s = 0.0;           ///< Frames drawn per second (GPU clock window).
  double lost_us_per_frame = 0.0;     ///< (window - steps x alone step time) / frames: sim GPU time lost.
  double frame_gpu_us_mean = 0.0;     ///< The viewer's graphics work per frame (timestamps).
  double frame_gpu_us_median = 0.0;
  double frame_gpu_us_p99 = 0.0;
  double handoff_us_per_frame = 0.0;  ///< lost - frame_gpu_us_mean: what the handoff itself costs the sim.
  double tick_to_submit_us_median = 0.0;
  double tick_to_submit_us_p99 = 0.0;
};

/// The viewed part summarised.
struct viewed_summary {
  double alone_steps_per_s = 0.0;           ///< Mean of every sim-alone run.
  double alone_step_us = 0.0;               ///< 1e6 / alone_steps_per_s.
  double draw_alone_us_median = 0.0;        ///< Back-to-back draws (timestamps).
  double draw_alone_us_p99 = 0.0;
  std::vector<viewed_run_summary> runs;     ///< Parallel to viewed_result::runs.
  int goal_run = -1;                        ///< Index of the run the goal is judged on (-1: none).
  std::vector<goal> goals;                  ///< sim_throughput_viewed_144hz.
};

/// Figures and the goal: judged on the drawing viewer of this process (direct, direct_host or copy)
/// with the best ratio at 144 Hz; the ipc viewer (another process) is reported, not judged.
[[nodiscard]] viewed_summary summarize_viewed(const viewed_result& r);

/// Prints the viewed part's table and data line.
void print_viewed(std::ostream& out, const viewed_result& r, const viewed_summary& s);

/// The viewed part as JSON.
[[nodiscard]] json viewed_json(const viewed_result& r, const viewed_summary& s);

}  // namespace membridge::bench::frame_loop
