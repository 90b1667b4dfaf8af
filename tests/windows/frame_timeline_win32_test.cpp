// sync::frame_timeline on Windows (under Wine): a CUDA producer (the scripted CUDA driver) and a
// Vulkan consumer (the scripted Vulkan driver of vulkan_fake_driver.cpp) run the frame protocol of
// tests/vulkan/timeline_test.cpp on NT handles. The timeline values live in the semaphores' kernel
// objects (fake_timeline_payload.hpp), so the CUDA import, the exporting Vulkan semaphore and a
// consumer's import of the same handle see one counter. The consumer receives the semaphores from
// an ipc::publisher over the named pipe (an ipc::subscriber in this process: DuplicateHandle) and
// imports them with frame_timeline::import. Checked: produced_value / consumed_value on both sides,
// frame f in slot f % S with its data, frames in order, the producer never more than S frames ahead
// (the fake CUDA stream's wait holds it), and the failure paths leave no handle (the handle-leak
// listener) and no driver object behind. Then the same with a sync::frame_publisher: a consumer
// subscriber gets a `consumed` semaphore of its own, frames arrive as announcements, and the
// producer waits for it until it leaves.
#include "open_device_test.hpp"
#include "vulkan_fake_driver.hpp"

#include <membridge/ipc/publisher.hpp>
#include <membridge/ipc/subscriber.hpp>
#include <membridge/sync/frame_publisher.hpp>
#include <membridge/sync/frame_timeline.hpp>
#include <membridge/vulkan/timeline_semaphore.hpp>

#include <gtest/gtest.h>

#include <windows.h>

#include <array>
#include <atomic>
#include <functional>
#include <chrono>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

