// The main() of the Windows test binary (cross-built with mingw-w64, run under Wine): GoogleTest with
// a listener that fails any test changing the process's handle count (os_handle_count.hpp says how
// handles are counted under Wine).
#include "os_handle_count.hpp"

#include <gtest/gtest.h>

#include <stdexcept>

namespace {

// The first C++ exception a mingw-w64 process throws makes the runtime open two kernel objects it
// keeps for the life of the process (measured under Wine: +2 handles on the first throw, none after).
// Throwing once here keeps that one-time cost out of the first test that throws.
void prime_exception_runtime() {
  try {
    throw std::runtime_error("priming the exception runtime");
  } catch (const std::runtime_error&) {
  }
}

}  // namespace

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  prime_exception_runtime();
  ::testing::UnitTest::GetInstance()->listeners().Append(new membridge::testing::handle_leak_listener);
  return RUN_ALL_TESTS();
}
