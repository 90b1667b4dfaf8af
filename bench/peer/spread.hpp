// bench/peer/spread.hpp: part 2, a spread buffer: one cuda::growable_buffer whose chunks lie
// round-robin on both GPUs (chunk_placement) with read_write for both, read whole by a kernel on
// each GPU, against a growable_buffer wholly local to that GPU; interleaved, checksums checked.
#pragma once

#include "stats.hpp"
#include "support.hpp"

#include <cstddef>
#include <vector>

namespace membridge::bench::peer {

/// How part 2 runs.
struct spread_config {
  std::size_t bytes = 0;        ///< Size of the spread buffer and of each local one.
  std::size_t chunk_bytes = 0;  ///< Size of every chunk (the chunk policy's max_chunk, exact growth).
  int warmup = 0;               ///< Untimed rounds first (checksums still checked).
  int rounds = 0;               ///< Timed rounds; each runs the four reads once, in a rotating order.
};

/// GB/s of each read, one value per round.
struct spread_samples {
  std::vector<double> spread_on_local;   ///< The spread buffer read by the local GPU.
  std::vector<double> own_on_local;      ///< A buffer wholly on the local GPU, read by it.
  std::vector<double> spread_on_remote;  ///< The spread buffer read by the remote GPU.
  std::vector<double> own_on_remote;     ///< A buffer wholly on the remote GPU, read by it.
  std::vector<int> chunk_devices;        ///< Each chunk's GPU (chunk_info::device), in address order.
};

/// Part 2 summarised.
struct spread_report {
  bool ran = false;                ///< False when part 2 was left out (--no-spread).
  summary spread_on_local;         ///< GB/s.
  summary own_on_local;            ///< GB/s.
  summary spread_on_remote;        ///< GB/s.
  summary own_on_remote;           ///< GB/s.
  ratio local_ratio;               ///< spread_on_local / own_on_local.
  ratio remote_ratio;              ///< spread_on_remote / own_on_remote.
  std::vector<int> chunk_devices;  ///< Each chunk's GPU, in address order.
};

/// Device memory part 2 needs on each GPU (half the spread buffer plus its own buffer).
[[nodiscard]] std::size_t spread_memory(const spread_config& config);

/// Runs part 2 on `gpus` (local current). Throws bench_failure on a membridge or CUDA error, wrong
/// data, or a buffer whose chunks are not where the placement asked.
[[nodiscard]] spread_samples measure_spread(const gpu_pair& gpus, const spread_config& config);

/// Summarises part 2's samples.
[[nodiscard]] spread_report summarize_spread(const spread_samples& s);

}  // namespace membridge::bench::peer
