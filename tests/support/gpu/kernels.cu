#include "kernels.cuh"

#include <algorithm>

namespace membridge::testing::gpu {

namespace {

constexpr unsigned threads = 256;

unsigned blocks_for(std::size_t items) {
  // Grid-stride loops: enough blocks to fill any current GPU, never more than the work.
  return static_cast<unsigned>(std::min<std::size_t>((items + threads - 1) / threads, 132u * 16u));
}

__global__ void fill_kernel(std::uint32_t* p, std::size_t n, std::uint32_t seed, std::uint64_t first) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    p[i] = pattern(first + i, seed);
}

__global__ void check_kernel(const std::uint32_t* p, std::size_t n, std::uint32_t seed, std::uint64_t first,
                             unsigned long long* bad) {
  unsigned long long local = 0;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    if (p[i] != pattern(first + i, seed)) ++local;
  if (local != 0) atomicAdd(bad, local);
}

__global__ void check_value_kernel(const std::uint32_t* p, std::size_t n, std::uint32_t value, unsigned long long* bad) {
  unsigned long long local = 0;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    if (p[i] != value) ++local;
  if (local != 0) atomicAdd(bad, local);
}

__global__ void copy16_kernel(const int4* __restrict__ src, int4* __restrict__ dst, std::size_t n) {
  const std::size_t base = static_cast<std::size_t>(blockIdx.x) * blockDim.x * 4 + threadIdx.x;
  int4 v[4];
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    const std::size_t i = base + static_cast<std::size_t>(k) * blockDim.x;
    if (i < n) v[k] = src[i];
  }
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    const std::size_t i = base + static_cast<std::size_t>(k) * blockDim.x;
    if (i < n) dst[i] = v[k];
  }
}

__global__ void write16_kernel(int4* dst, std::size_t n, std::uint32_t value) {
  const int v = static_cast<int>(value);
  const int4 w{v, v, v, v};
  const std::size_t base = static_cast<std::size_t>(blockIdx.x) * blockDim.x * 4 + threadIdx.x;
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    const std::size_t i = base + static_cast<std::size_t>(k) * blockDim.x;
    if (i < n) dst[i] = w;
  }
}

// One device counter for the whole process, made on first use with plain cudaMalloc (no memory
// pool: pools keep freed memory reserved, which would skew the free-memory checks of the tests).
cudaError_t device_counter(unsigned long long*& counter) {
  static unsigned long long* made = nullptr;
  if (made == nullptr) {
    const cudaError_t rc = cudaMalloc(&made, sizeof *made);
    if (rc != cudaSuccess) return rc;
  }
  counter = made;
  return cudaSuccess;
}

template <class Launch>
cudaError_t count_with(Launch launch, unsigned long long& bad, cudaStream_t stream) {
  unsigned long long* counter = nullptr;
  cudaError_t rc = device_counter(counter);
  if (rc == cudaSuccess) rc = cudaMemsetAsync(counter, 0, sizeof *counter, stream);
  if (rc == cudaSuccess) {
    launch(counter);
    rc = cudaGetLastError();
  }
  if (rc == cudaSuccess) rc = cudaMemcpyAsync(&bad, counter, sizeof bad, cudaMemcpyDeviceToHost, stream);
  const cudaError_t synced = cudaStreamSynchronize(stream);
  return rc != cudaSuccess ? rc : synced;
}

}  // namespace

cudaError_t fill_pattern(void* p, std::size_t bytes, std::uint32_t seed, std::uint64_t first_word,
                         cudaStream_t stream) {
  const std::size_t n = bytes / 4;
  if (n == 0) return cudaSuccess;
  fill_kernel<<<blocks_for(n), threads, 0, stream>>>(static_cast<std::uint32_t*>(p), n, seed, first_word);
  return cudaGetLastError();
}

cudaError_t count_mismatches(const void* p, std::size_t bytes, std::uint32_t seed, unsigned long long& bad,
                             std::uint64_t first_word, cudaStream_t stream) {
  const std::size_t n = bytes / 4;
  return count_with(
      [&](unsigned long long* counter) {
        if (n != 0)
          check_kernel<<<blocks_for(n), threads, 0, stream>>>(static_cast<const std::uint32_t*>(p), n, seed,
                                                              first_word, counter);
      },
      bad, stream);
}

cudaError_t count_not_equal(const void* p, std::size_t bytes, std::uint32_t value, unsigned long long& bad,
                            cudaStream_t stream) {
  const std::size_t n = bytes / 4;
  return count_with(
      [&](unsigned long long* counter) {
        if (n != 0)
          check_value_kernel<<<blocks_for(n), threads, 0, stream>>>(static_cast<const std::uint32_t*>(p), n, value,
                                                                    counter);
      },
      bad, stream);
}

cudaError_t copy16(const void* src, void* dst, std::size_t bytes, cudaStream_t stream) {
  const std::size_t n = bytes / 16;
  if (n == 0) return cudaSuccess;
  const auto blocks = static_cast<unsigned>((n + threads * 4 - 1) / (threads * 4));
  copy16_kernel<<<blocks, threads, 0, stream>>>(static_cast<const int4*>(src), static_cast<int4*>(dst), n);
  return cudaGetLastError();
}

cudaError_t write16(void* dst, std::size_t bytes, std::uint32_t value, cudaStream_t stream) {
  const std::size_t n = bytes / 16;
  if (n == 0) return cudaSuccess;
  const auto blocks = static_cast<unsigned>((n + threads * 4 - 1) / (threads * 4));
  write16_kernel<<<blocks, threads, 0, stream>>>(static_cast<int4*>(dst), n, value);
  return cudaGetLastError();
}

}  // namespace membridge::testing::gpu
