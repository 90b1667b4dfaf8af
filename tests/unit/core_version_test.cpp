#include <membridge/version.hpp>

#include <gtest/gtest.h>

#include <string>

namespace {

TEST(version, runtime_value_matches_the_headers) {
  const membridge::version_info v = membridge::version();
  EXPECT_EQ(v.major, MEMBRIDGE_VERSION_MAJOR);
  EXPECT_EQ(v.minor, MEMBRIDGE_VERSION_MINOR);
  EXPECT_EQ(v.patch, MEMBRIDGE_VERSION_PATCH);
  EXPECT_EQ(v.string, MEMBRIDGE_VERSION_STRING);
}

TEST(version, string_is_the_three_numbers) {
  const membridge::version_info v = membridge::version();
  EXPECT_EQ(std::string(v.string),
            std::to_string(v.major) + "." + std::to_string(v.minor) + "." + std::to_string(v.patch));
}

TEST(version, packed_number_orders_versions) {
  static_assert(MEMBRIDGE_MAKE_VERSION(0, 2, 0) > MEMBRIDGE_MAKE_VERSION(0, 1, 99));
  static_assert(MEMBRIDGE_MAKE_VERSION(1, 0, 0) > MEMBRIDGE_MAKE_VERSION(0, 999, 999));
  static_assert(MEMBRIDGE_VERSION ==
                MEMBRIDGE_MAKE_VERSION(MEMBRIDGE_VERSION_MAJOR, MEMBRIDGE_VERSION_MINOR, MEMBRIDGE_VERSION_PATCH));
  // This release: find_package(membridge 0.2) and the CHANGELOG name 0.2.0.
  EXPECT_GE(MEMBRIDGE_VERSION, MEMBRIDGE_MAKE_VERSION(0, 2, 0));
}

}  // namespace
