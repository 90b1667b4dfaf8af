// gpu tier: the fixture of the tests that share memory between CUDA and Vulkan on the CUDA GPU
// (vulkan_gpu_test.cpp, cuda_vulkan_buffer_gpu_test.cpp): a validated Vulkan context on device 0,
// host-side pattern checks and a read-back through a staging buffer. Any validation message fails
// the test.
#pragma once

#include "gpu_test.hpp"
#include "vulkan_test.hpp"

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <utility>

namespace membridge::testing {

class vulkan_gpu_fixture : public gpu_test {
 protected:
  void SetUp() override {
    gpu_test::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    vulkan::create_options options;
    options.uuid = dev_.uuid();
    auto made = make_validated_context(options);
    ASSERT_TRUE(made) << made.error().message();
    vk = std::move(made).value();
  }
  void TearDown() override {
    if (!dev_.valid()) return;  // skipped: no GPU
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    vk.context = vulkan::device_context();
    const std::lock_guard<std::mutex> guard(*vk.lock);
    for (const auto& m : *vk.messages) ADD_FAILURE() << m;
  }
  const VolkDeviceTable& fn() const { return vk.context.functions(); }

  /// Copies `size` bytes at `offset` of `buffer` into `staging` (at 0) and waits.
  void read_back(VkBuffer buffer, std::size_t offset, std::size_t size, const staging_buffer& staging) {
    ASSERT_TRUE(run_commands(vk.context, [&](VkCommandBuffer cb) {
      full_barrier(vk.context, cb);
      const VkBufferCopy region{offset, 0, size};
      fn().vkCmdCopyBuffer(cb, buffer, staging.get(), 1, &region);
      full_barrier(vk.context, cb);
    }));
  }
  /// The words of `words[0, count)` that differ from pattern `seed` (word index from first_word).
  static std::size_t host_mismatches(const std::uint32_t* words, std::size_t count, std::uint32_t seed,
                                     std::uint64_t first_word = 0) {
    std::size_t bad = 0;
    for (std::size_t i = 0; i < count; ++i)
      if (words[i] != gpu::pattern(first_word + i, seed)) ++bad;
    return bad;
  }

  validated_context vk;
};

}  // namespace membridge::testing
