// The GPU tier's fixtures: open CUDA device 0 (and GPU 1 for two_gpu_test) through membridge (and
// the runtime), or skip with the reason; with MEMBRIDGE_REQUIRE_GPU=1 a missing GPU fails the test
// instead (MEMBRIDGE_REQUIRE_GPUS=2 likewise for a missing second GPU), so a GPU run can never pass by
// skipping.
#pragma once

#include "kernels.cuh"
#include "test_environment.hpp"

#include <membridge/cuda/device.hpp>
#include <membridge/cuda/growable_buffer.hpp>
#include <membridge/cuda/peer.hpp>

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <utility>

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

/// A fresh, non-zero pattern seed (never the same data twice, so leftovers cannot pass a check).
inline std::uint32_t fresh_seed() {
  static std::mt19937 engine{std::random_device{}()};
  std::uint32_t seed = 0;
  while (seed == 0) seed = static_cast<std::uint32_t>(engine());
  return seed;
}

/// `p` (a device address) as a pointer, for kernels and the CUDA runtime.
inline void* as_ptr(CUdeviceptr p) { return reinterpret_cast<void*>(static_cast<std::uintptr_t>(p)); }

/// A child process's reply (a struct of type Reply with an integer `status` and a char array
/// `message`) saying that step `status` failed because of `why` (cut to fit); every other field is 0.
template <class Reply>
Reply failed_reply(std::int32_t status, const std::string& why) {
  Reply r{};
  r.status = status;
  std::snprintf(r.message, sizeof r.message, "%s", why.c_str());
  return r;
}

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

  /// Opens GPU 1 (on dev_'s driver) into `other`, or ends the test: with one GPU it is not run (a
  /// skip), or fails where MEMBRIDGE_REQUIRE_GPUS=2 asks for two GPUs. The caller returns when
  /// IsSkipped() or HasFatalFailure().
  void open_second_gpu(cuda::device& other) {
    int n = 0;
    MB_CUDA_OK(cudaGetDeviceCount(&n));
    if (n < 2) {
      if (gpus_required() >= 2) FAIL() << "one GPU, MEMBRIDGE_REQUIRE_GPUS=" << gpus_required();
      GTEST_SKIP() << "not run: needs two GPUs (" << n << " here)";
    }
    auto opened = cuda::device::open(dev_.shared_driver(), 1);
    ASSERT_TRUE(opened) << opened.error().message();
    other = std::move(opened).value();
  }

  /// Ends the test unless GPU `from` has peer access to GPU `to`: it is not run (a skip), or fails
  /// where MEMBRIDGE_REQUIRE_GPUS=2 asks for two GPUs. The caller returns when IsSkipped() or
  /// HasFatalFailure().
  static void require_peer_access_or_skip(const cuda::device& from, const cuda::device& to) {
    const auto peer = cuda::require_peer_access(from, to);
    if (peer) return;
    const std::string why = peer.error().message();
    if (gpus_required() >= 2) FAIL() << "MEMBRIDGE_REQUIRE_GPUS=" << gpus_required() << " but " << why;
    GTEST_SKIP() << "not run: GPU " << from.ordinal() << " has no peer access to GPU " << to.ordinal() << " ("
                 << why << ")";
  }

  /// A one-chunk growable buffer on dev_ and its chunk, exported.
  struct poisoned_chunk {
    cuda::growable_buffer buffer;
    cuda::exported_chunk chunk;
  };

  /// Makes a one-chunk growable buffer of `size` bytes on dev_, poisons it (every byte 0xEE) and
  /// exports its chunk into `out`. Fails the test (fatally) when a step fails; the caller returns when
  /// HasFatalFailure().
  void make_poisoned_chunk(std::size_t size, poisoned_chunk& out) {
    auto buffer = cuda::growable_buffer::create(dev_, {.size = size, .max_size = size});
    MB_OK(buffer);
    ASSERT_EQ(buffer->chunk_count(), 1U);
    MB_CUDA_OK(cudaMemset(buffer->data(), 0xEE, buffer->capacity()));  // poison
    MB_CUDA_OK(cudaDeviceSynchronize());
    auto chunk = buffer->export_chunk(0);
    MB_OK(chunk);
    out.buffer = std::move(buffer).value();
    out.chunk = std::move(chunk).value();
  }

  cuda::device dev_;
};

/// gpu_test on two GPUs: other_ is GPU 1. With one GPU the test is not run (a skip), or fails where
/// MEMBRIDGE_REQUIRE_GPUS=2 asks for two.
class two_gpu_test : public gpu_test {
 protected:
  void SetUp() override {
    gpu_test::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    open_second_gpu(other_);
  }

  cuda::device other_;
};

}  // namespace membridge::testing
