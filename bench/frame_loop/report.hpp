// bench/frame_loop/report.hpp: what the frame loop benchmark measured for one particle count and
// step count (every round of every mode), its summary across rounds, the goals, the table and the
// JSON.
#pragma once

#include "modes.hpp"
#include "stats.hpp"

#include <array>
#include <cstddef>
#include <iosfwd>
#include <string>
#include <string_view>
#include <vector>

namespace membridge::bench::frame_loop {

/// One round: each mode once, then the floor.
struct round_result {
  std::array<mode_run, mode_count> runs;        ///< Indexed by mode.
  std::array<image_check, mode_count> images;   ///< The last frame of each run.
  floor_parts floor;                            ///< Measured after the three runs.
};

/// Everything measured for one (particle count, steps) configuration.
struct config_result {
  std::size_t count = 0;                    ///< Particles.
  int steps = 0;                            ///< Sim steps per drawn frame.
  loop_config loop;                         ///< Frames per run.
  std::vector<round_result> rounds;         ///< In order.
  std::size_t runs_compared = 0;            ///< Runs whose final particles were compared bitwise.
  bool bitwise_equal = true;                ///< Every run's final particles equal the first run's.
  bool final_differs_from_initial = false;  ///< The simulation moved the particles.
  bool images_identical = true;             ///< Every run's last image had the same bytes.
  std::vector<std::string> data_failures;   ///< Wrong data (each a message); empty when all checks passed.
};

/// A goal of the issue, with the measured value (stats.hpp; comparison ">=", "<=" or "==").
using bench::goal;

/// Statistics of one per-frame quantity: over rounds, the median of each round's mean, median and p99.
/// For frame times the mean is the throughput figure (run time / frames): frames that complete in
/// bursts make the median of the intervals misleading, so ratios and goals use the mean.
struct across_rounds {
  double mean = 0.0;                  ///< median over rounds of the round's mean.
  double median = 0.0;                ///< median over rounds of the round's median.
  double p99 = 0.0;                   ///< median over rounds of the round's p99.
  std::vector<double> round_means;    ///< Each round's mean.
  std::vector<double> round_medians;  ///< Each round's median.
  std::vector<double> round_p99s;     ///< Each round's p99.
};

/// One configuration summarised.
struct config_summary {
  std::array<across_rounds, mode_count> frame_ms;  ///< Frame time per mode.
  across_rounds pipelined_gpu_frame_ms;            ///< Pipelined, between sim ends (CUDA events).
  std::array<across_rounds, mode_count> thread_cpu_us;  ///< The recording/submitting thread per mode.
  across_rounds render_work_cpu_us;                ///< Pipelined render thread without the fence wait.
  across_rounds producer_cpu_us;                   ///< Pipelined producer thread.
  double sim_ms = 0.0;                             ///< Median over rounds.
  double draw_ms = 0.0;                            ///< Median over rounds.
  double round_trip_ms = 0.0;                      ///< Median over rounds.
  double floor_ms = 0.0;                           ///< Median over rounds of sim + draw + round trip.
  std::vector<double> round_floor_ms;              ///< Each round's floor.
  double pipelined_over_floor = 0.0;               ///< Frame time ratio (shown; no goal: see summarize).
  double handoff_ms = 0.0;                         ///< Pipelined mean frame time - sim_ms - draw_ms.
  double handoff_floor_ms = 0.0;                   ///< Median over rounds of floor_parts::handoff_floor_ms.
  double handoff_floor_median_ms = 0.0;            ///< Median over rounds of the no-work loop's median interval.
  std::vector<double> round_handoff_floor_ms;      ///< Each round's handoff floor.
  double handoff_floor_raw_ms = 0.0;               ///< Median over rounds of floor_parts::handoff_floor_raw_ms.
  std::vector<double> round_handoff_floor_raw_ms;  ///< Each round's raw handoff floor.
  double handoff_over_floor = 0.0;                 ///< handoff_ms / handoff_floor_ms (1: the driver's own cost).
  double throughput_vs_naive = 0.0;                ///< naive frame time / pipelined frame time.
  double throughput_vs_staging = 0.0;              ///< staging frame time / pipelined frame time.
  double cuda_waits_per_frame = 0.0;               ///< Over every round's measured frames.
  double vulkan_waits_per_frame = 0.0;             ///< Over every round's measured frames.
  double round_trips_per_frame = 0.0;              ///< The larger of the two.
  bool one_round_trip_every_round = false;         ///< Exactly one wait each way per frame in every round.
  std::vector<goal> goals;                         ///< The issue's goals for this configuration.
};

/// "1M", "512K" or "1000": a particle count for people (binary K and M).
[[nodiscard]] std::string count_label(std::size_t count);

/// Summaries, ratios and goals of one configuration.
[[nodiscard]] config_summary summarize(const config_result& r);

/// Prints one configuration's tables and data-check line.
void print_config(std::ostream& out, const config_result& r, const config_summary& s);

/// Prints one line per goal of every configuration.
void print_goals(std::ostream& out, const std::vector<config_result>& results,
                 const std::vector<config_summary>& summaries);

/// One configuration as JSON.
[[nodiscard]] json config_json(const config_result& r, const config_summary& s);

}  // namespace membridge::bench::frame_loop
