// The GPU tier's fixture: opens CUDA device 0 through membridge (and the runtime), or skips with the
// reason; with MEMBRIDGE_REQUIRE_GPU=1 a missing GPU fails the test instead, so a GPU run can never
// pass by skipping.
#pragma once

#include "kernels.cuh"
#include "test_environment.hpp"

#include <membridge/cuda/device.hpp>

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <string>

/// Fails the current test (fatally) if a CUDA runtime call fails, naming the call and the error.
#define MB_CUDA_OK(...)                                                                             \
  do {                                                                                              \
    const cudaError_t mb_cuda_rc_ = (__VA_ARGS__);                                                  \
    ASSERT_EQ(mb_cuda_rc_, cudaSuccess) << #__VA_ARGS__ << ": " << cudaGetErrorName(mb_cuda_rc_); \
  } while (false)

/// Fails the current test (fatally) if a membridge result holds an error, printing its message.
#define MB_OK(...)                                                         \
  do {                                                                     \
    const auto& mb_result_ = (__VA_ARGS__);                                \
    ASSERT_TRUE(mb_result_.has_value()) << mb_result_.error().message();   \
  } while (false)

namespace membridge::testing {

/// Opens device 0 once per process (runtime first, so both share the primary context).
/// Returns the reason when there is no usable GPU.
result<cuda::device> open_gpu();

class gpu_test : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dev = open_gpu();
    if (!dev) {
      const std::string why = "no usable CUDA device: " + dev.error().message();
      if (gpu_required()) FAIL() << why << " (MEMBRIDGE_REQUIRE_GPU=1: a GPU test that cannot run fails)";
      GTEST_SKIP() << why;
    }
    dev_ = std::move(dev).value();
  }

  /// The number of words in the pattern that differ, over `bytes` at `p` (word index from first_word).
  static unsigned long long mismatches(const void* p, std::size_t bytes, std::uint32_t seed,
                                       std::uint64_t first_word = 0) {
    unsigned long long bad = ~0ULL;
    const cudaError_t rc = gpu::count_mismatches(p, bytes, seed, bad, first_word);
    EXPECT_EQ(rc, cudaSuccess) << cudaGetErrorName(rc);
    return bad;
  }

  cuda::device dev_;
};

}  // namespace membridge::testing
