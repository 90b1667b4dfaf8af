// The wave field's CUDA kernels (wave_sim_cuda.hpp): one thread per cell.
#include "wave_sim_cuda.hpp"

#include <utility>

namespace heightfield {

namespace {

struct drop_list {
  drop drops[max_drops_per_frame];
  unsigned count;
};

constexpr unsigned block_x = 32;
constexpr unsigned block_y = 8;

dim3 grid_for(int n) {
  const unsigned cells = static_cast<unsigned>(n);
  return dim3((cells + block_x - 1) / block_x, (cells + block_y - 1) / block_y);
}

__global__ void add_drops_kernel(float* u_prev, float* u, int n, drop_list list) {
  const int x = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  const int y = static_cast<int>(blockIdx.y * blockDim.y + threadIdx.y);
  if (x >= n || y >= n) return;
  float h = 0.0f;
  for (unsigned i = 0; i < list.count; ++i) h += drop_height(list.drops[i], x, y);
  if (h == 0.0f) return;
  const std::size_t i = static_cast<std::size_t>(y) * static_cast<std::size_t>(n) + static_cast<std::size_t>(x);
  u[i] += h;
  u_prev[i] += h;
}

__global__ void step_kernel(float* u_prev, const float* u, int n, wave_params params, float* out) {
  const int x = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  const int y = static_cast<int>(blockIdx.y * blockDim.y + threadIdx.y);
  if (x >= n || y >= n) return;
  const float next = step_cell(u_prev, u, n, x, y, params);
  const std::size_t i = static_cast<std::size_t>(y) * static_cast<std::size_t>(n) + static_cast<std::size_t>(x);
  // Every thread reads u_prev[i] (its own cell only) before writing it: in place is safe.
  u_prev[i] = next;
  if (out != nullptr) out[i] = next;
}

}  // namespace

cudaError_t add_drops_cuda(float* u_prev, float* u, int n, const drop* drops, std::size_t count, cudaStream_t stream) {
  if (count == 0) return cudaSuccess;
  if (count > max_drops_per_frame) return cudaErrorInvalidValue;
  drop_list list{};
  for (std::size_t i = 0; i < count; ++i) list.drops[i] = drops[i];
  list.count = static_cast<unsigned>(count);
  add_drops_kernel<<<grid_for(n), dim3(block_x, block_y), 0, stream>>>(u_prev, u, n, list);
  return cudaGetLastError();
}

cudaError_t step_cuda(float*& u_prev, float*& u, int n, const wave_params& params, int steps, float* out,
                      cudaStream_t stream) {
  if (steps <= 0) {
    const std::size_t bytes = static_cast<std::size_t>(n) * static_cast<std::size_t>(n) * sizeof(float);
    return cudaMemcpyAsync(out, u, bytes, cudaMemcpyDeviceToDevice, stream);
  }
  for (int s = 0; s < steps; ++s) {
    step_kernel<<<grid_for(n), dim3(block_x, block_y), 0, stream>>>(u_prev, u, n, params,
                                                                     s + 1 == steps ? out : nullptr);
    if (const cudaError_t rc = cudaGetLastError(); rc != cudaSuccess) return rc;
    std::swap(u_prev, u);
  }
  return cudaSuccess;
}

}  // namespace heightfield