namespace {

using namespace std::chrono_literals;
using membridge::errc;
using membridge::os::unique_handle;
using membridge::test::fake_vulkan;
namespace ipc = membridge::ipc;
namespace sync = membridge::sync;
namespace vulkan = membridge::vulkan;

constexpr std::uint32_t slots = 3;
constexpr std::uint64_t frames = 24;

bool is_open(HANDLE h) {
  DWORD flags = 0;
  return ::GetHandleInformation(h, &flags) != 0;
}

class frame_timeline_win32_test : public membridge::testing::open_device_test {
 protected:
  void SetUp() override {
    open_device_test::SetUp();
    context_ = membridge::test::adopt_fake_win32_device();
    ASSERT_TRUE(context_.valid());
  }
  void TearDown() override {
    context_ = vulkan::device_context();
    EXPECT_EQ(fake_vulkan().live_semaphores, 0);
    membridge::test::expect_fake_vulkan_clean();
    open_device_test::TearDown();
  }
  vulkan::device_context context_;
  VkQueue queue_ = membridge::test::fake_adopt_info({}).graphics.queue;
};

// What the test's "GPU memory" holds: slot s has the number of the frame last written into it.
struct ring {
  std::array<std::atomic<std::uint64_t>, slots> slot{};
};

TEST_F(frame_timeline_win32_test, a_cuda_producer_and_a_vulkan_consumer_across_the_named_pipe_run_the_protocol) {
  auto producer = sync::frame_timeline::create(context_, dev_, {.slots = slots});
  ASSERT_TRUE(producer) << producer.error().message();
  ASSERT_TRUE(producer->has_cuda());

  // The semaphores go to the consumer over the pipe, as to another process.
  const std::string name = "frame-timeline-" + std::to_string(::GetCurrentProcessId());
  auto pub = ipc::publisher::start({.listen = {.name = name}, .publisher_name = "frames"});
  ASSERT_TRUE(pub) << pub.error().message();
  {
    auto fds = producer->export_fds();
    ASSERT_TRUE(fds) << fds.error().message();
    const auto uuid = dev_.uuid();
    ASSERT_TRUE(pub->publish_semaphore({"frames.produced", uuid, ipc::handle_kind::opaque_win32, slots},
                                       std::move(fds->produced)));
    ASSERT_TRUE(pub->publish_semaphore({"frames.consumed", uuid, ipc::handle_kind::opaque_win32, slots},
                                       std::move(fds->consumed)));
  }
  auto sub = ipc::subscriber::connect({.name = name, .client_name = "frame-consumer", .timeout = 10s});
  ASSERT_TRUE(sub) << sub.error().message();
  const ipc::received_semaphore* produced = sub->semaphore("frames.produced");
  const ipc::received_semaphore* consumed = sub->semaphore("frames.consumed");
  ASSERT_NE(produced, nullptr);
  ASSERT_NE(consumed, nullptr);
  EXPECT_EQ(produced->description.handles, ipc::handle_kind::opaque_win32);
  ASSERT_EQ(produced->description.parameter, slots);
  auto consumer = sync::frame_timeline::import(context_, produced->fd.borrow(), consumed->fd.borrow(),
                                               {.slots = static_cast<std::uint32_t>(produced->description.parameter)});
  ASSERT_TRUE(consumer) << consumer.error().message();
  EXPECT_FALSE(consumer->has_cuda());

  ring memory;
  std::atomic<std::uint64_t> drawn{0};  // frames the consumer has finished reading
  std::vector<std::uint64_t> seen;      // the consumer's frames, in the order drawn
  std::vector<std::uint64_t> lead;  // the producer's lead over the consumer at each acquire
  std::string producer_error;
  std::string consumer_error;

  std::thread consumer_thread([&] {
    for (std::uint64_t f = 0; f < frames; ++f) {
      if (auto w = consumer->wait_produced(f, 10s); !w) {
        consumer_error = "frame " + std::to_string(f) + ": " + w.error().message();
        return;
      }
      seen.push_back(memory.slot[consumer->slot(f)].load());
      std::this_thread::sleep_for(1ms);  // a slow consumer: the producer must wait for it
      drawn.store(f + 1);
      // The submit waits for produced >= f + 1 (reached) and signals consumed = f + 1.
      if (auto s = consumer->submit(queue_, {}, f, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT); !s) {
        consumer_error = "submit of frame " + std::to_string(f) + ": " + s.error().message();
        return;
      }
    }
  });
  for (std::uint64_t f = 0; f < frames; ++f) {
    // The fake stream runs the wait when it is enqueued: it returns once the slot is free.
    if (auto a = producer->cuda_acquire(nullptr, f); !a) {
      producer_error = "acquire of frame " + std::to_string(f) + ": " + a.error().message();
      break;
    }
    lead.push_back(f - drawn.load());
    memory.slot[producer->slot(f)].store(f);  // "the kernels" write frame f into its slot
    if (auto r = producer->cuda_release(nullptr, f); !r) {
      producer_error = "release of frame " + std::to_string(f) + ": " + r.error().message();
      break;
    }
  }
  consumer_thread.join();
  ASSERT_EQ(producer_error, "");
  ASSERT_EQ(consumer_error, "");

  // Every frame read from its slot with its own data, in order.
  std::vector<std::uint64_t> in_order(frames);
  for (std::uint64_t f = 0; f < frames; ++f) in_order[f] = f;
  EXPECT_EQ(seen, in_order);
  // Never more than `slots` frames in flight: frame f was written only after frame f - slots was drawn.
  for (std::uint64_t f = 0; f < frames; ++f) EXPECT_LT(lead[f], slots) << "frame " << f;
  // The producer's stream waited for consumed_value(f - slots) before every frame f >= slots.
  std::vector<std::uint64_t> waits;
  for (std::uint64_t f = slots; f < frames; ++f) waits.push_back(sync::frame_timeline::consumed_value(f - slots));
  EXPECT_EQ(fake_.waits_, waits);
  // One submit per frame: waiting for produced_value(f), signalling consumed_value(f).
  ASSERT_EQ(fake_vulkan().submits.size(), frames);
  for (std::uint64_t f = 0; f < frames; ++f) {
    EXPECT_EQ(fake_vulkan().submits[f].wait_value, sync::frame_timeline::produced_value(f));
    EXPECT_EQ(fake_vulkan().submits[f].signal_value, sync::frame_timeline::consumed_value(f));
  }
  // One counter per semaphore, whichever side reads it.
  ASSERT_TRUE(producer->wait_consumed(frames - 1, 1s));
  for (const sync::frame_timeline* t : {&*producer, &*consumer}) {
    const auto p = t->produced().value();
    const auto c = t->consumed().value();
    ASSERT_TRUE(p) << p.error().message();
    ASSERT_TRUE(c) << c.error().message();
    EXPECT_EQ(*p, sync::frame_timeline::produced_value(frames - 1));
    EXPECT_EQ(*c, sync::frame_timeline::consumed_value(frames - 1));
  }
  ASSERT_TRUE(producer->drain(1s));
}

// True once `done` holds, polled for up to `limit`.
bool eventually(const std::function<bool()>& done, std::chrono::milliseconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(1ms);
  }
  return true;
}

