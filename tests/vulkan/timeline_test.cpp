// vulkan tier: timeline semaphores and the frame protocol with a host producer and a Vulkan consumer.
#include "vulkan_test.hpp"

#include <membridge/sync/frame_timeline.hpp>
#include <membridge/vulkan/timeline_semaphore.hpp>

#include <chrono>
#include <thread>

namespace membridge::testing {
namespace {

using namespace std::chrono_literals;

TEST_F(vulkan_test, timeline_semaphore_counts_and_times_out) {
  auto sem = vulkan::timeline_semaphore::create(vk.context, 5, false);
  ASSERT_TRUE(sem) << sem.error().message();
  EXPECT_EQ(sem->value().value_or(0), 5U);
  ASSERT_TRUE(sem->signal(9));
  EXPECT_EQ(sem->value().value_or(0), 9U);
  EXPECT_TRUE(sem->wait(9, 1ms));
  auto late = sem->wait(10, 1ms);
  ASSERT_FALSE(late);
  EXPECT_EQ(late.error().code(), errc::timeout);
  std::thread signaller([&] {
    std::this_thread::sleep_for(20ms);
    static_cast<void>(sem->signal(12));
  });
  EXPECT_TRUE(sem->wait(12, 5s));
  signaller.join();
}

TEST_F(vulkan_test, exporting_needs_semaphore_fd_support) {
  auto sem = vulkan::timeline_semaphore::create(vk.context, 0, true);
  if (vk.context.capabilities().external_semaphore_fd) {
    ASSERT_TRUE(sem) << sem.error().message();
    auto fd = sem->export_fd();
    ASSERT_TRUE(fd) << fd.error().message();
    auto imported = vulkan::timeline_semaphore::import(vk.context, *fd);
    ASSERT_TRUE(imported) << imported.error().message();
    ASSERT_TRUE(sem->signal(4));
    EXPECT_EQ(imported->value().value_or(0), 4U);
  } else {
    ASSERT_FALSE(sem);
    EXPECT_EQ(sem.error().code(), errc::unsupported);
    EXPECT_NE(sem.error().message().find(VK_KHR_EXTERNAL_SEMAPHORE_FD_EXTENSION_NAME), std::string::npos);
  }
  auto plain = vulkan::timeline_semaphore::create(vk.context, 0, false);
  ASSERT_TRUE(plain);
  auto fd = plain->export_fd();
  ASSERT_FALSE(fd);
  EXPECT_EQ(fd.error().code(), errc::unsupported);
}

// The host writes frame n into slot n % slots of a host-visible buffer; Vulkan copies the slot into
// row n of a results buffer. Every row must hold its own frame number: the timeline orders them.
TEST_F(vulkan_test, frame_timeline_orders_a_host_producer_and_a_vulkan_consumer) {
  constexpr std::uint32_t slots = 3;
  constexpr std::uint64_t frames = 200;
  constexpr std::size_t words_per_slot = 1024;
  auto timeline = sync::frame_timeline::create_host_producer(vk.context, {.slots = slots});
  ASSERT_TRUE(timeline) << timeline.error().message();
  auto ring = staging_buffer::create(vk.context, slots * words_per_slot * 4);
  auto results = staging_buffer::create(vk.context, frames * words_per_slot * 4);
  ASSERT_TRUE(ring && results);

  const auto& fn = vk.context.functions();
  const VkDevice dev = vk.context.device();
  auto commands = record_command_buffers(vk.context, frames, [&](VkCommandBuffer cb, std::uint64_t n) {
    const VkBufferCopy region{timeline->slot(n) * words_per_slot * 4, n * words_per_slot * 4, words_per_slot * 4};
    fn.vkCmdCopyBuffer(cb, ring->get(), results->get(), 1, &region);
    full_barrier(vk.context, cb);
  });
  ASSERT_TRUE(commands) << commands.error().message();
  const VkCommandPool pool = commands->pool;
  const std::vector<VkCommandBuffer>& cbs = commands->buffers;

  // The consumer submits every frame up front: each submit waits on the GPU for its frame.
  for (std::uint64_t n = 0; n < frames; ++n)
    ASSERT_TRUE(timeline->submit(vk.context.graphics_queue().queue, {&cbs[n], 1}, n, VK_PIPELINE_STAGE_TRANSFER_BIT));
  for (std::uint64_t n = 0; n < frames; ++n) {
    ASSERT_TRUE(timeline->host_acquire(n, 10s)) << "frame " << n;
    std::uint32_t* slot = ring->words() + timeline->slot(n) * words_per_slot;
    for (std::size_t i = 0; i < words_per_slot; ++i) slot[i] = static_cast<std::uint32_t>(n);
    ASSERT_TRUE(timeline->host_release(n));
  }
  ASSERT_TRUE(timeline->wait_consumed(frames - 1, 10s));
  std::size_t wrong = 0;
  for (std::uint64_t n = 0; n < frames; ++n)
    for (std::size_t i = 0; i < words_per_slot; ++i)
      if (results->words()[n * words_per_slot + i] != n) ++wrong;
  EXPECT_EQ(wrong, 0U);
  fn.vkDestroyCommandPool(dev, pool, nullptr);
}

TEST_F(vulkan_test, frame_timeline_refuses_zero_slots) {
  auto timeline = sync::frame_timeline::create_host_producer(vk.context, {.slots = 0});
  ASSERT_FALSE(timeline);
  EXPECT_EQ(timeline.error().code(), errc::invalid_argument);
}

}  // namespace
}  // namespace membridge::testing
