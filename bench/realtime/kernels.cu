#include "kernels.cuh"

namespace membridge::bench::realtime {

namespace {

__global__ void seed_kernel(float4* p, std::size_t begin, std::size_t end) {
  for (std::size_t i = begin + blockIdx.x * blockDim.x + threadIdx.x; i < end; i += std::size_t{gridDim.x} * blockDim.x) {
    const float a = static_cast<float>(i % 100003) * 0.000062831853F;  // around the disc
    const float r = 0.3F + 1.7F * static_cast<float>((i * 2654435761ULL) % 1000) / 1000.0F;
    p[2 * i] = make_float4(r * cosf(a), r * sinf(a), 0.02F * sinf(7.0F * a), 1.0F);
    p[2 * i + 1] = make_float4(-0.3F * sinf(a), 0.3F * cosf(a), 0.0F, 0.0F);
  }
}

__global__ void stamp_kernel(float4* p, std::size_t count, std::uint32_t stamp) {
  for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < count; i += std::size_t{gridDim.x} * blockDim.x)
    reinterpret_cast<std::uint32_t*>(&p[2 * i + 1])[3] = stamp;
}

unsigned blocks_for(std::size_t n) {
  const std::size_t b = (n + 255) / 256;
  return static_cast<unsigned>(b < 8192 ? (b == 0 ? 1 : b) : 8192);
}

}  // namespace

cudaError_t seed_particles(void* particles, std::size_t begin, std::size_t end, cudaStream_t stream) {
  if (end <= begin) return cudaSuccess;
  seed_kernel<<<blocks_for(end - begin), 256, 0, stream>>>(static_cast<float4*>(particles), begin, end);
  return cudaGetLastError();
}

cudaError_t stamp_particles(void* particles, std::size_t count, std::uint32_t stamp, cudaStream_t stream) {
  if (count == 0) return cudaSuccess;
  stamp_kernel<<<blocks_for(count), 256, 0, stream>>>(static_cast<float4*>(particles), count, stamp);
  return cudaGetLastError();
}

}  // namespace membridge::bench::realtime