TEST_F(frame_timeline_win32_test, a_frame_publisher_paces_its_producer_by_a_consumer_subscriber_over_the_pipe) {
  const std::string name = "frame-publisher-" + std::to_string(::GetCurrentProcessId());
  auto publisher = sync::frame_publisher::create(
      context_, dev_, {.ipc = {.listen = {.name = name}, .publisher_name = "frames"}, .timeline = {.slots = slots}});
  ASSERT_TRUE(publisher) << publisher.error().message();
  const sync::frame_timeline& producer = publisher->timeline();
  ASSERT_TRUE(producer.has_consumer_slots());

  auto sub = ipc::subscriber::connect(
      {.name = name, .role = ipc::subscriber_role::consumer, .client_name = "frame-consumer", .timeout = 10s});
  ASSERT_TRUE(sub) << sub.error().message();
  ASSERT_EQ(sub->role(), ipc::subscriber_role::consumer);
  EXPECT_FALSE(sub->frame_at_join().has_value()) << "no frame before the join";
  ASSERT_EQ(producer.consumer_count(), 1U);
  const ipc::received_semaphore* produced = sub->semaphore("frames.produced");
  const ipc::received_semaphore* consumed = sub->semaphore("frames.consumed");
  ASSERT_NE(produced, nullptr);
  ASSERT_NE(consumed, nullptr) << "the consumer's own semaphore";
  ASSERT_EQ(consumed->description.parameter, slots);
  auto consumer = sync::frame_timeline::import(context_, produced->fd.borrow(), consumed->fd.borrow(), {.slots = slots});
  ASSERT_TRUE(consumer) << consumer.error().message();

  ring memory;
  std::atomic<std::uint64_t> drawn{0};
  std::vector<std::uint64_t> announced;  // frame numbers in the order the pipe brought them
  std::vector<std::uint64_t> seen;       // the data the consumer read for them
  std::vector<std::uint64_t> lead;
  std::string consumer_error;
  std::thread consumer_thread([&] {
    while (announced.size() < frames) {
      auto event = sub->next_event(10s);
      if (!event || event->what != ipc::subscriber_event::kind::frame) {
        consumer_error = event ? "an event other than a frame" : event.error().message();
        return;
      }
      const std::uint64_t f = event->frame;
      announced.push_back(f);
      seen.push_back(memory.slot[consumer->slot(f)].load());
      std::this_thread::sleep_for(1ms);
      drawn.store(f + 1);
      if (auto s = consumer->submit(queue_, {}, f, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT); !s) {
        consumer_error = "submit of frame " + std::to_string(f) + ": " + s.error().message();
        return;
      }
    }
  });
  for (std::uint64_t f = 0; f < frames; ++f) {
    auto acquired = producer.cuda_acquire(nullptr, f);
    if (!acquired) ADD_FAILURE() << "acquire of frame " << f << ": " << acquired.error().message();
    if (!acquired) break;
    lead.push_back(f - drawn.load());
    memory.slot[producer.slot(f)].store(f);
    auto released = producer.cuda_release(nullptr, f);
    if (released) released = publisher->publish_frame(f);
    if (!released) ADD_FAILURE() << "frame " << f << ": " << released.error().message();
    if (!released) break;
  }
  consumer_thread.join();
  ASSERT_EQ(consumer_error, "");

  std::vector<std::uint64_t> in_order(frames);
  for (std::uint64_t f = 0; f < frames; ++f) in_order[f] = f;
  EXPECT_EQ(announced, in_order);
  EXPECT_EQ(seen, in_order) << "frame f's data in slot f % slots";
  ASSERT_EQ(lead.size(), frames);
  for (std::uint64_t f = 0; f < frames; ++f) EXPECT_LT(lead[f], slots) << "frame " << f;
  std::vector<std::uint64_t> waits;
  for (std::uint64_t f = slots; f < frames; ++f) waits.push_back(sync::frame_timeline::consumed_value(f - slots));
  EXPECT_EQ(fake_.waits_, waits) << "one wait per frame on the one consumer's semaphore";
  ASSERT_TRUE(producer.wait_consumed(frames - 1, 1s));
  const auto value = producer.produced().value();
  ASSERT_TRUE(value) << value.error().message();
  EXPECT_EQ(*value, sync::frame_timeline::produced_value(frames - 1));

  // The consumer leaves: the producer no longer waits for it and its semaphore goes (the publisher's
  // thread removes it, the tender destroys it: the stream passed every wait that used it).
  *consumer = sync::frame_timeline();
  *sub = ipc::subscriber();
  ASSERT_TRUE(eventually([&] { return producer.consumer_count() == 0 && producer.retired_count() == 0; }, 5000ms));
  const std::size_t waits_before = fake_.waits_.size();
  for (std::uint64_t f = frames; f < frames + 2 * slots; ++f) {
    ASSERT_TRUE(producer.cuda_acquire(nullptr, f));
    ASSERT_TRUE(producer.cuda_release(nullptr, f));
  }
  EXPECT_EQ(fake_.waits_.size(), waits_before) << "without consumers the producer runs free";
}

