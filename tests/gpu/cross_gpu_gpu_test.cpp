// gpu tier: a renderer on another GPU than the producer (sync::cross_gpu_link). The frame slots live
// on GPU 0 (A), imported into Vulkan there with a frame timeline; the producer's kernels run on GPU 1
// (B). For 1000 frames in each mode (peer_write, copy_engine, staged): B writes the frame number into
// every word of its write target; on A a kernel on the relay stream counts the slot's words that are
// not the frame number (every frame, before the timeline tells Vulkan), and Vulkan copies the slot's
// first and last word into a log that the host checks for every frame. No host wait in the loop.
// On one GPU the tests are reported as not run; MEMBRIDGE_REQUIRE_GPUS=2 turns that into a failure.
#include "gpu_test.hpp"
#include "vulkan_test.hpp"

#include <membridge/core/units.hpp>
#include <membridge/cuda/growable_buffer.hpp>
#include <membridge/cuda/peer.hpp>
#include <membridge/sync/cross_gpu_link.hpp>
#include <membridge/sync/frame_timeline.hpp>
#include <membridge/sync/vulkan_mirror.hpp>

#include <array>
#include <chrono>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace membridge::testing {
namespace {

using namespace membridge::literals;
using namespace std::chrono_literals;

/// GPU 0 (dev_) holds the slots and runs Vulkan; the producer's kernels run on GPU 1 (other_).
class cross_gpu_gpu_test : public two_gpu_test {
 protected:
  void SetUp() override {
    two_gpu_test::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    vulkan::create_options options;
    options.uuid = dev_.uuid();  // Vulkan on A, the GPU that holds the slots
    auto made = make_validated_context(options);
    ASSERT_TRUE(made) << made.error().message();
    vk = std::move(made).value();
  }
  void TearDown() override {
    if (!other_.valid()) return;  // not run
    EXPECT_EQ(cudaSetDevice(1), cudaSuccess);
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    EXPECT_EQ(cudaSetDevice(0), cudaSuccess);
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    vk.context = vulkan::device_context();
    const std::lock_guard<std::mutex> guard(*vk.lock);
    for (const auto& m : *vk.messages) ADD_FAILURE() << m;
  }
  const VolkDeviceTable& fn() const { return vk.context.functions(); }

  // Frame n: Vulkan copies the first and the last word of slot n % slots into log[2n], log[2n + 1].
  void record_read(VkCommandBuffer cb, std::uint64_t n, VkBuffer shared, VkBuffer log, std::uint32_t slots,
                   std::size_t slot_bytes) const {
    full_barrier(vk.context, cb);
    const std::size_t slot_offset = (n % slots) * slot_bytes;
    const std::array<VkBufferCopy, 2> regions{VkBufferCopy{slot_offset, n * 8, 4},
                                              VkBufferCopy{slot_offset + slot_bytes - 4, n * 8 + 4, 4}};
    fn().vkCmdCopyBuffer(cb, shared, log, 2, regions.data());
    full_barrier(vk.context, cb);
  }

