#include "gl_kernels.cuh"

#include "kernels.cuh"

#include <algorithm>

namespace membridge::bench::gl_bench {

namespace {

__global__ void mismatch_kernel(const std::uint32_t* p, std::size_t n, std::uint32_t seed, std::uint64_t first,
                                unsigned long long* counter) {
  unsigned long long local = 0;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    if (p[i] != testing::gpu::pattern(first + i, seed)) ++local;
  if (local != 0) atomicAdd(counter, local);
}

}  // namespace

cudaError_t accumulate_pattern_mismatches(const void* p, std::size_t bytes, std::uint32_t seed, std::uint64_t first_word,
                                          unsigned long long* counter, cudaStream_t stream) {
  const std::size_t n = bytes / 4;
  if (n == 0) return cudaSuccess;
  constexpr unsigned threads = 256;
  const auto blocks = static_cast<unsigned>(std::min<std::size_t>((n + threads - 1) / threads, 132u * 16u));
  mismatch_kernel<<<blocks, threads, 0, stream>>>(static_cast<const std::uint32_t*>(p), n, seed, first_word, counter);
  return cudaGetLastError();
}

}  // namespace membridge::bench::gl_bench
