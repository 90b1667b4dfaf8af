// bench/soak/soak_kernels.cuh: the soak's data: every 32-bit word i of frame n holds soak_word(n, i),
// written over the buffer's whole current size by the producer and checked by each viewer.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace membridge::bench::soak {

/// The word at index `i` of frame `frame` (never 0, so zeroed or fresh memory never passes).
__host__ __device__ inline std::uint32_t soak_word(std::uint64_t frame, std::uint64_t i) {
  std::uint64_t x = frame * 0x9E3779B97F4A7C15ULL ^ (i + 0x632BE59BD9B4E019ULL);
  x ^= x >> 31U;
  x *= 0xBF58476D1CE4E5B9ULL;
  x ^= x >> 29U;
  return static_cast<std::uint32_t>(x) | 1U;
}

/// Writes frame `frame`'s words to `bytes` (a multiple of 4) at `p` on `stream`.
cudaError_t fill_frame(void* p, std::size_t bytes, std::uint64_t frame, cudaStream_t stream);

/// Adds to `*bad` the number of words at `p` (`bytes`, a multiple of 4) that differ from frame
/// `frame`'s, on `stream`.
cudaError_t check_frame(const void* p, std::size_t bytes, std::uint64_t frame, unsigned long long* bad,
                        cudaStream_t stream);

}  // namespace membridge::bench::soak
