// The device as membridge sees it matches what the CUDA runtime reports, and both work in the same
// (primary) context.
#include "gpu_test.hpp"

#include <membridge/cuda/driver.hpp>

#include <cstring>

namespace {

using membridge::testing::gpu_test;

TEST_F(gpu_test, device_identity_matches_the_runtime) {
  cudaDeviceProp prop{};
  MB_CUDA_OK(cudaGetDeviceProperties(&prop, 0));
  EXPECT_EQ(dev_.name(), prop.name);
  EXPECT_EQ(std::memcmp(dev_.uuid().bytes.data(), prop.uuid.bytes, 16), 0) << dev_.uuid().to_string();
  EXPECT_FALSE(dev_.uuid().is_zero());
  EXPECT_EQ(dev_.total_memory(), prop.totalGlobalMem);
  EXPECT_EQ(dev_.compute_capability()[0], prop.major);
  EXPECT_EQ(dev_.compute_capability()[1], prop.minor);
  EXPECT_FALSE(dev_.pci_bus_id().empty());
}

TEST_F(gpu_test, device_supports_what_membridge_needs) {
  const auto& caps = dev_.capabilities();
  EXPECT_TRUE(caps.virtual_memory_management);
  EXPECT_TRUE(caps.posix_fd_handles);
  EXPECT_TRUE(caps.unified_addressing);
  const std::size_t g = dev_.granularity();
  EXPECT_GT(g, 0u);
  EXPECT_EQ(g & (g - 1), 0u) << "granularity " << g << " is not a power of two";
  EXPECT_GE(dev_.recommended_granularity(), g);
  EXPECT_GE(dev_.get_driver().version(), 12000);
  RecordProperty("granularity", std::to_string(g));
  RecordProperty("driver_version", std::to_string(dev_.get_driver().version()));
}

TEST_F(gpu_test, membridge_and_the_runtime_share_the_primary_context) {
  CUcontext current = nullptr;
  ASSERT_EQ(dev_.get_driver().api().cuCtxGetCurrent(&current), CUDA_SUCCESS);
  EXPECT_EQ(current, dev_.primary_context());
}

TEST_F(gpu_test, memory_info_agrees_with_the_runtime) {
  const auto info = dev_.memory();
  MB_OK(info);
  std::size_t free_rt = 0;
  std::size_t total_rt = 0;
  MB_CUDA_OK(cudaMemGetInfo(&free_rt, &total_rt));
  EXPECT_EQ(info->total_bytes, total_rt);
  EXPECT_GT(info->free_bytes, 0u);
  MB_OK(dev_.synchronize());
}

}  // namespace
