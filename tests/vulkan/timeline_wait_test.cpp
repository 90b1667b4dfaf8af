// vulkan tier: timeline_semaphore::wait polls the counter: it sees a value soon after it is reached,
// whichever thread or queue reaches it, and times out after its timeout (not before).
#include "vulkan_test.hpp"

#include <membridge/vulkan/timeline_semaphore.hpp>

#include <atomic>
#include <chrono>
#include <thread>

namespace membridge::testing {
namespace {

using namespace std::chrono_literals;
using clock = std::chrono::steady_clock;

TEST_F(vulkan_test, timeline_wait_ends_soon_after_another_thread_signals) {
  auto sem = vulkan::timeline_semaphore::create(vk.context, 0, false);
  ASSERT_TRUE(sem) << sem.error().message();
  for (std::uint64_t v = 1; v <= 5; ++v) {
    std::atomic<clock::time_point> signalled{};
    std::thread signaller([&] {
      std::this_thread::sleep_for(10ms);
      signalled.store(clock::now());
      EXPECT_TRUE(sem->signal(v));
    });
    ASSERT_TRUE(sem->wait(v, 5s)) << "value " << v;
    const auto seen = clock::now();
    signaller.join();
    EXPECT_GE(sem->value().value_or(0), v);
    // Generous for a loaded CI machine; a blocking wait that wakes late would show as many ms.
    EXPECT_LT(seen - signalled.load(), 50ms) << "value " << v;
  }
}

TEST_F(vulkan_test, timeline_wait_times_out_after_its_timeout_and_says_where_the_counter_is) {
  auto sem = vulkan::timeline_semaphore::create(vk.context, 3, false);
  ASSERT_TRUE(sem) << sem.error().message();
  const auto start = clock::now();
  const auto r = sem->wait(4, 30ms);
  const auto took = clock::now() - start;
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), errc::timeout);
  EXPECT_NE(r.error().message().find("at 3"), std::string::npos) << r.error().message();
  EXPECT_GE(took, 30ms);
  EXPECT_LT(took, 2s);
  auto zero = sem->wait(4, 0ns);  // a zero timeout is one poll
  ASSERT_FALSE(zero);
  EXPECT_EQ(zero.error().code(), errc::timeout);
  EXPECT_TRUE(sem->wait(3, 0ns));
}

}  // namespace
}  // namespace membridge::testing
