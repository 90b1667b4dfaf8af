// The main() of the Windows test binary (cross-built with mingw-w64, run under Wine): plain
// GoogleTest; the Linux binaries' child roles and /proc fd-leak listener have no Windows form yet.
#include <gtest/gtest.h>

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
