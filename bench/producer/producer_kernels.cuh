// bench/producer/producer_kernels.cuh: the producer benchmark's frame step, a tiny one-block kernel
// that takes its frame number from a counter in device memory (so its arguments never change per
// frame and a CUDA graph can replay it), writes a per-frame stamp over its ring slot and into a log.
// The seed lives in device memory too, so every block gets a fresh one without recording again.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace membridge::bench::producer_bench {

/// What one frame step reads and writes (all device memory except the numbers).
struct step_args {
  unsigned long long* frame_counter = nullptr;  ///< The next frame number; the frame's last step advances it.
  std::uint32_t* slot = nullptr;                ///< The ring slot this frame writes (slot_words words).
  std::uint32_t slot_words = 0;                 ///< Words per slot.
  std::uint32_t* log = nullptr;                 ///< log[frame * steps + step] = the stamp (log_frames frames).
  unsigned long long log_frames = 0;            ///< Frames the log holds.
  unsigned long long* overflows = nullptr;      ///< Counts frames past the log (must stay 0).
  std::uint32_t step = 0;                       ///< This kernel's index in the frame (0..steps-1).
  std::uint32_t steps = 1;                      ///< Kernels per frame (k).
  const std::uint32_t* seed = nullptr;          ///< The block's seed (device memory: fresh per block, same graph).
};

/// The stamp step `step` of frame `frame` writes (host and device).
__host__ __device__ inline std::uint32_t frame_stamp(std::uint32_t seed, unsigned long long frame, std::uint32_t step) {
  std::uint64_t x = (frame * 16u + step) ^ (static_cast<std::uint64_t>(seed) << 32);
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  x ^= x >> 33;
  return static_cast<std::uint32_t>(x) | 1u;  // never 0 (the log is cleared to 0)
}

/// The word `i` of a slot after a step wrote `stamp`.
__host__ __device__ inline std::uint32_t slot_word(std::uint32_t stamp, std::uint32_t i) { return stamp ^ (i * 2654435761u); }

/// Loads the frame step kernel's module (cudaFuncGetAttributes), so that with lazy module loading
/// the first launch inside a stream capture does not have to load it.
cudaError_t load_frame_step();

/// Launches one frame step (one block of 256 threads) on `stream`; returns cudaGetLastError().
cudaError_t launch_frame_step(const step_args& args, cudaStream_t stream);

}  // namespace membridge::bench::producer_bench
