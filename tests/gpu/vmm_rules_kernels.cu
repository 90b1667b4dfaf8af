#include "vmm_rules_kernels.cuh"

#include "kernels.cuh"

#include <algorithm>

namespace membridge::testing::gpu {

namespace {

constexpr unsigned threads = 256;

unsigned blocks_for(std::size_t items) {
  return static_cast<unsigned>(std::min<std::size_t>((items + threads - 1) / threads, 132u * 16u));
}

__global__ void alias_kernel(std::uint32_t* writer, const std::uint32_t* alias, std::size_t n, std::uint32_t seed,
                             bool fence, unsigned long long* counts) {
  unsigned long long stale = 0;
  unsigned long long not_primed = 0;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const std::uint32_t expected = pattern(i, seed);
    const std::uint32_t before = alias[i];  // may leave the old word in a cache under the alias's address
    if (before == expected) ++not_primed;
    // The load through the alias and the store below name different virtual addresses: without a
    // proxy fence nothing orders them (seen on the H100: 1-5% of the loads returned the value stored
    // after them), so the old value is read first for certain only with the fence.
    asm volatile("fence.proxy.alias;" ::: "memory");
    writer[i] = expected;
    if (fence) {
      // The CUDA VMM chapter: accesses to one allocation through two virtual addresses in one
      // kernel are ordered by a proxy fence between them.
      asm volatile("fence.proxy.alias;" ::: "memory");
    } else {
      asm volatile("" ::: "memory");  // only a compiler barrier: the load below is issued again
    }
    if (alias[i] != expected) ++stale;
  }
  if (stale != 0) atomicAdd(&counts[0], stale);
  if (not_primed != 0) atomicAdd(&counts[1], not_primed);
}

__global__ void read16_kernel(const int4* __restrict__ src, std::size_t n, unsigned long long* sink) {
  const std::size_t base = static_cast<std::size_t>(blockIdx.x) * blockDim.x * 4 + threadIdx.x;
  int4 v[4] = {};
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    const std::size_t i = base + static_cast<std::size_t>(k) * blockDim.x;
    if (i < n) v[k] = src[i];
  }
  unsigned x = 0;
#pragma unroll
  for (int k = 0; k < 4; ++k)
    x ^= static_cast<unsigned>(v[k].x) ^ static_cast<unsigned>(v[k].y) ^ static_cast<unsigned>(v[k].z) ^
         static_cast<unsigned>(v[k].w);
  // One atomic per block: a block-wide xor through shared memory.
  __shared__ unsigned block_x;
  if (threadIdx.x == 0) block_x = 0;
  __syncthreads();
  if (x != 0) atomicXor(&block_x, x);
  __syncthreads();
  if (threadIdx.x == 0 && block_x != 0) atomicXor(sink, static_cast<unsigned long long>(block_x));
}

}  // namespace

cudaError_t alias_write_then_read(std::uint32_t* writer, const std::uint32_t* alias, std::size_t words,
                                  std::uint32_t seed, bool fence, alias_counts& counts, cudaStream_t stream) {
  unsigned long long* device_counts = nullptr;
  cudaError_t rc = cudaMalloc(&device_counts, 2 * sizeof(unsigned long long));
  if (rc != cudaSuccess) return rc;
  unsigned long long host[2] = {~0ULL, ~0ULL};
  rc = cudaMemsetAsync(device_counts, 0, 2 * sizeof(unsigned long long), stream);
  if (rc == cudaSuccess) {
    alias_kernel<<<blocks_for(words), threads, 0, stream>>>(writer, alias, words, seed, fence, device_counts);
    rc = cudaGetLastError();
  }
  if (rc == cudaSuccess) rc = cudaMemcpyAsync(host, device_counts, sizeof host, cudaMemcpyDeviceToHost, stream);
  if (rc == cudaSuccess) rc = cudaStreamSynchronize(stream);
  const cudaError_t freed = cudaFree(device_counts);
  if (rc != cudaSuccess) return rc;
  if (freed != cudaSuccess) return freed;
  counts.stale = host[0];
  counts.not_primed = host[1];
  return cudaSuccess;
}

cudaError_t read16(const void* p, std::size_t bytes, unsigned long long* sink, cudaStream_t stream) {
  const std::size_t n = bytes / 16;
  if (n == 0) return cudaSuccess;
  const auto blocks = static_cast<unsigned>((n + threads * 4 - 1) / (threads * 4));
  read16_kernel<<<blocks, threads, 0, stream>>>(static_cast<const int4*>(p), n, sink);
  return cudaGetLastError();
}

}  // namespace membridge::testing::gpu
