// vulkan tier: the behaviour docs/integration.md describes for an adopted device (sections 3, 4, 6):
// adopt_info::features default to off and membridge believes them; only the graphics queue is
// required; without a sparse queue a view falls back to one VkBuffer per chunk.
#include "vulkan_test.hpp"

#include <membridge/sync/frame_timeline.hpp>
#include <membridge/vulkan/chunked_buffer.hpp>

#include <chrono>
#include <string>

namespace membridge::testing {
namespace {

using vulkan::device_context;

/// The handles of the fixture's device as an engine would pass them: only the external-memory extension
/// (lavapipe has no semaphore fds) and, unless told, no features.
vulkan::adopt_info engine_handles(const device_context& c) {
  vulkan::adopt_info info = handles_of_context(c);
  info.enabled_extensions = {VK_KHR_EXTERNAL_MEMORY_FD_EXTENSION_NAME};
  info.allow_missing_extensions = true;  // VK_KHR_external_semaphore_fd is not listed
  info.graphics = c.graphics_queue();
  return info;
}

TEST_F(vulkan_test, adopt_info_features_default_to_off_and_membridge_believes_them) {
  ASSERT_TRUE(vk.context.capabilities().timeline_semaphore) << "the fixture's device has timeline semaphores";
  vulkan::adopt_info info = engine_handles(vk.context);
  EXPECT_FALSE(info.features.timeline_semaphore);
  EXPECT_FALSE(info.features.sparse_binding);
  EXPECT_FALSE(info.features.sparse_residency_buffer);
  {
    auto adopted = device_context::adopt(info);
    ASSERT_TRUE(adopted) << adopted.error().message();
    EXPECT_FALSE(adopted->capabilities().timeline_semaphore);
    auto timeline = sync::frame_timeline::create_host_producer(*adopted, {.slots = 2});
    ASSERT_FALSE(timeline);
    EXPECT_EQ(timeline.error().code(), errc::unsupported);
    EXPECT_NE(timeline.error().message().find("timeline semaphores are not enabled"), std::string::npos)
        << timeline.error().message();
  }
  // Said: the same device works, and the protocol's host side moves the counters.
  info.features.timeline_semaphore = true;
  auto adopted = device_context::adopt(info);
  ASSERT_TRUE(adopted) << adopted.error().message();
  EXPECT_TRUE(adopted->capabilities().timeline_semaphore);
  auto timeline = sync::frame_timeline::create_host_producer(*adopted, {.slots = 2});
  ASSERT_TRUE(timeline) << timeline.error().message();
  ASSERT_TRUE(timeline->host_release(0));
  ASSERT_TRUE(timeline->wait_produced(0, std::chrono::seconds(1)));
  EXPECT_EQ(*timeline->produced().value(), sync::frame_timeline::produced_value(0));
  ASSERT_TRUE(timeline->consumed().signal(sync::frame_timeline::consumed_value(0)));
  ASSERT_TRUE(timeline->wait_consumed(0, std::chrono::seconds(1)));
  EXPECT_EQ(*timeline->consumed().value(), 1U);
}

TEST_F(vulkan_test, adopt_needs_only_the_graphics_queue_and_defaults_the_others) {
  auto adopted = device_context::adopt(engine_handles(vk.context));
  ASSERT_TRUE(adopted) << adopted.error().message();
  EXPECT_EQ(adopted->graphics_queue().queue, vk.context.graphics_queue().queue);
  // No transfer queue given: transfer_queue() is the graphics queue.
  EXPECT_EQ(adopted->transfer_queue().queue, adopted->graphics_queue().queue);
  EXPECT_EQ(adopted->transfer_queue().family, adopted->graphics_queue().family);
  // No sparse queue given: none, and no sparse mode.
  EXPECT_FALSE(adopted->sparse_queue().valid());
  EXPECT_FALSE(adopted->capabilities().sparse_binding);
}

TEST_F(vulkan_test, without_sparse_binding_a_view_falls_back_to_one_buffer_per_chunk) {
  vulkan::adopt_info info = engine_handles(vk.context);
  info.sparse = vk.context.graphics_queue();  // a queue alone is not enough: the features are off
  auto adopted = device_context::adopt(info);
  ASSERT_TRUE(adopted) << adopted.error().message();
  EXPECT_FALSE(adopted->capabilities().sparse_binding);
  auto sparse = vulkan::chunked_buffer::create(*adopted, {.reserved_size = 8U << 20, .mode = vulkan::growth_mode::sparse});
  ASSERT_FALSE(sparse);
  EXPECT_EQ(sparse.error().code(), errc::unsupported);
  EXPECT_NE(sparse.error().message().find("sparseBinding"), std::string::npos) << sparse.error().message();

  auto view = vulkan::chunked_buffer::create(*adopted, {.reserved_size = 8U << 20});
  ASSERT_TRUE(view) << view.error().message();
  EXPECT_FALSE(view->is_sparse());
  // Two chunks another device exported: two segments, each its own VkBuffer, at the chunks' offsets.
  auto first = exported_memory::allocate(vk.context, 1U << 20);
  auto second = exported_memory::allocate(vk.context, 1U << 20);
  ASSERT_TRUE(first && second);
  first->words()[0] = 0x11111111U;
  second->words()[0] = 0x22222222U;
  auto fd1 = first->export_fd();
  auto fd2 = second->export_fd();
  ASSERT_TRUE(fd1 && fd2);
  ASSERT_TRUE(view->append(*fd1, 0, 1U << 20));
  EXPECT_NE(view->buffer(), VK_NULL_HANDLE) << "one chunk: buffer() is that chunk's buffer";
  ASSERT_TRUE(view->append(*fd2, 1U << 20, 1U << 20));
  EXPECT_EQ(view->buffer(), VK_NULL_HANDLE) << "several chunks: bind segments()";
  ASSERT_EQ(view->segments().size(), 2U);
  EXPECT_EQ(view->segments()[0].offset, 0U);
  EXPECT_EQ(view->segments()[1].offset, 1U << 20);
  EXPECT_EQ(view->segments()[1].size, 1U << 20);
  EXPECT_NE(view->segments()[0].buffer, view->segments()[1].buffer);
  EXPECT_EQ(view->size(), 2U << 20);
  // Each segment's buffer holds its chunk's bytes: copy a word of each into a staging buffer.
  auto staging = staging_buffer::create(*adopted, 8);
  ASSERT_TRUE(staging) << staging.error().message();
  ASSERT_TRUE(run_commands(*adopted, [&](VkCommandBuffer cb) {
    for (std::size_t i = 0; i < 2; ++i) {
      const VkBufferCopy copy{view->segments()[i].buffer_offset, 4 * i, 4};
      adopted->functions().vkCmdCopyBuffer(cb, view->segments()[i].buffer, staging->get(), 1, &copy);
    }
    full_barrier(*adopted, cb);
  }));
  EXPECT_EQ(staging->words()[0], 0x11111111U);
  EXPECT_EQ(staging->words()[1], 0x22222222U);
}

}  // namespace
}  // namespace membridge::testing
