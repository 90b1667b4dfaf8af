// gpu tier: sync::cuda_vulkan_buffer, a CUDA growable buffer and its Vulkan view kept in step by the
// object's worker: CUDA writes, Vulkan reads across every chunk boundary after each resize, while
// another thread reads the view through with_view().
#include "vulkan_gpu_fixture.hpp"

#include <membridge/core/units.hpp>
#include <membridge/sync/cuda_vulkan_buffer.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>
#include <utility>

namespace membridge::testing {
namespace {

using namespace membridge::literals;
using namespace std::chrono_literals;

class cuda_vulkan_buffer_gpu_test : public vulkan_gpu_fixture {};

TEST_F(cuda_vulkan_buffer_gpu_test, cuda_writes_vulkan_reads_after_every_resize_the_worker_followed) {
  cuda::chunk_policy policy;
  policy.min_chunk = 64_MiB;
  policy.max_chunk = 64_MiB;
  sync::cuda_vulkan_buffer_options options;
  options.buffer = {.size = 64_MiB, .max_size = 1_GiB, .chunks = policy};
  auto bridge = sync::cuda_vulkan_buffer::create(dev_, vk.context, options);
  MB_OK(bridge);
  ASSERT_NE(bridge->address(), 0U);
  const CUdeviceptr address = bridge->address();
  MB_OK(bridge->wait_followed(5s));
  VkBuffer first = VK_NULL_HANDLE;
  bridge->with_view([&](const vulkan::chunked_buffer& view, std::size_t cuda_size) {
    EXPECT_TRUE(view.is_sparse()) << "an H100 has sparse binding: one VkBuffer for the whole range";
    EXPECT_EQ(cuda_size, 64_MiB);
    EXPECT_GE(view.size(), 64_MiB);
    first = view.buffer();
  });
  ASSERT_NE(first, VK_NULL_HANDLE);

  // Another thread reads the view all along (thread safety: with_view against the worker and resize).
  std::atomic<bool> done{false};
  std::atomic<std::size_t> reads{0};
  std::atomic<std::size_t> bad_reads{0};
  std::thread reader([&] {
    while (!done.load()) {
      bridge->with_view([&](const vulkan::chunked_buffer& view, std::size_t) {
        if (view.buffer() != first || view.size() == 0) bad_reads.fetch_add(1);
        reads.fetch_add(1);
      });
    }
  });

  auto staging = staging_buffer::create(vk.context, 2_MiB);
  MB_OK(staging);
  std::uint32_t seed = 40;
  for (const std::size_t size : {192_MiB, 320_MiB, 128_MiB, 512_MiB}) {
    ++seed;
    MB_OK(bridge->resize(size));
    EXPECT_EQ(bridge->size(), size);
    MB_OK(bridge->wait_followed(10s));
    EXPECT_EQ(bridge->address(), address) << "the CUDA address never moves";
    MB_CUDA_OK(gpu::fill_pattern(reinterpret_cast<void*>(static_cast<std::uintptr_t>(address)), size, seed));
    MB_CUDA_OK(cudaDeviceSynchronize());
    std::size_t view_size = 0;
    bridge->with_view([&](const vulkan::chunked_buffer& view, std::size_t) { view_size = view.size(); });
    ASSERT_GE(view_size, size) << "the worker followed the resize to " << size;
    // 2 MiB across every 64 MiB boundary, and the last 2 MiB.
    for (std::size_t at = 64_MiB - 1_MiB; at + 2_MiB <= size; at += 64_MiB) {
      ASSERT_NO_FATAL_FAILURE(read_back(first, at, 2_MiB, *staging));
      EXPECT_EQ(host_mismatches(staging->words(), 2_MiB / 4, seed, at / 4), 0U) << "size " << size << " at " << at;
    }
    ASSERT_NO_FATAL_FAILURE(read_back(first, size - 2_MiB, 2_MiB, *staging));
    EXPECT_EQ(host_mismatches(staging->words(), 2_MiB / 4, seed, (size - 2_MiB) / 4), 0U) << "size " << size;
  }
  done.store(true);
  reader.join();
  EXPECT_GT(reads.load(), 0U);
  EXPECT_EQ(bad_reads.load(), 0U);

  // Growth past max_size is refused and changes nothing.
  EXPECT_FALSE(bridge->resize(2_GiB));
  EXPECT_EQ(bridge->size(), 512_MiB);
}

}  // namespace
}  // namespace membridge::testing
