// CUDA kernels shared by the GPU tests and the benchmarks: deterministic patterns to write and
// check (so every test asserts the data, not a return code) and bandwidth kernels.
#pragma once

#include <cuda_runtime.h>  // also defines __host__ / __device__ for host-compiled includers

#include <cstddef>
#include <cstdint>

namespace membridge::testing::gpu {

/// The 32-bit word at index `i` of a pattern: a cheap hash, different for every index and seed.
__host__ __device__ inline std::uint32_t pattern(std::uint64_t i, std::uint32_t seed) {
  std::uint32_t x = static_cast<std::uint32_t>(i) * 2654435761u ^ seed ^ static_cast<std::uint32_t>(i >> 32);
  x ^= x >> 15;
  x *= 0x2c1b3c6du;
  x ^= x >> 12;
  return x;
}

/// Writes pattern words to `bytes` bytes at `p` (a multiple of 4); word k gets pattern(first_word + k).
cudaError_t fill_pattern(void* p, std::size_t bytes, std::uint32_t seed, std::uint64_t first_word = 0,
                         cudaStream_t stream = nullptr);

/// Counts the words at `p` that differ from the pattern; waits for the stream. On success `bad` holds
/// the count.
cudaError_t count_mismatches(const void* p, std::size_t bytes, std::uint32_t seed, unsigned long long& bad,
                             std::uint64_t first_word = 0, cudaStream_t stream = nullptr);

/// Copies `bytes` (a multiple of 16) with 16-byte loads and stores, four per thread in flight.
cudaError_t copy16(const void* src, void* dst, std::size_t bytes, cudaStream_t stream = nullptr);

/// Writes `bytes` (a multiple of 16) with 16-byte stores of `value`.
cudaError_t write16(void* dst, std::size_t bytes, std::uint32_t value, cudaStream_t stream = nullptr);

/// Counts the words at `p` that differ from `value`; waits for the stream.
cudaError_t count_not_equal(const void* p, std::size_t bytes, std::uint32_t value, unsigned long long& bad,
                            cudaStream_t stream = nullptr);

}  // namespace membridge::testing::gpu
