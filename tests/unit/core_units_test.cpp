#include <membridge/core/units.hpp>

#include <gtest/gtest.h>

#include <cstdint>

namespace {

using namespace membridge::literals;

TEST(units, literals_are_binary) {
  static_assert(1_KiB == 1024);
  static_assert(64_MiB == 64u * 1024 * 1024);
  static_assert(4_GiB == 4ull * 1024 * 1024 * 1024);
  EXPECT_EQ(2_MiB, std::size_t{2097152});
}

TEST(units, round_up_handles_exact_zero_and_overflow) {
  EXPECT_EQ(membridge::round_up(0, 2_MiB), 0u);
  EXPECT_EQ(membridge::round_up(1, 2_MiB), 2_MiB);
  EXPECT_EQ(membridge::round_up(2_MiB, 2_MiB), 2_MiB);
  EXPECT_EQ(membridge::round_up(2_MiB + 1, 2_MiB), 4_MiB);
  EXPECT_EQ(membridge::round_up(5, 3), 6u);  // any alignment, not only powers of two
  EXPECT_FALSE(membridge::round_up(5, 0).has_value());
  EXPECT_FALSE(membridge::round_up(SIZE_MAX, 2_MiB).has_value());
  EXPECT_EQ(membridge::round_up(SIZE_MAX - 2_MiB + 1, 2_MiB), SIZE_MAX - 2_MiB + 1);
}

TEST(units, is_aligned) {
  EXPECT_TRUE(membridge::is_aligned(0, 2_MiB));
  EXPECT_TRUE(membridge::is_aligned(6_MiB, 2_MiB));
  EXPECT_FALSE(membridge::is_aligned(3_MiB, 2_MiB));
  EXPECT_FALSE(membridge::is_aligned(4, 0));
}

TEST(units, format_bytes_is_readable) {
  EXPECT_EQ(membridge::format_bytes(0), "0 B");
  EXPECT_EQ(membridge::format_bytes(512), "512 B");
  EXPECT_EQ(membridge::format_bytes(1_KiB), "1 KiB");
  EXPECT_EQ(membridge::format_bytes(64_MiB), "64 MiB");
  EXPECT_EQ(membridge::format_bytes(4_GiB), "4 GiB");
  EXPECT_EQ(membridge::format_bytes(1_GiB + 512_MiB), "1.5 GiB");
  EXPECT_EQ(membridge::format_bytes(1_MiB + 1), "1 MiB");  // two decimals at most
  EXPECT_EQ(membridge::format_bytes(1536), "1.5 KiB");
  EXPECT_EQ(membridge::format_bytes(std::uint64_t{3} << 40), "3 TiB");
}

}  // namespace

#include <membridge/core/device_uuid.hpp>

#include <unordered_set>

namespace {

TEST(device_uuid, hashes_so_uuids_key_unordered_containers) {
  membridge::device_uuid a;
  membridge::device_uuid b;
  for (std::size_t i = 0; i < 16; ++i) {
    a.bytes[i] = static_cast<std::uint8_t>(i + 1);
    b.bytes[i] = static_cast<std::uint8_t>(i + 1);
  }
  b.bytes[15] = 0xFF;
  const std::hash<membridge::device_uuid> h;
  EXPECT_EQ(h(a), h(a));
  EXPECT_NE(h(a), h(b)) << "one byte apart";
  std::unordered_set<membridge::device_uuid> set{a, b, a};
  EXPECT_EQ(set.size(), 2U);
  EXPECT_TRUE(set.contains(b));
}

}  // namespace
