// gpu tier: a sync::frame_publisher with several consumer processes, each with a `consumed`
// semaphore of its own, on a real GPU, data checked every time:
//  1. two consumer processes; one of them is killed with SIGKILL mid-stream 20 times (a new one
//     each time): the producer never stalls, the other consumer reads every frame up to the last
//     one (data checked), and no fd of the killed ones stays open in the producer;
//  2. a producer that stops early: frame_timeline::drain() lets a Vulkan submit that waits for a
//     frame never produced complete, returns once the consumer drew the last frame, and the
//     teardown is clean.
// The consumer processes are ipc_gpu_test.cpp's "ipc_frame_consumer" role.
#include "ipc_gpu_test.hpp"

#include <volk.h>

namespace membridge::testing {
namespace {

/// ipc_frames_gpu_test under a name of its own: the fixture class lives in an anonymous namespace of
/// the shared header, so each file has its own class, and GoogleTest requires one class per suite.
class consumers_gpu_test : public ipc_frames_gpu_test {};

/// The producer of ipc_frames_gpu_test on a thread of its own: frames 0, 1, ... until stopped; every
/// 16 frames it waits (with a time limit) for its stream, so it never runs far ahead and a stall
/// shows as an error.
class producer_thread {
 public:
  producer_thread(std::function<result<void>(cudaStream_t, std::uint64_t)> produce, cudaStream_t stream)
      : produce_(std::move(produce)), stream_(stream), thread_([this] { run(); }) {}
  producer_thread(const producer_thread&) = delete;
  producer_thread& operator=(const producer_thread&) = delete;
  ~producer_thread() { stop(); }

  void stop() {
    stop_.store(true);
    if (thread_.joinable()) thread_.join();
  }
  /// Frames released and announced so far.
  [[nodiscard]] std::uint64_t produced() const { return produced_.load(); }
  [[nodiscard]] std::string failed() const {
    const std::lock_guard guard(lock_);
    return error_;
  }

 private:
  void run() {
    for (std::uint64_t n = 0; !stop_.load(); ++n) {
      auto made = produce_(stream_, n);
      cudaError_t rc = cudaSuccess;
      if (made && n % 16 == 15) rc = wait_stream(stream_, 10s);
      if (!made || rc != cudaSuccess) {
        const std::lock_guard guard(lock_);
        error_ = !made ? made.error().message()
                       : std::string("the producer's stream did not finish frame ") + std::to_string(n) +
                             " within 10 s: " + cudaGetErrorName(rc);
        return;
      }
      produced_.store(n + 1);
    }
  }

