#include "peer_kernels.cuh"

namespace membridge::bench::peer {

namespace {

constexpr unsigned threads = 256;
constexpr unsigned loads_in_flight = 4;

// Each thread loads four int4 per step (one block-width apart, so a warp's loads are coalesced),
// strides by the whole grid, folds what it read into x/y (even/odd words), then each warp xors its
// lanes together and lane 0 adds the warp's part to the sink with one atomic.
__global__ void read16_kernel(const uint4* __restrict__ src, std::size_t n, unsigned long long* sink) {
  unsigned even = 0;
  unsigned odd = 0;
  const std::size_t step = static_cast<std::size_t>(gridDim.x) * blockDim.x * loads_in_flight;
  for (std::size_t base = static_cast<std::size_t>(blockIdx.x) * blockDim.x * loads_in_flight + threadIdx.x; base < n;
       base += step) {
    uint4 v[loads_in_flight];
#pragma unroll
    for (unsigned k = 0; k < loads_in_flight; ++k) {
      const std::size_t i = base + static_cast<std::size_t>(k) * blockDim.x;
      v[k] = i < n ? src[i] : make_uint4(0, 0, 0, 0);
    }
#pragma unroll
    for (unsigned k = 0; k < loads_in_flight; ++k) {
      even ^= v[k].x ^ v[k].z;
      odd ^= v[k].y ^ v[k].w;
    }
  }
  unsigned long long folded = (static_cast<unsigned long long>(odd) << 32U) | even;
#pragma unroll
  for (unsigned lane_mask = 16; lane_mask > 0; lane_mask /= 2)
    folded ^= __shfl_xor_sync(0xffffffffU, folded, lane_mask);
  if ((threadIdx.x & 31U) == 0) atomicXor(sink, folded);
}

}  // namespace

cudaError_t read16(const void* p, std::size_t bytes, unsigned long long* sink, unsigned blocks, cudaStream_t stream) {
  const std::size_t n = bytes / 16;
  if (n == 0) return cudaSuccess;
  if (blocks == 0) {
    int device = 0;
    int multiprocessors = 0;
    cudaError_t rc = cudaGetDevice(&device);
    if (rc == cudaSuccess) rc = cudaDeviceGetAttribute(&multiprocessors, cudaDevAttrMultiProcessorCount, device);
    if (rc != cudaSuccess) return rc;
    blocks = static_cast<unsigned>(multiprocessors) * 8;
  }
  read16_kernel<<<blocks, threads, 0, stream>>>(static_cast<const uint4*>(p), n, sink);
  return cudaGetLastError();
}

}  // namespace membridge::bench::peer