TEST_F(frame_timeline_win32_test, a_consumer_whose_semaphore_import_fails_is_refused_and_leaves_nothing) {
  const std::string name = "frame-refused-" + std::to_string(::GetCurrentProcessId());
  auto publisher = sync::frame_publisher::create(
      context_, dev_, {.ipc = {.listen = {.name = name}, .publisher_name = "frames"}, .timeline = {.slots = 2}});
  ASSERT_TRUE(publisher) << publisher.error().message();
  const int semaphores_before = fake_vulkan().live_semaphores;
  // The joiner's `consumed`: made in Vulkan and exported, then its CUDA import fails.
  fake_.fail_function("cuImportExternalSemaphore", CUDA_ERROR_OUT_OF_MEMORY);
  const ipc::subscriber_options joiner{
      .name = name, .role = ipc::subscriber_role::consumer, .client_name = "frame-consumer", .timeout = 10s};
  const auto refused = ipc::subscriber::connect(joiner);
  ASSERT_FALSE(refused) << "a consumer without a semaphore";
  EXPECT_EQ(publisher->timeline().consumer_count(), 0U);
  EXPECT_EQ(fake_vulkan().live_semaphores, semaphores_before) << "the joiner's semaphore is destroyed";
  // The next joiner gets its semaphore, and it is the one the producer waits for.
  auto sub = ipc::subscriber::connect(joiner);
  ASSERT_TRUE(sub) << sub.error().message();
  ASSERT_EQ(sub->role(), ipc::subscriber_role::consumer);
  EXPECT_EQ(publisher->timeline().consumer_count(), 1U);
  const ipc::received_semaphore* consumed = sub->semaphore("frames.consumed");
  ASSERT_NE(consumed, nullptr);
  auto own = vulkan::timeline_semaphore::import(context_, consumed->fd.borrow());
  ASSERT_TRUE(own) << own.error().message();
  ASSERT_TRUE(own->signal(sync::frame_timeline::consumed_value(0)));
  EXPECT_TRUE(publisher->timeline().wait_consumed(0, 100ms)) << "the consumer's signal reaches the producer";
  EXPECT_FALSE(publisher->timeline().wait_consumed(1, 20ms));
}

