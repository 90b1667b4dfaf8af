// vulkan tier: frame_timeline with a semaphore per consumer (consumer_slots) and a host producer:
// the producer waits for every current consumer, a removed one no longer holds it up and is raised
// and then destroyed once `produced` passed its last acquire, a late joiner starts at its join
// frame; drain() lets a submit waiting for a frame that is never produced complete.
#include "vulkan_test.hpp"

#include <membridge/sync/frame_timeline.hpp>
#include <membridge/vulkan/timeline_semaphore.hpp>

#include <chrono>
#include <vector>

namespace membridge::testing {
namespace {

using namespace std::chrono_literals;
using sync::frame_timeline;

std::uint64_t value_of(const vulkan::timeline_semaphore* s) { return s != nullptr ? s->value().value_or(~0ULL) : ~0ULL; }

TEST_F(vulkan_test, frame_timeline_waits_for_every_consumer_and_a_removed_one_is_raised_then_destroyed) {
  auto timeline = frame_timeline::create_host_producer(vk.context, {.slots = 1, .consumer_slots = true});
  ASSERT_TRUE(timeline) << timeline.error().message();
  EXPECT_TRUE(timeline->has_consumer_slots());
  EXPECT_FALSE(timeline->consumed().valid()) << "with consumer_slots there is no shared 'consumed'";

  // No consumer: the producer runs free.
  for (std::uint64_t n = 0; n < 3; ++n) {
    ASSERT_TRUE(timeline->host_acquire(n, 0ns)) << "frame " << n << " waited although nobody consumes";
    ASSERT_TRUE(timeline->host_release(n));
  }
  ASSERT_TRUE(timeline->add_consumer(1, 2));
  ASSERT_TRUE(timeline->add_consumer(2, 2));
  EXPECT_EQ(timeline->consumer_count(), 2U);
  const vulkan::timeline_semaphore* one = timeline->consumer(1);
  const vulkan::timeline_semaphore* two = timeline->consumer(2);
  ASSERT_TRUE(one != nullptr && two != nullptr);
  EXPECT_NE(one->get(), two->get());
  EXPECT_EQ(value_of(one), frame_timeline::consumed_value(2)) << "a consumer starts at its join frame";
  EXPECT_EQ(value_of(two), frame_timeline::consumed_value(2));

  // Frame 3 reuses frame 2's slot: both joined after frame 2, so it is free.
  ASSERT_TRUE(timeline->host_acquire(3, 1s));
  ASSERT_TRUE(timeline->host_release(3));
  // Frame 4 needs both consumers to have drawn frame 3.
  auto blocked = timeline->host_acquire(4, 5ms);
  ASSERT_FALSE(blocked);
  EXPECT_EQ(blocked.error().code(), errc::timeout);
  ASSERT_TRUE(one->signal(frame_timeline::consumed_value(3)));
  blocked = timeline->host_acquire(4, 5ms);
  ASSERT_FALSE(blocked) << "the producer went on while consumer 2 still reads frame 3";
  EXPECT_EQ(blocked.error().code(), errc::timeout);
  ASSERT_TRUE(two->signal(frame_timeline::consumed_value(3)));
  ASSERT_TRUE(timeline->host_acquire(4, 1s));
  ASSERT_TRUE(timeline->host_release(4));

  // Consumer 2 stops at frame 3 and leaves: the producer no longer waits for it; its semaphore is
  // raised past every wait that included it and is kept until `produced` passed the last one.
  ASSERT_TRUE(one->signal(frame_timeline::consumed_value(4)));
  ASSERT_FALSE(timeline->host_acquire(5, 5ms));  // includes consumer 2 (last_ref = 5)
  ASSERT_TRUE(timeline->remove_consumer(2, 4));
  EXPECT_EQ(timeline->consumer_count(), 1U);
  EXPECT_EQ(timeline->consumer(2), nullptr);
  EXPECT_EQ(timeline->retired_count(), 1U);
  EXPECT_EQ(value_of(two), frame_timeline::consumed_value(4)) << "the retired semaphore was not raised";
  ASSERT_TRUE(timeline->host_acquire(5, 1s)) << "the producer still waits for a consumer that left";
  EXPECT_EQ(timeline->retired_count(), 1U) << "destroyed before `produced` passed its last acquire";
  ASSERT_TRUE(timeline->host_release(5));
  EXPECT_EQ(timeline->retired_count(), 0U) << "not destroyed after `produced` passed its last acquire";

  // A late joiner starts at its join frame; joining again later (before it signals) raises it.
  ASSERT_TRUE(timeline->add_consumer(3, 5));
  EXPECT_EQ(value_of(timeline->consumer(3)), frame_timeline::consumed_value(5));
  ASSERT_TRUE(timeline->add_consumer(3, 6));
  EXPECT_EQ(value_of(timeline->consumer(3)), frame_timeline::consumed_value(6));
  EXPECT_EQ(timeline->consumer_count(), 2U);
  ASSERT_FALSE(timeline->host_acquire(6, 5ms)) << "consumer 1 has not drawn frame 5";
  ASSERT_TRUE(one->signal(frame_timeline::consumed_value(5)));
  ASSERT_TRUE(timeline->host_acquire(6, 1s));
  ASSERT_TRUE(timeline->host_release(6));
  ASSERT_TRUE(timeline->wait_consumed(5, 1s));
  ASSERT_FALSE(timeline->wait_consumed(6, 5ms));

  // Every consumer gone: free again.
  ASSERT_TRUE(timeline->remove_consumer(1, 6));
  ASSERT_TRUE(timeline->remove_consumer(3, 6));
  ASSERT_TRUE(timeline->remove_consumer(99, 6)) << "an unknown id is ignored";
  EXPECT_EQ(timeline->consumer_count(), 0U);
  ASSERT_TRUE(timeline->host_acquire(9, 0ns));
  EXPECT_EQ(vk.context.validation_message_count(), 0U);
}

TEST_F(vulkan_test, frame_timeline_consumer_slots_are_refused_where_they_do_not_apply) {
  auto single = frame_timeline::create_host_producer(vk.context, {.slots = 2});
  ASSERT_TRUE(single) << single.error().message();
  auto added = single->add_consumer(1, std::nullopt);
  ASSERT_FALSE(added);
  EXPECT_EQ(added.error().code(), errc::invalid_argument);

  auto host = frame_timeline::create_host_producer(vk.context, {.slots = 2, .consumer_slots = true});
  ASSERT_TRUE(host) << host.error().message();
  ASSERT_TRUE(host->add_consumer(7, std::nullopt));
  EXPECT_EQ(value_of(host->consumer(7)), 0U);
  auto fd = host->export_consumer(7);
  ASSERT_FALSE(fd) << "a host producer's consumer semaphores are not exportable";
  EXPECT_EQ(fd.error().code(), errc::unsupported);
  auto unknown = host->export_consumer(8);
  ASSERT_FALSE(unknown);
  EXPECT_EQ(unknown.error().code(), errc::invalid_argument);
  auto submitted = host->submit(vk.context.graphics_queue().queue, {}, 0, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT);
  ASSERT_FALSE(submitted) << "there is no shared 'consumed' to signal";
  EXPECT_EQ(submitted.error().code(), errc::invalid_argument);
}

// A producer that stops after frame 1 while the consumer already submitted frames 0..3: drain()
// releases the waits for frames 2 and 3 and returns once all four submits ran.
TEST_F(vulkan_test, frame_timeline_drain_completes_submits_waiting_for_frames_never_produced) {
  constexpr std::uint64_t submitted = 4;
  auto timeline = frame_timeline::create_host_producer(vk.context, {.slots = 4});
  ASSERT_TRUE(timeline) << timeline.error().message();
  const auto& fn = vk.context.functions();
  const VkDevice dev = vk.context.device();
  const VkQueue queue = vk.context.graphics_queue().queue;
  auto commands = record_command_buffers(vk.context, submitted,
                                         [&](VkCommandBuffer cb, std::uint64_t) { full_barrier(vk.context, cb); });
  ASSERT_TRUE(commands) << commands.error().message();
  const VkCommandPool pool = commands->pool;
  const std::vector<VkCommandBuffer>& cbs = commands->buffers;
  for (std::uint64_t n = 0; n < submitted; ++n)
    ASSERT_TRUE(timeline->submit(queue, {&cbs[n], 1}, n, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT));
  for (std::uint64_t n = 0; n < 2; ++n) {
    ASSERT_TRUE(timeline->host_acquire(n, 1s));
    ASSERT_TRUE(timeline->host_release(n));
  }
  ASSERT_TRUE(timeline->wait_consumed(1, 5s));
  EXPECT_FALSE(timeline->wait_consumed(2, 5ms)) << "frame 2 was never produced";

  ASSERT_TRUE(timeline->drain(5s));
  EXPECT_EQ(timeline->produced().value().value_or(0), frame_timeline::produced_value(submitted - 1));
  EXPECT_EQ(timeline->consumed().value().value_or(0), frame_timeline::consumed_value(submitted - 1))
      << "drain() returned before every submit ran";
  ASSERT_EQ(fn.vkQueueWaitIdle(queue), VK_SUCCESS);
  ASSERT_TRUE(timeline->drain(0ns)) << "a second drain has nothing to do";
  fn.vkDestroyCommandPool(dev, pool, nullptr);
  EXPECT_EQ(vk.context.validation_message_count(), 0U);
}

}  // namespace
}  // namespace membridge::testing
