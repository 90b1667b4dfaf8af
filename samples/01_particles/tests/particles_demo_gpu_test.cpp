// membridge_particles on a GPU, run as a user runs it: the GPU path (CUDA writes a membridge buffer,
// Vulkan draws it, one timeline handoff per frame) must draw exactly what the CPU path draws on the
// same Vulkan device: the CUDA step equals the CPU step bit for bit (particle_sim_cuda.hpp) and the
// renderer is the same, so a stale slot, a wrong offset or a missing wait shows up as changed pixels.
// Skips without a CUDA device; MEMBRIDGE_REQUIRE_GPU=1 turns a skip into a failure. With two GPUs the
// same run with the simulation on GPU 1 (--sim-device 1) must draw the same image too.
#include "demo_process.hpp"
#include "png_writer.hpp"
#include "test_environment.hpp"

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace particles::testing {
namespace {

using namespace std::chrono_literals;

std::string no_cuda_device() {
  int count = 0;
  if (const cudaError_t rc = cudaGetDeviceCount(&count); rc != cudaSuccess) return cudaGetErrorName(rc);
  if (count == 0) return "no CUDA devices";
  return {};
}

std::string describe(const process_result& r) {
  return "exit status " + std::to_string(r.exit_status) + "\n--- stdout\n" + r.out + "--- stderr\n" + r.err;
}

/// Runs the demo with `gpu_extra` (the GPU path) and with --cpu on the same frames, and checks that
/// the GPU run printed `path_text` and that both drew the same image.
void gpu_path_matches_cpu_path(const std::vector<std::string>& gpu_extra, const std::string& path_text,
                               const std::string& name) {
  // 10 steps per frame move the particles by pixels per frame, so drawing a neighbouring frame's slot
  // would change much of the image.
  const std::vector<std::string> common = {"--headless", "--validation", "--particles", "512K", "--steps", "10",
                                           "--frames",   "16",           "--slots",     "3",    "--width", "640",
                                           "--height",   "360",          "--seed",      "7"};
  ASSERT_TRUE(std::filesystem::exists(demo_binary()))
      << demo_binary() << " is missing: the test runs the membridge_particles binary (scripts/gpu-bundle bundles it)";
  const auto gpu_png = output_dir() / (name + ".png");
  const auto cpu_png = output_dir() / (name + "_cpu.png");
  std::vector<std::string> gpu_args{demo_binary().string()};
  gpu_args.insert(gpu_args.end(), common.begin(), common.end());
  std::vector<std::string> cpu_args = gpu_args;
  gpu_args.insert(gpu_args.end(), gpu_extra.begin(), gpu_extra.end());
  gpu_args.insert(gpu_args.end(), {"--out", gpu_png.string()});
  cpu_args.insert(cpu_args.end(), {"--cpu", "--out", cpu_png.string()});

  const auto gpu = run_process(gpu_args, name, 120s);
  ASSERT_TRUE(gpu) << gpu.error().message();
  std::printf("%s", gpu->out.c_str());
  ASSERT_EQ(gpu->exit_status, 0) << describe(*gpu);
  EXPECT_NE(gpu->out.find(path_text), std::string::npos) << gpu->out;
  EXPECT_NE(gpu->out.find("\nvalidation: 0 messages\n"), std::string::npos) << gpu->out;
  const auto cpu = run_process(cpu_args, name + "_cpu", 120s);
  ASSERT_TRUE(cpu) << cpu.error().message();
  ASSERT_EQ(cpu->exit_status, 0) << describe(*cpu);
  EXPECT_NE(cpu->out.find("\nvalidation: 0 messages\n"), std::string::npos) << cpu->out;

  auto a = apps::read_png(gpu_png);
  auto b = apps::read_png(cpu_png);
  ASSERT_TRUE(a) << a.error().message();
  ASSERT_TRUE(b) << b.error().message();
  ASSERT_EQ(a->pixels.size(), b->pixels.size());
  const apps::image_summary s = apps::image_stats(a->pixels, a->width, a->height, {3, 3, 5});
  EXPECT_GT(s.lit_pixels, s.pixels / 50) << "the GPU path's image is (nearly) blank";
  std::size_t differing = 0;
  for (std::size_t i = 0; i < a->pixels.size(); i += 4)
    if (a->pixels[i] != b->pixels[i] || a->pixels[i + 1] != b->pixels[i + 1] || a->pixels[i + 2] != b->pixels[i + 2])
      ++differing;
  std::printf("GPU vs CPU path: %zu of %zu pixels differ (expected 0); %zu lit\n", differing, a->pixels.size() / 4,
              s.lit_pixels);
  // Expected 0; a few pixels of slack for a toolchain that still contracts a multiply-add somewhere.
  EXPECT_LE(differing, a->pixels.size() / 4 / 1000) << "the GPU path drew other particles than the CPU path";
}

TEST(particles_demo_gpu, gpu_path_draws_exactly_what_the_cpu_path_draws) {
  if (const std::string why = no_cuda_device(); !why.empty()) {
    if (membridge::testing::gpu_required()) FAIL() << "no usable CUDA device: " << why << " (MEMBRIDGE_REQUIRE_GPU=1)";
    GTEST_SKIP() << "no usable CUDA device: " << why;
  }
  gpu_path_matches_cpu_path({}, "GPU path (CUDA -> Vulkan, zero copy)", "gpu_path");
}

// The simulation on GPU 1, the slots and Vulkan on GPU 0 (sync::cross_gpu_link, the default mode):
// the same image as the CPU path. Not run on one GPU; MEMBRIDGE_REQUIRE_GPUS=2 makes that a failure.
TEST(particles_demo_gpu, sim_on_another_gpu_draws_exactly_what_the_cpu_path_draws) {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count < 2) {
    if (membridge::testing::gpus_required() >= 2) FAIL() << "fewer than two GPUs, MEMBRIDGE_REQUIRE_GPUS=2";
    GTEST_SKIP() << "not run: needs two GPUs (" << count << " here)";
  }
  gpu_path_matches_cpu_path({"--sim-device", "1", "--render-device", "0"}, "GPU path (CUDA on another GPU -> Vulkan, ",
                            "cross_gpu_path");
}

}  // namespace
}  // namespace particles::testing
