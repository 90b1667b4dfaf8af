// The main() of the Windows ipc test binary (cross-built with mingw-w64, run under Wine): a child
// role when argv names one (the binary starts itself as the other process), else GoogleTest. Both
// count handles around their work, so both make the runtime's one-time handles first.
#include "ipc_windows_test.hpp"
#include "runtime_priming.hpp"

#include <gtest/gtest.h>

int main(int argc, char** argv) {
  membridge::testing::prime_runtime_handles();
  const int child = membridge::testing::run_child_role(argc, argv);
  if (child >= 0) return child;
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
