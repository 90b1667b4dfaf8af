#include <membridge/os/dynamic_library.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <string>

namespace {

using membridge::errc;
using membridge::os::dynamic_library;

TEST(dynamic_library, opens_a_library_and_finds_a_symbol_that_works) {
  auto lib = dynamic_library::open("libm.so.6");
  ASSERT_TRUE(lib) << lib.error().message();
  EXPECT_TRUE(lib->valid());
  EXPECT_EQ(lib->name(), "libm.so.6");
  auto address = lib->symbol("cos");
  ASSERT_TRUE(address) << address.error().message();
  auto* cosine = reinterpret_cast<double (*)(double)>(*address);
  EXPECT_DOUBLE_EQ(cosine(0.0), 1.0);
}

TEST(dynamic_library, a_missing_library_is_driver_unavailable_with_the_loader_message) {
  const auto lib = dynamic_library::open("libmembridge-does-not-exist.so.9");
  ASSERT_FALSE(lib);
  EXPECT_EQ(lib.error().code(), errc::driver_unavailable);
  EXPECT_EQ(lib.error().call(), "dlopen");
  EXPECT_NE(lib.error().message().find("libmembridge-does-not-exist.so.9"), std::string::npos)
      << lib.error().message();
}

TEST(dynamic_library, a_missing_symbol_is_driver_unavailable) {
  auto lib = dynamic_library::open("libm.so.6");
  ASSERT_TRUE(lib);
  const auto missing = lib->symbol("membridge_no_such_symbol");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code(), errc::driver_unavailable);
  EXPECT_NE(missing.error().message().find("membridge_no_such_symbol"), std::string::npos);
}

TEST(dynamic_library, empty_objects_and_names_are_invalid_arguments) {
  const dynamic_library empty;
  EXPECT_FALSE(empty.valid());
  EXPECT_EQ(empty.symbol("cos").error().code(), errc::invalid_argument);
  EXPECT_EQ(dynamic_library::open("").error().code(), errc::invalid_argument);
}

TEST(dynamic_library, move_keeps_the_library_open_in_the_target) {
  auto lib = dynamic_library::open("libm.so.6");
  ASSERT_TRUE(lib);
  dynamic_library moved = std::move(*lib);
  EXPECT_FALSE(lib->valid());  // NOLINT(bugprone-use-after-move)
  EXPECT_TRUE(moved.symbol("sin").has_value());
  dynamic_library assigned;
  assigned = std::move(moved);
  EXPECT_TRUE(assigned.symbol("sin").has_value());
}

}  // namespace