  void frame_loop(sync::cross_gpu_mode mode, std::uint64_t frames) {
    constexpr std::uint32_t slots = 3;
    constexpr std::size_t slot_bytes = 4_MiB;
    if (mode != sync::cross_gpu_mode::staged) {
      auto link = cuda::query_peer(other_, dev_);
      ASSERT_TRUE(link) << link.error().message();
      if (!link->access) {
        if (gpus_required() >= 2) FAIL() << "GPU 1 cannot access GPU 0's memory: " << sync::to_string(mode) << " not run";
        GTEST_SKIP() << "not run: GPU 1 cannot access GPU 0's memory (" << sync::to_string(mode) << ")";
      }
    }
    MB_CUDA_OK(cudaSetDevice(0));
    auto buffer = cuda::growable_buffer::create(dev_, {.size = slots * slot_bytes, .max_size = slots * slot_bytes});
    MB_OK(buffer);
    MB_CUDA_OK(cudaMemset(buffer->data(), 0xFF, buffer->size()));  // poison: no frame number
    MB_CUDA_OK(cudaDeviceSynchronize());
    auto view = sync::mirror_in_vulkan(vk.context, *buffer);
    MB_OK(view);
    auto timeline = sync::frame_timeline::create(vk.context, dev_, {.slots = slots});
    MB_OK(timeline);
    std::vector<CUdeviceptr> slot_addresses;
    for (std::uint32_t k = 0; k < slots; ++k) slot_addresses.push_back(buffer->address() + k * slot_bytes);
    auto link = sync::cross_gpu_link::create(dev_, other_, slot_addresses, slot_bytes, {.mode = mode});
    MB_OK(link);
    ASSERT_EQ(link->mode(), mode);
    unsigned long long* bad_words = nullptr;  // on A: words of a slot that did not hold their frame
    MB_CUDA_OK(cudaMalloc(&bad_words, sizeof *bad_words));
    MB_CUDA_OK(cudaMemset(bad_words, 0, sizeof *bad_words));
    MB_CUDA_OK(cudaSetDevice(1));
    cudaStream_t producer = nullptr;
    MB_CUDA_OK(cudaStreamCreateWithFlags(&producer, cudaStreamNonBlocking));

    auto log = staging_buffer::create(vk.context, frames * 8);
    MB_OK(log);
    const VkBuffer shared = view->segments()[0].buffer;
    auto commands = record_command_buffers(vk.context, frames, [&](VkCommandBuffer cb, std::uint64_t n) {
      record_read(cb, n, shared, log->get(), slots, slot_bytes);
    });
    ASSERT_TRUE(commands) << commands.error().message();
    const VkCommandPool pool = commands->pool;
    const std::vector<VkCommandBuffer>& cbs = commands->buffers;

    const auto relay = reinterpret_cast<cudaStream_t>(link->relay_stream());
    for (std::uint64_t n = 0; n < frames; ++n) {
      const auto value = static_cast<std::uint32_t>(n);
      auto target = link->begin_frame(*timeline, producer, n);
      MB_OK(target);
      MB_CUDA_OK(cudaSetDevice(1));
      MB_CUDA_OK(gpu::write16(reinterpret_cast<void*>(*target), slot_bytes, value, producer));
      if (n % 7 == 0) {
        MB_OK(link->end_frame(*timeline, producer, n));  // the public path as a renderer uses it
      } else {
        // The same frame through the parts, with every word checked on A before the release.
        MB_OK(link->close_slot(producer, n));
        MB_CUDA_OK(cudaSetDevice(0));
        MB_CUDA_OK(gpu::accumulate_not_equal(reinterpret_cast<const void*>(slot_addresses[n % slots]), slot_bytes,
                                             value, bad_words, relay));
        MB_OK(timeline->cuda_release(link->relay_stream(), n));
      }
      MB_OK(timeline->submit(vk.context.graphics_queue().queue, {&cbs[n], 1}, n, VK_PIPELINE_STAGE_TRANSFER_BIT));
    }
    MB_OK(timeline->wait_consumed(frames - 1, 60s));
    MB_OK(link->synchronize());
    MB_CUDA_OK(cudaSetDevice(0));
    unsigned long long bad = ~0ULL;
    MB_CUDA_OK(cudaMemcpy(&bad, bad_words, sizeof bad, cudaMemcpyDeviceToHost));
    EXPECT_EQ(bad, 0U) << "A saw words of a slot that did not hold the frame (" << sync::to_string(mode) << ")";
    std::size_t wrong = 0;
    for (std::uint64_t n = 0; n < frames; ++n)
      for (int end = 0; end < 2; ++end)
        if (log->words()[2 * n + static_cast<std::uint64_t>(end)] != static_cast<std::uint32_t>(n)) {
          if (wrong++ < 5)
            ADD_FAILURE() << "frame " << n << (end == 0 ? " first" : " last") << " word reads "
                          << log->words()[2 * n + static_cast<std::uint64_t>(end)];
        }
    EXPECT_EQ(wrong, 0U) << "Vulkan read a slot that did not hold its frame (" << sync::to_string(mode) << ")";
    ASSERT_EQ(fn().vkQueueWaitIdle(vk.context.graphics_queue().queue), VK_SUCCESS);
    fn().vkDestroyCommandPool(vk.context.device(), pool, nullptr);
    MB_CUDA_OK(cudaSetDevice(1));
    MB_CUDA_OK(cudaStreamDestroy(producer));
    MB_CUDA_OK(cudaSetDevice(0));
    MB_CUDA_OK(cudaFree(bad_words));
  }

  validated_context vk;
};

TEST_F(cross_gpu_gpu_test, peer_write_1000_frames_every_stamp_checked) { frame_loop(sync::cross_gpu_mode::peer_write, 1000); }
TEST_F(cross_gpu_gpu_test, copy_engine_1000_frames_every_stamp_checked) { frame_loop(sync::cross_gpu_mode::copy_engine, 1000); }
TEST_F(cross_gpu_gpu_test, staged_1000_frames_every_stamp_checked) { frame_loop(sync::cross_gpu_mode::staged, 1000); }

}  // namespace
}  // namespace membridge::testing
