// The main() of every membridge test binary: runs a child role when asked to (two-process tests),
// otherwise the tests, each wrapped by the fd-leak listener.
#include "child_process.hpp"
#include "fd_leak_listener.hpp"
#include "test_environment.hpp"

#include <gtest/gtest.h>

int main(int argc, char** argv) {
  if (const auto status = membridge::testing::run_child_role_if_requested(argc, argv)) return *status;
  ::testing::InitGoogleTest(&argc, argv);
  // Let a binary open long-lived driver state (CUDA's own fds) before the first fd snapshot.
  membridge::testing::run_warm_up();
  ::testing::UnitTest::GetInstance()->listeners().Append(new membridge::testing::fd_leak_listener);
  return RUN_ALL_TESTS();
}
