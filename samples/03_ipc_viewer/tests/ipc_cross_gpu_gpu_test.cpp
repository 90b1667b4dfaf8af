// Sample 03 on two GPUs, run as a user runs it: membridge_ipc_producer simulates on GPU 1 and publishes
// a buffer on GPU 0 (--sim-device 1 --render-device 0, sync::cross_gpu_link), and membridge_ipc_viewer,
// another process, draws 300 frames from it on GPU 0 (--render-device 0), headless, following two
// growths; the PNG must show particles. And the viewer refuses, naming both GPUs, a buffer that lives
// on another GPU than its --render-device. Not run on one GPU; MEMBRIDGE_REQUIRE_GPUS=2 makes that a
// failure.
#include "demo_process.hpp"
#include "ipc_sample_process.hpp"
#include "png_writer.hpp"
#include "test_environment.hpp"

#include <membridge/cuda/device.hpp>

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

namespace particles::testing {
namespace {

/// Loads the CUDA driver before the first test: the descriptors it keeps for the life of the process
/// (/dev/nvidia*, its eventfd and pipes) belong to no test, so the fd-leak listener must not see them
/// appear inside one.
class cuda_driver_loaded : public ::testing::Environment {
 public:
  void SetUp() override { (void)membridge::cuda::device::count(); }
};
[[maybe_unused]] const auto* const cuda_environment = ::testing::AddGlobalTestEnvironment(new cuda_driver_loaded);

/// Skips (not run) with fewer than two CUDA devices, or fails when MEMBRIDGE_REQUIRE_GPUS=2.
#define SKIP_UNLESS_TWO_GPUS()                                                                       \
  do {                                                                                               \
    const auto counted = membridge::cuda::device::count();                                          \
    const int gpus = counted ? *counted : 0;                                                         \
    if (gpus < 2) {                                                                                  \
      if (membridge::testing::gpus_required() >= 2)                                                  \
        FAIL() << "fewer than two GPUs (" << gpus << "), MEMBRIDGE_REQUIRE_GPUS=2";                   \
      GTEST_SKIP() << "not run: needs two GPUs (" << gpus << " here)";                              \
    }                                                                                                \
  } while (false)

TEST(ipc_sample_gpu, producer_on_gpu_1_publishing_on_gpu_0_is_drawn_by_a_viewer_on_gpu_0) {
  SKIP_UNLESS_TWO_GPUS();
  ASSERT_TRUE(std::filesystem::exists(producer_binary())) << producer_binary() << " is missing";
  ASSERT_TRUE(std::filesystem::exists(viewer_binary())) << viewer_binary() << " is missing";
  const auto png = output_dir() / "ipc_cross_gpu.png";
  std::error_code ec;
  std::filesystem::remove(png, ec);
  // Growth every 100 frames from 1M (x2, up to 4M): the viewer follows two growths, each a new link.
  const process_result r =
      run_both("cross_gpu", "--sim-device 1 --render-device 0 --frames 0 --grow-every 100 --max-particles 4M",
               "--render-device 0 --headless --frames 300 --validation --reconnect-ms 15000 --out " + png.string());
  std::printf("%s", r.out.c_str());
  ASSERT_EQ(r.exit_status, 0) << describe(r);
  EXPECT_NE(r.out.find("across GPUs: simulating on CUDA device 1"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("publishing from CUDA device 0"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("producer frames: drew 300 over 1 connection"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("followed growth to 2097152 particles"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("grew to 2097152 particles before frame 100"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\nvalidation: 0 messages\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("wrote " + png.string()), std::string::npos) << r.out;

  auto image = apps::read_png(png);
  ASSERT_TRUE(image) << image.error().message();
  const apps::image_summary s = apps::image_stats(image->pixels, image->width, image->height, {3, 3, 5});
  std::printf("ipc across GPUs: %zu of %zu pixels lit, %zu colour buckets\n", s.lit_pixels, s.pixels,
              s.colour_buckets);
  EXPECT_GT(s.lit_pixels, s.pixels / 50) << "the viewer's image is (nearly) blank";
}

TEST(ipc_sample_gpu, viewer_refuses_a_buffer_on_another_gpu_naming_both) {
  SKIP_UNLESS_TWO_GPUS();
  ASSERT_TRUE(std::filesystem::exists(producer_binary())) << producer_binary() << " is missing";
  const process_result r = run_both("wrong_gpu", "--render-device 0 --sim-device 0 --frames 0",
                                    "--render-device 1 --headless --frames 10 --reconnect-ms 15000");
  EXPECT_EQ(r.exit_status, 2) << describe(r);
  EXPECT_NE(r.err.find("the producer's buffer lives on CUDA device 0"), std::string::npos) << describe(r);
  EXPECT_NE(r.err.find("this viewer renders on CUDA device 1"), std::string::npos) << describe(r);
  EXPECT_NE(r.err.find("Start the producer with --render-device 1"), std::string::npos) << describe(r);
}

}  // namespace
}  // namespace particles::testing
