// bench/gl/gl_kernels.cuh: the GL benchmark's own kernel (the frame and fill kernels are the shared
// ones of tests/support/gpu).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace membridge::bench::gl_bench {

/// Adds to `*counter` (device memory) the number of 32-bit words of the `bytes` at `p` that differ
/// from testing::gpu::pattern(first_word + k, seed). Does not wait: a data check enqueued inside a
/// frame, read once at the end.
cudaError_t accumulate_pattern_mismatches(const void* p, std::size_t bytes, std::uint32_t seed, std::uint64_t first_word,
                                          unsigned long long* counter, cudaStream_t stream);

}  // namespace membridge::bench::gl_bench
