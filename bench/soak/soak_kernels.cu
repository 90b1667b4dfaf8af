#include "soak_kernels.cuh"

namespace membridge::bench::soak {

namespace {

constexpr unsigned threads = 256;

unsigned blocks_for(std::size_t words) {
  const std::size_t wanted = (words + threads - 1) / threads;
  return static_cast<unsigned>(wanted < 4096 ? (wanted == 0 ? 1 : wanted) : 4096);
}

__global__ void fill_kernel(std::uint32_t* p, std::size_t words, std::uint64_t frame) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < words;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    p[i] = soak_word(frame, i);
}

__global__ void check_kernel(const std::uint32_t* p, std::size_t words, std::uint64_t frame, unsigned long long* bad) {
  unsigned long long mine = 0;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < words;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    mine += p[i] != soak_word(frame, i) ? 1ULL : 0ULL;
  if (mine != 0) atomicAdd(bad, mine);
}

}  // namespace

cudaError_t fill_frame(void* p, std::size_t bytes, std::uint64_t frame, cudaStream_t stream) {
  const std::size_t words = bytes / 4;
  fill_kernel<<<blocks_for(words), threads, 0, stream>>>(static_cast<std::uint32_t*>(p), words, frame);
  return cudaGetLastError();
}

cudaError_t check_frame(const void* p, std::size_t bytes, std::uint64_t frame, unsigned long long* bad,
                        cudaStream_t stream) {
  const std::size_t words = bytes / 4;
  check_kernel<<<blocks_for(words), threads, 0, stream>>>(static_cast<const std::uint32_t*>(p), words, frame, bad);
  return cudaGetLastError();
}

}  // namespace membridge::bench::soak
