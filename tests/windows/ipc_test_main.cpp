// The main() of the Windows ipc test binary (cross-built with mingw-w64, run under Wine): a child
// role when argv names one (the binary starts itself as the other process), else GoogleTest.
#include "ipc_windows_test.hpp"

#include <gtest/gtest.h>

int main(int argc, char** argv) {
  const int child = membridge::testing::run_child_role(argc, argv);
  if (child >= 0) return child;
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