TEST_F(frame_timeline_win32_test, a_host_signal_on_one_side_is_the_value_cuda_and_the_importer_see) {
  auto producer = sync::frame_timeline::create(context_, dev_, {.slots = 2});
  ASSERT_TRUE(producer) << producer.error().message();
  auto fds = producer->export_fds();
  ASSERT_TRUE(fds) << fds.error().message();
  auto observer = sync::frame_timeline::import(context_, fds->produced.borrow(), {}, {.slots = 2}, &dev_);
  ASSERT_TRUE(observer) << observer.error().message();
  EXPECT_TRUE(observer->has_cuda());
  EXPECT_FALSE(observer->consumed().valid()) << "an observer signals nothing";
  EXPECT_FALSE(observer->submit(queue_, {}, 0, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT)) << "an observer cannot submit";
  // CUDA signals frame 4 through its import; the observer's Vulkan import reads it.
  ASSERT_TRUE(producer->cuda_release(nullptr, 4));
  ASSERT_TRUE(observer->wait_produced(4, 100ms));
  EXPECT_FALSE(observer->wait_produced(5, 20ms)) << "frame 5 was not produced";
  // A host signal through the observer's import reaches the producer's semaphore.
  ASSERT_TRUE(observer->host_release(6));
  const auto value = producer->produced().value();
  ASSERT_TRUE(value) << value.error().message();
  EXPECT_EQ(*value, sync::frame_timeline::produced_value(6));
}

TEST_F(frame_timeline_win32_test, importing_handles_that_name_no_semaphore_fails_and_leaves_nothing) {
  unique_handle event(::CreateEventW(nullptr, TRUE, FALSE, nullptr));
  ASSERT_TRUE(event.valid());
  const auto imported = sync::frame_timeline::import(context_, event.borrow(), event.borrow(), {.slots = 2}, &dev_);
  ASSERT_FALSE(imported);
  EXPECT_NE(imported.error().message().find("produced"), std::string::npos) << imported.error().message();
  EXPECT_TRUE(is_open(event.get())) << "the caller's handle is left alone";
  EXPECT_EQ(fake_vulkan().live_semaphores, 0);
  // The consumed handle wrong only: the produced import is undone.
  auto producer = sync::frame_timeline::create(context_, dev_, {.slots = 2});
  ASSERT_TRUE(producer) << producer.error().message();
  auto fds = producer->export_fds();
  ASSERT_TRUE(fds) << fds.error().message();
  const int before = fake_vulkan().live_semaphores;
  const auto half = sync::frame_timeline::import(context_, fds->produced.borrow(), event.borrow(), {.slots = 2}, &dev_);
  ASSERT_FALSE(half);
  EXPECT_NE(half.error().message().find("consumed"), std::string::npos) << half.error().message();
  EXPECT_EQ(fake_vulkan().live_semaphores, before);
  EXPECT_EQ(sync::frame_timeline::import(context_, {}, {}, {.slots = 2}).error().code(), errc::invalid_argument);
}

TEST_F(frame_timeline_win32_test, a_failing_driver_step_at_create_leaves_no_handle_and_no_import) {
  // The second CUDA import (consumed) fails: the first import, both semaphores and both exported
  // NT handles are gone (the fixture counts CUDA imports; the listener counts handles).
  fake_.fail_function("cuImportExternalSemaphore", CUDA_ERROR_OUT_OF_MEMORY, 2);
  const auto made = sync::frame_timeline::create(context_, dev_, {.slots = 2});
  ASSERT_FALSE(made);
  EXPECT_EQ(made.error().code(), errc::out_of_memory) << made.error().message();
  EXPECT_EQ(fake_vulkan().live_semaphores, 0);
  EXPECT_EQ(fake_.semaphores_.size(), 0U);
}

TEST_F(frame_timeline_win32_test, a_failing_submit_is_reported_and_signals_nothing) {
  auto producer = sync::frame_timeline::create(context_, dev_, {.slots = 2});
  ASSERT_TRUE(producer) << producer.error().message();
  ASSERT_TRUE(producer->cuda_release(nullptr, 0));
  fake_vulkan().submit_result = VK_ERROR_DEVICE_LOST;
  const auto submitted = producer->submit(queue_, {}, 0, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT);
  ASSERT_FALSE(submitted);
  EXPECT_NE(submitted.error().message().find("vkQueueSubmit"), std::string::npos) << submitted.error().message();
  const auto consumed = producer->consumed().value();
  ASSERT_TRUE(consumed) << consumed.error().message();
  EXPECT_EQ(*consumed, 0U);
  EXPECT_FALSE(producer->wait_consumed(0, 20ms)) << "frame 0 was never consumed";
  fake_vulkan().submit_result = VK_SUCCESS;
  ASSERT_TRUE(producer->submit(queue_, {}, 0, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT));
  EXPECT_TRUE(producer->wait_consumed(0, 100ms));
}

}  // namespace