  std::function<result<void>(cudaStream_t, std::uint64_t)> produce_;
  cudaStream_t stream_ = nullptr;
  std::atomic<bool> stop_{false};
  std::atomic<std::uint64_t> produced_{0};
  mutable std::mutex lock_;
  std::string error_;
  std::thread thread_;  // last: started once everything above exists
};

TEST_F(consumers_gpu_test, two_consumers_one_killed_20_times_the_producer_and_the_other_reach_the_last_frame) {
  ASSERT_NO_FATAL_FAILURE(start_frames(socket_path("two-consumers")));
  cudaStream_t stream = nullptr;
  MB_CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  // The steady consumer joins first and consumes until the publisher says goodbye.
  auto steady = spawn_child("ipc_frame_consumer", {frames_.publisher().path(), "until-goodbye", "0"});
  MB_OK(steady);
  const reply steady_ready = receive_reply(*steady);
  ASSERT_EQ(steady_ready.status, 0) << steady_ready.message;
  ASSERT_EQ(steady_ready.role, static_cast<std::int32_t>(ipc::subscriber_role::consumer));
  ASSERT_TRUE(eventually([&] { return frames_.publisher().consumer_count() == 1; }, 5s));

  {
    producer_thread producer([this](cudaStream_t s, std::uint64_t n) { return produce(s, n); }, stream);
    ASSERT_TRUE(eventually([&] { return producer.produced() >= 32 || !producer.failed().empty(); }, 10s))
        << "the producer did not start (frame " << producer.produced() << ")";
    ASSERT_EQ(producer.failed(), "");
    const std::map<int, std::string> fds_before = open_fds();

    constexpr int kills = 20;
    for (int i = 0; i < kills; ++i) {
      // Killed after a varying number of its frames (1 .. 29): at different points of its stream of
      // waits, checks and signals.
      const std::string progress = std::to_string(1 + (i * 7) % 29);
      auto victim = spawn_child("ipc_frame_consumer", {frames_.publisher().path(), "0", progress});
      ASSERT_TRUE(victim) << victim.error().message();
      const reply ready = receive_reply(*victim);
      ASSERT_EQ(ready.status, 0) << "victim " << i << ": " << ready.message;
      ASSERT_EQ(ready.role, static_cast<std::int32_t>(ipc::subscriber_role::consumer))
          << "victim " << i << " was not granted the consumer role (the killed ones' places were not freed)";
      const reply reached = receive_reply(*victim);
      ASSERT_EQ(reached.status, 0) << "victim " << i << ": " << reached.message;
      EXPECT_EQ(reached.wrong_words, 0U) << "victim " << i << " read a slot that did not hold its frame";
      EXPECT_GT(reached.first_frame, ready.frame_at_join) << "victim " << i << " consumed a frame before its join";
      ASSERT_EQ(::kill(victim->pid(), SIGKILL), 0);
      auto status = victim->wait(10s);
      MB_OK(status);
      EXPECT_EQ(*status, 128 + SIGKILL);
      const std::uint64_t at_kill = producer.produced();
      ASSERT_TRUE(eventually([&] { return frames_.publisher().consumer_count() == 1; }, 5s))
          << "the publisher still counts killed consumer " << i;
      ASSERT_TRUE(eventually([&] { return producer.produced() >= at_kill + 16 || !producer.failed().empty(); }, 10s))
          << "the producer stalled after consumer " << i << " was killed (frame " << producer.produced() << ")";
      ASSERT_EQ(producer.failed(), "");
    }
    std::printf("[ IPC      ] %d consumers killed, producer at frame %llu\n", kills,
                static_cast<unsigned long long>(producer.produced()));

    // The killed consumers' semaphores (and their CUDA imports) go once the stream passed them.
    std::map<int, std::string> fds_after;
    const bool same = eventually(
        [&] {
          fds_after = open_fds();
          return fds_after.size() == fds_before.size();
        },
        5s);
    if (!same) {
      std::string extra;
      for (const auto& [fd, target] : fds_after)
        if (fds_before.count(fd) == 0) extra += " " + std::to_string(fd) + " -> " + target + ";";
      ADD_FAILURE() << "the producer had " << fds_before.size() << " fds before the killed consumers, "
                    << fds_after.size() << " after:" << extra;
    }
    EXPECT_EQ(frames_.timeline().consumer_count(), 1U);
    producer.stop();
    EXPECT_EQ(producer.failed(), "");
  }
  ASSERT_EQ(wait_stream(stream, 10s), cudaSuccess) << "the producer's stream did not finish its last frame";
  const std::optional<std::uint64_t> last = frames_.publisher().last_frame();
  ASSERT_TRUE(last.has_value());

  // Goodbye: the steady consumer draws what was announced, then answers with the last frame it drew.
  frames_.publisher().stop();
  const reply done = receive_reply(*steady);
  ASSERT_EQ(done.status, 0) << done.message;
  EXPECT_EQ(done.wrong_words, 0U) << "the steady consumer read a slot that did not hold its frame";
  EXPECT_EQ(done.last_frame, static_cast<std::int64_t>(*last)) << "the steady consumer did not reach the last frame";
  EXPECT_EQ(done.first_frame, steady_ready.frame_at_join + 1);
  EXPECT_EQ(done.frames_seen, *last + 1 - static_cast<std::uint64_t>(steady_ready.frame_at_join + 1))
      << "the steady consumer missed frames";
  EXPECT_EQ(done.increasing, 1);
  auto status = steady->wait(30s);
  MB_OK(status);
  EXPECT_EQ(*status, 0);
  MB_CUDA_OK(cudaStreamDestroy(stream));
}

TEST_F(consumers_gpu_test, a_producer_that_stops_early_drains_a_submit_waiting_for_a_frame_never_produced) {
  ASSERT_NO_FATAL_FAILURE(start_frames(socket_path("drain")));
  cudaStream_t stream = nullptr;
  MB_CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  auto consumer = spawn_child("ipc_frame_consumer", {frames_.publisher().path(), "until-goodbye", "0"});
  MB_OK(consumer);
  const reply ready = receive_reply(*consumer);
  ASSERT_EQ(ready.status, 0) << ready.message;
  ASSERT_TRUE(eventually([&] { return frames_.publisher().consumer_count() == 1; }, 5s));

  // A Vulkan submit of this process that waits for frame 40, which the producer never makes.
  constexpr std::uint64_t produced_frames = 25;
  constexpr std::uint64_t never = 40;
  const auto& fn = vk_.functions();
  VkFenceCreateInfo fci{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
  VkFence fence = VK_NULL_HANDLE;
  ASSERT_EQ(fn.vkCreateFence(vk_.device(), &fci, nullptr, &fence), VK_SUCCESS);
  const scope_exit destroy_fence{[&] { fn.vkDestroyFence(vk_.device(), fence, nullptr); }};
  const sync::semaphore_op wait = frames_.timeline().wait_info(never);
  ASSERT_EQ(wait.value, sync::frame_timeline::produced_value(never));
  VkTimelineSemaphoreSubmitInfo values{VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO};
  values.waitSemaphoreValueCount = 1;
  values.pWaitSemaphoreValues = &wait.value;
  const VkPipelineStageFlags stage = VK_PIPELINE_STAGE_ALL_COMMANDS_BIT;
  VkSubmitInfo info{VK_STRUCTURE_TYPE_SUBMIT_INFO};
  info.pNext = &values;
  info.waitSemaphoreCount = 1;
  info.pWaitSemaphores = &wait.semaphore;
  info.pWaitDstStageMask = &stage;
  ASSERT_EQ(fn.vkQueueSubmit(vk_.graphics_queue().queue, 1, &info, fence), VK_SUCCESS);

  for (std::uint64_t n = 0; n < produced_frames; ++n) MB_OK(produce(stream, n));
  ASSERT_EQ(wait_stream(stream, 10s), cudaSuccess) << "the producer's stream did not finish";
  EXPECT_EQ(fn.vkGetFenceStatus(vk_.device(), fence), VK_NOT_READY) << "the submit ran before its frame";

  // The producer stops early: drain releases the waiting submit and waits for the consumer.
  MB_OK(frames_.timeline().drain(10s));
  EXPECT_EQ(fn.vkWaitForFences(vk_.device(), 1, &fence, VK_TRUE, 5'000'000'000ULL), VK_SUCCESS)
      << "drain() did not release the submit that waits for a frame never produced";
  auto produced_now = frames_.timeline().produced().value();
  MB_OK(produced_now);
  EXPECT_EQ(*produced_now, sync::frame_timeline::produced_value(never));

  frames_.publisher().stop();
  const reply done = receive_reply(*consumer);
  ASSERT_EQ(done.status, 0) << done.message;
  EXPECT_EQ(done.wrong_words, 0U);
  EXPECT_EQ(done.last_frame, static_cast<std::int64_t>(produced_frames - 1))
      << "drain() returned before the consumer drew the last frame, or it drew a frame never announced";
  auto status = consumer->wait(30s);
  MB_OK(status);
  EXPECT_EQ(*status, 0);
  MB_CUDA_OK(cudaStreamDestroy(stream));
  ASSERT_EQ(fn.vkQueueWaitIdle(vk_.graphics_queue().queue), VK_SUCCESS);
}

}  // namespace
}  // namespace membridge::testing
