// Kernels of the GPU tests for two rules of the CUDA VMM chapter: virtual aliasing (one physical
// chunk mapped at two addresses; the fence.proxy.alias rule) and compressible memory (a read-only
// bandwidth kernel). The pattern helpers are the shared ones (tests/support/gpu/kernels.cuh).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace membridge::testing::gpu {

/// What alias_write_then_read() saw.
struct alias_counts {
  unsigned long long stale = 0;        ///< Reads through `alias` after the write that did not see the written word.
  unsigned long long not_primed = 0;   ///< Reads through `alias` before the write that already held the new word
                                       ///< (the chunk must hold pattern(i, old_seed) when the kernel starts).
};

/// One kernel; every thread, for each of its words i of the `words` 32-bit words: reads word i
/// through `alias` (so the old value may sit in a cache under that address), writes
/// pattern(i, seed) through `writer`, then, when `fence` is true, executes `fence.proxy.alias`
/// (else only a compiler barrier), and reads word i through `alias` again. Counts the second reads
/// that differ from pattern(i, seed), and first reads that already equal it. `writer` and `alias`
/// are two mappings of the same physical memory. Waits for the stream.
cudaError_t alias_write_then_read(std::uint32_t* writer, const std::uint32_t* alias, std::size_t words,
                                  std::uint32_t seed, bool fence, alias_counts& counts, cudaStream_t stream = nullptr);

/// Reads `bytes` (a multiple of 16) at `p` with 16-byte loads, four per thread in flight, and xors
/// them into `*sink` (device memory; one atomic per block). A read-bandwidth kernel. Does not wait.
cudaError_t read16(const void* p, std::size_t bytes, unsigned long long* sink, cudaStream_t stream = nullptr);

}  // namespace membridge::testing::gpu
