// bench/growth/report.hpp: the growth benchmark's summaries, ratios and goals, its tables for
// people and its JSON line for scripts.
#pragma once

#include "growth/measure.hpp"
#include "stats.hpp"

#include <cstddef>
#include <iosfwd>
#include <vector>

namespace membridge::bench::growth {

/// One growth method's rounds, summarised.
struct growth_stats {
  summary total_ms;             ///< 64 MiB -> 4 GiB.
  summary last_ms;              ///< 2 GiB -> 4 GiB.
  summary peak_bytes;           ///< Peak above the baseline.
  summary peak_over_final;      ///< Peak as a multiple of final_size.
  std::vector<double> step_median_ms;  ///< The median of each step over the rounds.
  std::vector<std::vector<double>> round_step_ms;  ///< Every round's steps, in round order (outliers stay visible).
};

/// Everything the benchmark prints.
struct report {
  growth_stats classic;          ///< cudaMalloc + cudaMemcpy + cudaFree.
  growth_stats vmm;              ///< growable_buffer::grow.
  ratio total;                   ///< Total time, classic / vmm.
  ratio last;                    ///< Last step time, classic / vmm.
  ratio peak;                    ///< Peak memory, classic / vmm.
  summary copy_classic;   ///< copy16 GB/s on cudaMalloc memory.
  summary copy_vmm;       ///< copy16 GB/s on growable_buffer memory.
  summary write_classic;  ///< write16 GB/s on cudaMalloc memory.
  summary write_vmm;      ///< write16 GB/s on growable_buffer memory.
  ratio copy;                    ///< copy16 GB/s, vmm / classic.
  ratio write;                   ///< write16 GB/s, vmm / classic.
  std::size_t vmm_chunks = 0;    ///< Chunks of each bandwidth growable_buffer.
  std::vector<goal> goals;       ///< The issue's goals.
};

/// Summaries, ratios and goals of the measurements.
[[nodiscard]] report make_report(const growth_results& growth, const bandwidth_results& bandwidth);

/// The title lines, the growth and bandwidth tables and one line per goal, on `out`.
void print_report(std::ostream& out, const gpu_session& gpu, int rounds, const report& r);

/// The whole run as one JSON object, "bench" first.
[[nodiscard]] json report_json(const gpu_session& gpu, int rounds, const report& r);

}  // namespace membridge::bench::growth
