#include <membridge/os/start_thread.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <cerrno>
#include <stop_token>
#include <system_error>
#include <thread>

namespace {

using membridge::errc;

TEST(start_thread, runs_the_body_on_a_new_thread) {
  std::atomic<bool> ran{false};
  std::thread::id where;
  auto started = membridge::os::start_thread("a test thread", [&] {
    where = std::this_thread::get_id();
    ran = true;
  });
  ASSERT_TRUE(started) << started.error().message();
  ASSERT_TRUE(started->joinable());
  started->join();
  EXPECT_TRUE(ran.load());
  EXPECT_NE(where, std::this_thread::get_id());
}

TEST(start_thread, a_jthread_gets_its_stop_token_and_stops_when_destroyed) {
  std::atomic<bool> stopped{false};
  {
    auto started = membridge::os::start_thread<std::jthread>("a test jthread", [&](const std::stop_token& stop) {
      while (!stop.stop_requested()) std::this_thread::yield();
      stopped = true;
    });
    ASSERT_TRUE(started) << started.error().message();
  }
  EXPECT_TRUE(stopped.load());
}

// Stands for a thread type whose start fails the way std::thread's does when the system is out of threads.
struct unstartable_thread {
  template <class Body>
  explicit unstartable_thread(Body&&) {
    throw std::system_error(EAGAIN, std::generic_category(), "Resource temporarily unavailable");
  }
};

TEST(start_thread, a_thread_that_cannot_start_is_an_os_error_with_its_errno_and_name) {
  bool ran = false;
  auto started = membridge::os::start_thread<unstartable_thread>("the test's worker", [&] { ran = true; });
  ASSERT_FALSE(started);
  EXPECT_EQ(started.error().code(), errc::os_error);
  EXPECT_EQ(started.error().native_code(), EAGAIN);
  EXPECT_NE(started.error().message().find("the test's worker"), std::string::npos) << started.error().message();
  EXPECT_FALSE(ran);
}

}  // namespace
