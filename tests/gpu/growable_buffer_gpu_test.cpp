// growable_buffer on a real GPU: growth to 4 GiB with the contents checked after every step, shrink
// returning memory, and failed grows (device full, range full) leaving data, size and memory intact.
#include "gpu_test.hpp"

#include <membridge/core/units.hpp>
#include <membridge/cuda/growable_buffer.hpp>

#include <cstdio>

namespace {

using namespace membridge::literals;
namespace cu = membridge::cuda;
namespace gpu = membridge::testing::gpu;
using membridge::testing::gpu_test;

constexpr std::uint32_t seed = 0x5EED;

class growable_buffer_gpu : public gpu_test {
 protected:
  // Fills [from, to) of the buffer with the one buffer-wide pattern (word index from the base).
  static void fill(const cu::growable_buffer& b, std::size_t from, std::size_t to) {
    ASSERT_EQ(gpu::fill_pattern(b.data<char>() + from, to - from, seed, from / 4), cudaSuccess);
  }
  static unsigned long long wrong_words(const cu::growable_buffer& b, std::size_t bytes) {
    return mismatches(b.data(), bytes, seed);
  }
  std::size_t free_bytes() {
    const auto info = dev_.memory();
    EXPECT_TRUE(info) << info.error().message();
    return info ? info->free_bytes : 0;
  }
};

TEST_F(growable_buffer_gpu, doubling_from_64_mib_to_4_gib_keeps_address_and_contents) {
  auto b = cu::growable_buffer::create(dev_, {.size = 64_MiB, .max_size = 8_GiB});
  MB_OK(b);
  const CUdeviceptr base = b->address();
  fill(*b, 0, 64_MiB);
  for (std::size_t size = 128_MiB; size <= 4_GiB; size *= 2) {
    const std::size_t old = b->size();
    MB_OK(b->grow(size));
    ASSERT_EQ(b->address(), base) << "the device address changed at " << size;
    ASSERT_EQ(b->size(), size);
    ASSERT_EQ(b->capacity(), size);
    ASSERT_EQ(wrong_words(*b, old), 0u) << "old contents changed when growing to " << size;
    fill(*b, old, size);  // the new chunk is usable by kernels
    ASSERT_EQ(wrong_words(*b, size), 0u) << "after filling up to " << size;
  }
  EXPECT_EQ(b->chunk_count(), 7u);
}

TEST_F(growable_buffer_gpu, shrink_returns_memory_and_keeps_the_front) {
  auto b = cu::growable_buffer::create(dev_, {.size = 1_GiB, .max_size = 8_GiB});
  MB_OK(b);
  MB_OK(b->grow(4_GiB));
  fill(*b, 0, 4_GiB);
  const std::size_t free_before = free_bytes();
  MB_OK(b->shrink(1_GiB));
  EXPECT_EQ(b->capacity(), 1_GiB);
  const std::size_t free_after = free_bytes();
  EXPECT_GE(free_after, free_before + 3_GiB - 64_MiB) << "shrinking by 3 GiB freed only "
                                                       << membridge::format_bytes(free_after - free_before);
  EXPECT_EQ(wrong_words(*b, 1_GiB), 0u);
  MB_OK(b->grow(2_GiB));  // and grows again, same place
  fill(*b, 1_GiB, 2_GiB);
  EXPECT_EQ(wrong_words(*b, 2_GiB), 0u);
}

TEST_F(growable_buffer_gpu, a_grow_past_free_memory_fails_cleanly_with_the_old_data_intact) {
  // 8 GiB chunks, so several are created and mapped before the device runs out: the rollback of a
  // half-done grow is what this checks, on the real driver.
  const std::size_t total = dev_.total_memory();
  auto b = cu::growable_buffer::create(
      dev_, {.size = 256_MiB, .max_size = 2 * total, .chunks = {.max_chunk = 8_GiB}});
  MB_OK(b);
  fill(*b, 0, 256_MiB);
  const CUdeviceptr base = b->address();
  const std::size_t free_before = free_bytes();
  const auto failed = b->grow(total + total / 2);
  ASSERT_FALSE(failed) << "growing to 1.5x the device memory succeeded?";
  EXPECT_EQ(failed.error().code(), membridge::errc::out_of_memory) << failed.error().message();
  EXPECT_NE(failed.error().message().find("cuMemCreate"), std::string::npos) << failed.error().message();
  std::printf("the failed grow reported: %s\n", failed.error().message().c_str());
  EXPECT_EQ(b->size(), 256_MiB);
  EXPECT_EQ(b->capacity(), 256_MiB);
  EXPECT_EQ(b->chunk_count(), 1u);
  EXPECT_EQ(b->address(), base);
  const std::size_t free_after = free_bytes();
  EXPECT_LE(free_before > free_after ? free_before - free_after : 0, 32_MiB)
      << "the failed grow leaked " << membridge::format_bytes(free_before - free_after);
  EXPECT_EQ(wrong_words(*b, 256_MiB), 0u);
  MB_OK(b->grow(512_MiB));  // still usable afterwards
  fill(*b, 256_MiB, 512_MiB);
  EXPECT_EQ(wrong_words(*b, 512_MiB), 0u);
}

TEST_F(growable_buffer_gpu, a_grow_past_the_reserved_range_fails_and_changes_nothing) {
  auto b = cu::growable_buffer::create(dev_, {.size = 64_MiB, .max_size = 256_MiB});
  MB_OK(b);
  fill(*b, 0, 64_MiB);
  const auto failed = b->grow(256_MiB + 1);
  ASSERT_FALSE(failed);
  EXPECT_EQ(failed.error().code(), membridge::errc::out_of_memory);
  EXPECT_EQ(b->size(), 64_MiB);
  EXPECT_EQ(wrong_words(*b, 64_MiB), 0u);
}

TEST_F(growable_buffer_gpu, destroying_a_buffer_returns_all_its_memory) {
  const std::size_t free_before = free_bytes();
  {
    auto b = cu::growable_buffer::create(dev_, {.size = 1_GiB, .max_size = 4_GiB});
    MB_OK(b);
    MB_OK(b->grow(3_GiB));
    fill(*b, 0, 3_GiB);
    EXPECT_LE(free_bytes() + 3_GiB, free_before + 64_MiB);
  }
  EXPECT_GE(free_bytes() + 32_MiB, free_before);
}

}  // namespace
