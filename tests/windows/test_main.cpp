// The main() of the Windows test binary (cross-built with mingw-w64, run under Wine): GoogleTest with
// a listener that fails any test changing the process's handle count (os_handle_count.hpp says how
// handles are counted under Wine).
#include "os_handle_count.hpp"
#include "runtime_priming.hpp"

#include <gtest/gtest.h>

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  membridge::testing::prime_runtime_handles();
  ::testing::UnitTest::GetInstance()->listeners().Append(new membridge::testing::handle_leak_listener);
  return RUN_ALL_TESTS();
}
