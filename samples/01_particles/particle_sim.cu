// The simulation step as a CUDA kernel: particles::advance per particle, grid-stride, all steps in
// registers. Built with --fmad=false (see CMakeLists.txt) so the results match step_cpu.
#include "particle_sim_cuda.hpp"

#include <algorithm>

namespace particles {

namespace {

constexpr unsigned threads_per_block = 256;

__global__ void step_kernel(particle* __restrict__ p, std::size_t count, sim_params params, int steps) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride) {
    particle q = p[i];
    for (int k = 0; k < steps; ++k) advance(q, params);
    p[i] = q;
  }
}

}  // namespace

cudaError_t step_cuda(particle* device_particles, std::size_t count, const sim_params& params, int steps,
                      cudaStream_t stream) {
  if (count == 0 || steps <= 0) return cudaSuccess;
  if (device_particles == nullptr) return cudaErrorInvalidValue;
  // One thread per particle up to 65535 * 16 blocks; beyond that the grid-stride loop takes over.
  const std::size_t blocks = std::min<std::size_t>((count + threads_per_block - 1) / threads_per_block, 65535u * 16u);
  step_kernel<<<static_cast<unsigned>(blocks), threads_per_block, 0, stream>>>(device_particles, count, params, steps);
  return cudaGetLastError();
}

}  // namespace particles
