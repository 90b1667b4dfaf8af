// The CUDA step against the CPU reference (same function, same rounding: bitwise equal expected) and
// its speed at 1M-4M particles. Skips without a CUDA device; MEMBRIDGE_REQUIRE_GPU=1 turns a skip
// into a failure.
#include "particle_sim_cpu.hpp"
#include "particle_sim_cuda.hpp"
#include "test_environment.hpp"

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace particles {
namespace {

#define MB_CUDA_OK(...)                                                                             \
  do {                                                                                              \
    const cudaError_t mb_cuda_rc_ = (__VA_ARGS__);                                                  \
    ASSERT_EQ(mb_cuda_rc_, cudaSuccess) << #__VA_ARGS__ << ": " << cudaGetErrorName(mb_cuda_rc_); \
  } while (false)

/// Why there is no usable CUDA device, or empty when there is one.
std::string no_gpu_reason() {
  int count = 0;
  if (const cudaError_t rc = cudaGetDeviceCount(&count); rc != cudaSuccess) return cudaGetErrorName(rc);
  if (count == 0) return "no CUDA devices";
  if (const cudaError_t rc = cudaFree(nullptr); rc != cudaSuccess) return cudaGetErrorName(rc);
  return {};
}

/// The CUDA runtime opens its device files on first use; do that before the fd-leak listener's
/// first snapshot.
void warm_up_cuda() {
  if (!no_gpu_reason().empty()) return;
  particle* p = nullptr;
  if (cudaMalloc(&p, sizeof(particle)) != cudaSuccess) return;
  (void)step_cuda(p, 1, default_params(), 1);
  (void)cudaDeviceSynchronize();
  (void)cudaFree(p);
}
const membridge::testing::warm_up cuda_warm_up(&warm_up_cuda);

class particle_sim_gpu : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const std::string why = no_gpu_reason(); !why.empty()) {
      if (membridge::testing::gpu_required()) FAIL() << "no usable CUDA device: " << why << " (MEMBRIDGE_REQUIRE_GPU=1)";
      GTEST_SKIP() << "no usable CUDA device: " << why;
    }
  }
};

/// A device copy of `ps`, freed at the end of the scope.
struct device_particles {
  particle* ptr = nullptr;
  explicit device_particles(std::size_t count) {
    if (cudaMalloc(&ptr, count * sizeof(particle)) != cudaSuccess) ptr = nullptr;
  }
  device_particles(const device_particles&) = delete;
  device_particles& operator=(const device_particles&) = delete;
  ~device_particles() { (void)cudaFree(ptr); }
};

TEST_F(particle_sim_gpu, matches_the_cpu_reference) {
  constexpr std::size_t count = 1 << 20;
  constexpr int steps = 100;
  const sim_params params = default_params();
  auto cpu = initial_particles(count, 2024);
  device_particles gpu(count);
  ASSERT_NE(gpu.ptr, nullptr);
  MB_CUDA_OK(cudaMemcpy(gpu.ptr, cpu.data(), count * sizeof(particle), cudaMemcpyHostToDevice));
  MB_CUDA_OK(step_cuda(gpu.ptr, count, params, steps / 2));
  MB_CUDA_OK(step_cuda(gpu.ptr, count, params, steps - steps / 2));  // batching does not matter
  step_cpu(cpu, params, steps);
  std::vector<particle> back(count);
  MB_CUDA_OK(cudaMemcpy(back.data(), gpu.ptr, count * sizeof(particle), cudaMemcpyDeviceToHost));

  // The documented tolerance (particle_sim_cuda.hpp): 1e-5 of the largest coordinate per 100 steps.
  float scale = 0.0f;
  float worst = 0.0f;
  std::size_t differing = 0;
  for (std::size_t i = 0; i < count; ++i) {
    const float a[8] = {cpu[i].position.x, cpu[i].position.y, cpu[i].position.z, cpu[i].position.w,
                        cpu[i].velocity.x, cpu[i].velocity.y, cpu[i].velocity.z, cpu[i].velocity.w};
    const float b[8] = {back[i].position.x, back[i].position.y, back[i].position.z, back[i].position.w,
                        back[i].velocity.x, back[i].velocity.y, back[i].velocity.z, back[i].velocity.w};
    for (int k = 0; k < 8; ++k) {
      scale = std::max(scale, std::abs(a[k]));
      worst = std::max(worst, std::abs(a[k] - b[k]));
    }
    if (std::memcmp(&cpu[i], &back[i], sizeof(particle)) != 0) ++differing;
  }
  EXPECT_LE(worst, 1e-5f * scale) << differing << " particles differ";
  // Same operations, same IEEE rounding (--fmad=false, -ffp-contract=off): expected bitwise equal.
  EXPECT_EQ(differing, 0u) << "largest difference " << worst << " (scale " << scale << ")";
}

TEST_F(particle_sim_gpu, a_step_of_4m_particles_takes_well_under_a_millisecond) {
  constexpr std::size_t count = 4u << 20;
  const sim_params params = default_params();
  const auto initial = initial_particles(count, 9);
  device_particles gpu(count);
  ASSERT_NE(gpu.ptr, nullptr);
  MB_CUDA_OK(cudaMemcpy(gpu.ptr, initial.data(), count * sizeof(particle), cudaMemcpyHostToDevice));
  cudaEvent_t start = nullptr;
  cudaEvent_t stop = nullptr;
  MB_CUDA_OK(cudaEventCreate(&start));
  MB_CUDA_OK(cudaEventCreate(&stop));
  MB_CUDA_OK(step_cuda(gpu.ptr, count, params, 1));  // warm-up
  std::vector<float> ms;
  for (int round = 0; round < 50; ++round) {
    MB_CUDA_OK(cudaEventRecord(start));
    MB_CUDA_OK(step_cuda(gpu.ptr, count, params, 1));
    MB_CUDA_OK(cudaEventRecord(stop));
    MB_CUDA_OK(cudaEventSynchronize(stop));
    float elapsed = 0.0f;
    MB_CUDA_OK(cudaEventElapsedTime(&elapsed, start, stop));
    ms.push_back(elapsed);
  }
  (void)cudaEventDestroy(start);
  (void)cudaEventDestroy(stop);
  std::sort(ms.begin(), ms.end());
  const float median = ms[ms.size() / 2];
  std::printf("step_cuda, 4M particles, one step: median %.3f ms (%.0f GB/s)\n", static_cast<double>(median),
              2.0 * static_cast<double>(count * sizeof(particle)) / (static_cast<double>(median) * 1e6));
  EXPECT_LT(median, 1.0f);
}

}  // namespace
}  // namespace particles
