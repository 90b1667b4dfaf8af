// The device work of a growth: an overlapping move with cudaMemcpyAsync pieces, and a kernel that
// makes new particles as turned copies of existing ones.
#include "particle_growth.hpp"

#include <algorithm>
#include <cmath>

namespace particles {

namespace {

constexpr unsigned threads_per_block = 256;

__global__ void spawn_kernel(particle* __restrict__ out, std::size_t count, const particle* __restrict__ source,
                             std::size_t source_count, float c, float s) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride) {
    particle q = source[i % source_count];
    const float px = q.position.x;
    const float py = q.position.y;
    q.position.x = c * px - s * py;
    q.position.y = s * px + c * py;
    const float vx = q.velocity.x;
    const float vy = q.velocity.y;
    q.velocity.x = c * vx - s * vy;
    q.velocity.y = s * vx + c * vy;
    out[i] = q;
  }
}

}  // namespace

cudaError_t move_particles(particle* destination, const particle* source, std::size_t count, cudaStream_t stream) {
  if (count == 0 || destination == source) return cudaSuccess;
  if (destination < source) return cudaErrorInvalidValue;
  const auto gap = static_cast<std::size_t>(destination - source);
  std::size_t end = count;
  while (end > 0) {
    const std::size_t piece = std::min(gap, end);
    const std::size_t begin = end - piece;
    if (const cudaError_t rc = cudaMemcpyAsync(destination + begin, source + begin, piece * sizeof(particle),
                                               cudaMemcpyDeviceToDevice, stream);
        rc != cudaSuccess)
      return rc;
    end = begin;
  }
  return cudaSuccess;
}

cudaError_t spawn_particles(particle* destination, std::size_t count, const particle* source,
                            std::size_t source_count, float angle, cudaStream_t stream) {
  if (count == 0) return cudaSuccess;
  if (destination == nullptr || source == nullptr || source_count == 0) return cudaErrorInvalidValue;
  const std::size_t blocks = std::min<std::size_t>((count + threads_per_block - 1) / threads_per_block, 65535u * 16u);
  spawn_kernel<<<static_cast<unsigned>(blocks), threads_per_block, 0, stream>>>(destination, count, source,
                                                                                source_count, std::cos(angle),
                                                                                std::sin(angle));
  return cudaGetLastError();
}

}  // namespace particles
