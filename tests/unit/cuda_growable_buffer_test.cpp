// growable_buffer on the scripted driver: growth in place, the chunk policy, shrink, export, and a
// failure at every step of create/grow leaving the buffer and the driver exactly as they were.
#include "fake_driver_test.hpp"

#include <membridge/core/units.hpp>
#include <membridge/cuda/growable_buffer.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

namespace {

using namespace membridge::literals;
using membridge::errc;
using membridge::cuda::chunk_info;
using membridge::cuda::growable_buffer;
using membridge::cuda::growable_buffer_options;

class growable_buffer_test : public membridge::testing::fake_driver_test {
 protected:
  growable_buffer make(const growable_buffer_options& options) {
    return membridge::testing::value_or_failure(growable_buffer::create(dev_, options));
  }

  // The buffer's chunks must tile [0, capacity) and match the driver's mappings one to one.
  void expect_consistent(const growable_buffer& b) {
    std::size_t offset = 0;
    const auto state = fake_.state();
    for (const chunk_info& c : b.chunks()) {
      EXPECT_EQ(c.offset, offset);
      const auto m = state.mappings.find(b.address() + c.offset);
      ASSERT_NE(m, state.mappings.end()) << "chunk at " << c.offset << " is not mapped";
      EXPECT_EQ(m->second.size, c.size);
      EXPECT_EQ(m->second.access, CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
      offset += c.size;
    }
    EXPECT_EQ(offset, b.capacity());
    EXPECT_GE(b.capacity(), b.size());
    EXPECT_EQ(state.mappings.size(), b.chunk_count());
  }

  void TearDown() override {
    dev_ = {};  // drop the test's share of the primary context before the leak check
    fake_driver_test::TearDown();
  }

  membridge::cuda::device dev_ = open_device();
};

TEST_F(growable_buffer_test, create_reserves_the_range_and_maps_the_initial_size) {
  auto b = make({.size = 64_MiB, .max_size = 4_GiB});
  EXPECT_TRUE(b.valid());
  EXPECT_EQ(b.size(), 64_MiB);
  EXPECT_EQ(b.capacity(), 64_MiB);
  EXPECT_EQ(b.max_size(), 4_GiB);
  EXPECT_EQ(b.granularity(), 2_MiB);
  EXPECT_EQ(b.chunk_count(), 1u);
  EXPECT_NE(b.address(), 0u);
  EXPECT_EQ(b.data<char>(), reinterpret_cast<char*>(b.address()));
  EXPECT_EQ(fake_.state().ranges.at(b.address()), 4_GiB);
  expect_consistent(b);
}

TEST_F(growable_buffer_test, an_empty_buffer_maps_nothing_until_it_grows) {
  auto b = make({.size = 0, .max_size = 1_GiB});
  EXPECT_EQ(b.capacity(), 0u);
  EXPECT_EQ(b.chunk_count(), 0u);
  ASSERT_TRUE(b.grow(10));
  EXPECT_EQ(b.size(), 10u);
  EXPECT_EQ(b.capacity(), 2_MiB);
  expect_consistent(b);
}

TEST_F(growable_buffer_test, doubling_to_4_gib_adds_one_chunk_per_step_at_a_fixed_address) {
  auto b = make({.size = 64_MiB, .max_size = 8_GiB});
  const CUdeviceptr base = b.address();
  for (std::size_t size = 128_MiB; size <= 4_GiB; size *= 2) {
    const auto before = static_cast<std::ptrdiff_t>(fake_.calls().size());
    ASSERT_TRUE(b.grow(size));
    EXPECT_EQ(b.address(), base);
    EXPECT_EQ(b.size(), size);
    EXPECT_EQ(b.capacity(), size);
    const auto& calls = fake_.calls();
    EXPECT_EQ(std::count(calls.begin() + before, calls.end(), "cuMemCreate"), 1) << "one chunk per doubling";
    expect_consistent(b);
  }
  EXPECT_EQ(b.chunk_count(), 7u);
  EXPECT_EQ(b.chunk(6).offset, 2_GiB);
  EXPECT_EQ(b.chunk(6).size, 2_GiB);
  EXPECT_EQ(fake_.state().free_memory, 80_GiB - 4_GiB);
}

TEST_F(growable_buffer_test, small_grows_use_the_slack_without_driver_calls) {
  auto b = make({.size = 64_MiB, .max_size = 4_GiB});
  ASSERT_TRUE(b.grow(64_MiB + 1));
  EXPECT_EQ(b.size(), 64_MiB + 1);
  EXPECT_EQ(b.capacity(), 128_MiB);  // geometric: doubled
  const int before = fake_.counted_calls();
  ASSERT_TRUE(b.grow(100_MiB));
  ASSERT_TRUE(b.grow(128_MiB));
  EXPECT_EQ(fake_.counted_calls(), before);
  EXPECT_EQ(b.chunk_count(), 2u);
  ASSERT_TRUE(b.grow(128_MiB));  // same size: nothing to do
  expect_consistent(b);
}

TEST_F(growable_buffer_test, growth_factor_one_maps_exactly) {
  auto b = make({.size = 64_MiB, .max_size = 4_GiB, .chunks = {.growth_factor = 1.0}});
  ASSERT_TRUE(b.grow(65_MiB));
  EXPECT_EQ(b.capacity(), 66_MiB);
  expect_consistent(b);
}

TEST_F(growable_buffer_test, max_chunk_caps_every_chunk_including_the_first) {
  auto b = make({.size = 600_MiB, .max_size = 4_GiB, .chunks = {.max_chunk = 256_MiB}});
  EXPECT_EQ(b.chunk_count(), 3u);
  EXPECT_EQ(b.capacity(), 600_MiB);  // the first mapping is exact, not geometric
  ASSERT_TRUE(b.grow(1_GiB));
  for (const auto& c : b.chunks()) EXPECT_LE(c.size, 256_MiB);
  expect_consistent(b);
}

TEST_F(growable_buffer_test, bad_options_and_sizes_are_rejected_clearly) {
  EXPECT_EQ(growable_buffer::create(dev_, {.size = 1_MiB, .max_size = 0}).error().code(), errc::invalid_argument);
  EXPECT_EQ(growable_buffer::create(dev_, {.size = 2_GiB, .max_size = 1_GiB}).error().code(), errc::invalid_argument);
  EXPECT_EQ(growable_buffer::create(dev_, {.size = 0, .max_size = 1_GiB, .chunks = {.growth_factor = 0.5}})
                .error()
                .code(),
            errc::invalid_argument);
  EXPECT_EQ(growable_buffer::create({}, {.size = 0, .max_size = 1_GiB}).error().code(), errc::invalid_argument);
  EXPECT_EQ(growable_buffer::create(dev_, {.size = 0, .max_size = SIZE_MAX}).error().code(), errc::invalid_argument);
  auto b = make({.size = 64_MiB, .max_size = 1_GiB});
  const auto down = b.grow(32_MiB);
  ASSERT_FALSE(down);
  EXPECT_EQ(down.error().code(), errc::invalid_argument);
  EXPECT_NE(down.error().message().find("use shrink"), std::string::npos);
  EXPECT_EQ(b.shrink(128_MiB).error().code(), errc::invalid_argument);
  EXPECT_EQ(growable_buffer{}.grow(1).error().code(), errc::invalid_argument);
  EXPECT_EQ(growable_buffer{}.shrink(0).error().code(), errc::invalid_argument);
  EXPECT_EQ(b.size(), 64_MiB);
  expect_consistent(b);
}

TEST_F(growable_buffer_test, growing_past_the_reserved_range_fails_and_changes_nothing) {
  auto b = make({.size = 64_MiB, .max_size = 1_GiB});
  const auto before = fake_.state();
  const auto full = b.grow(1_GiB + 1);
  ASSERT_FALSE(full);
  EXPECT_EQ(full.error().code(), errc::out_of_memory);
  EXPECT_NE(full.error().message().find("address range is full"), std::string::npos) << full.error().message();
  EXPECT_EQ(b.size(), 64_MiB);
  EXPECT_EQ(fake_.state(), before);
  ASSERT_TRUE(b.grow(1_GiB));  // exactly max_size still works
  EXPECT_EQ(b.capacity(), 1_GiB);
}

TEST_F(growable_buffer_test, growing_past_device_memory_fails_and_changes_nothing) {
  fake_.total_memory = 80_GiB;
  auto b = make({.size = 1_GiB, .max_size = 256_GiB, .chunks = {.max_chunk = 8_GiB}});
  const auto before = fake_.state();
  const auto oom = b.grow(120_GiB);  // nine 8 GiB chunks succeed before the device runs out
  ASSERT_FALSE(oom);
  EXPECT_EQ(oom.error().code(), errc::out_of_memory);
  EXPECT_NE(oom.error().message().find("cuMemCreate: CUDA_ERROR_OUT_OF_MEMORY (2)"), std::string::npos);
  EXPECT_NE(oom.error().message().find("growing a buffer from 1 GiB to 120 GiB"), std::string::npos)
      << oom.error().message();
  EXPECT_EQ(fake_.state(), before);
  EXPECT_EQ(b.size(), 1_GiB);
  EXPECT_EQ(b.capacity(), 1_GiB);
  expect_consistent(b);
}

// The core promise: whichever driver call fails during a grow, the buffer and the driver are exactly
// as before (same size, capacity, chunks, mappings, handles, free memory) and nothing is misused.
TEST_F(growable_buffer_test, a_failure_at_every_step_of_grow_leaves_the_buffer_as_it_was) {
  for (const std::size_t max_chunk : {std::size_t{0}, 64_MiB}) {  // one new chunk, then several
    auto b = make({.size = 64_MiB, .max_size = 4_GiB, .chunks = {.max_chunk = max_chunk}});
    const auto before = fake_.state();
    const auto chunks_before = b.chunks();
    int k = 0;
    for (;; ++k) {
      fake_.fail_nth_call(k, CUDA_ERROR_OUT_OF_MEMORY);
      const auto r = b.grow(256_MiB);
      if (!fake_.injection_fired()) {  // k is past the last call: the grow succeeded untouched
        fake_.clear_failures();
        ASSERT_TRUE(r) << r.error().message();
        break;
      }
      ASSERT_FALSE(r) << "step " << k << " failed but grow reported success";
      EXPECT_EQ(r.error().code(), errc::out_of_memory);
      EXPECT_EQ(fake_.state(), before) << "step " << k;
      EXPECT_EQ(b.size(), 64_MiB);
      EXPECT_EQ(b.capacity(), 64_MiB);
      ASSERT_EQ(b.chunks().size(), chunks_before.size());
      ASSERT_TRUE(fake_.misuse().empty()) << "step " << k << membridge::testing::join(fake_.misuse());
    }
    fake_.clear_failures();
    EXPECT_GE(k, max_chunk == 0 ? 4 : 12) << "too few steps: the loop did not cover create/map/access";
    EXPECT_EQ(b.size(), 256_MiB);
    expect_consistent(b);
  }
}

TEST_F(growable_buffer_test, a_failure_at_every_step_of_create_leaks_nothing) {
  const auto clean = fake_.state();
  int k = 0;
  for (;; ++k) {
    fake_.fail_nth_call(k, CUDA_ERROR_OUT_OF_MEMORY);
    {
      auto b = growable_buffer::create(dev_, {.size = 300_MiB, .max_size = 1_GiB, .chunks = {.max_chunk = 128_MiB}});
      if (!fake_.injection_fired()) {
        fake_.clear_failures();  // the pending injection must not hit the buffer's teardown
        ASSERT_TRUE(b) << b.error().message();
        break;
      }
      ASSERT_FALSE(b) << "step " << k;
    }
    EXPECT_EQ(fake_.state(), clean) << "step " << k;
  }
  fake_.clear_failures();
  EXPECT_GE(k, 10);
}

TEST_F(growable_buffer_test, shrink_waits_then_unmaps_whole_chunks_past_the_new_size) {
  auto b = make({.size = 64_MiB, .max_size = 4_GiB});
  for (std::size_t s = 128_MiB; s <= 1_GiB; s *= 2) ASSERT_TRUE(b.grow(s));
  ASSERT_EQ(b.chunk_count(), 5u);  // 64 + 64 + 128 + 256 + 512
  const CUdeviceptr base = b.address();
  const int syncs = fake_.synchronize_count();
  ASSERT_TRUE(b.shrink(200_MiB));
  EXPECT_EQ(b.size(), 200_MiB);
  EXPECT_EQ(b.capacity(), 256_MiB);  // the chunk holding byte 200 MiB stays
  EXPECT_EQ(b.chunk_count(), 3u);
  EXPECT_EQ(b.address(), base);
  EXPECT_EQ(fake_.synchronize_count() - syncs, 1) << "one wait for the two chunks unmapped";
  EXPECT_EQ(fake_.state().free_memory, 80_GiB - 256_MiB);
  expect_consistent(b);
  ASSERT_TRUE(b.shrink(128_MiB));  // exactly at a chunk boundary: the chunk starting there goes
  EXPECT_EQ(b.capacity(), 128_MiB);
  ASSERT_TRUE(b.shrink(0));
  EXPECT_EQ(b.chunk_count(), 0u);
  EXPECT_EQ(fake_.state().free_memory, 80_GiB);
  ASSERT_TRUE(b.grow(3_MiB));  // and it grows again at the same address
  EXPECT_EQ(b.address(), base);
  expect_consistent(b);
}

TEST_F(growable_buffer_test, resize_goes_either_way) {
  auto b = make({.size = 64_MiB, .max_size = 1_GiB});
  ASSERT_TRUE(b.resize(512_MiB));
  EXPECT_EQ(b.size(), 512_MiB);
  ASSERT_TRUE(b.resize(64_MiB));
  EXPECT_EQ(b.size(), 64_MiB);
  EXPECT_EQ(b.capacity(), 64_MiB);
  expect_consistent(b);
}

TEST_F(growable_buffer_test, a_failed_unmap_during_shrink_is_reported_and_the_buffer_stays_consistent) {
  auto b = make({.size = 64_MiB, .max_size = 1_GiB});
  ASSERT_TRUE(b.grow(256_MiB));
  fake_.fail_function("cuMemUnmap", CUDA_ERROR_INVALID_VALUE);
  const auto r = b.shrink(10_MiB);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().call(), "cuMemUnmap");
  EXPECT_EQ(b.size(), 10_MiB);
  EXPECT_EQ(b.capacity(), 256_MiB);  // the newest chunk could not be unmapped, so nothing went
  expect_consistent(b);
  ASSERT_TRUE(b.shrink(10_MiB));  // retrying finishes the job
  EXPECT_EQ(b.capacity(), 64_MiB);
  expect_consistent(b);
}

TEST_F(growable_buffer_test, export_chunk_gives_an_fd_with_offset_and_size) {
  auto b = make({.size = 64_MiB, .max_size = 1_GiB});
  ASSERT_TRUE(b.grow(128_MiB));
  auto exported = b.export_chunk(1);
  ASSERT_TRUE(exported) << exported.error().message();
  EXPECT_TRUE(exported->fd.valid());
  EXPECT_EQ(exported->offset, 64_MiB);
  EXPECT_EQ(exported->size, 64_MiB);
  const auto missing = b.export_chunk(2);
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code(), errc::invalid_argument);
  // The import through the exported fd keeps the chunk's memory alive after the buffer shrinks.
  auto imported = membridge::cuda::vmm_allocation::import(dev_, exported->fd, exported->size);
  ASSERT_TRUE(imported);
  ASSERT_TRUE(b.shrink(64_MiB));
  EXPECT_EQ(fake_.state().free_memory, 80_GiB - 128_MiB);
  imported->reset();
  EXPECT_EQ(fake_.state().free_memory, 80_GiB - 64_MiB);
}

TEST_F(growable_buffer_test, teardown_unmaps_releases_then_frees_the_range) {
  {
    auto b = make({.size = 64_MiB, .max_size = 1_GiB});
    ASSERT_TRUE(b.grow(256_MiB));
  }
  const auto& calls = fake_.calls();
  const auto last_unmap = std::find(calls.rbegin(), calls.rend(), "cuMemUnmap");
  const auto last_release = std::find(calls.rbegin(), calls.rend(), "cuMemRelease");
  const auto free = std::find(calls.rbegin(), calls.rend(), "cuMemAddressFree");
  ASSERT_NE(free, calls.rend());
  EXPECT_LT(free - calls.rbegin(), last_release - calls.rbegin()) << "the range must be freed last";
  EXPECT_LT(last_release - calls.rbegin(), last_unmap - calls.rbegin()) << "release follows unmap";
  EXPECT_TRUE(fake_.state().mappings.empty());
  EXPECT_TRUE(fake_.state().ranges.empty());
}

TEST_F(growable_buffer_test, moving_keeps_the_address_and_empties_the_source) {
  auto a = make({.size = 64_MiB, .max_size = 1_GiB});
  const CUdeviceptr base = a.address();
  growable_buffer b = std::move(a);
  EXPECT_FALSE(a.valid());  // NOLINT(bugprone-use-after-move)
  EXPECT_EQ(a.size(), 0u);  // NOLINT(bugprone-use-after-move)
  EXPECT_EQ(a.capacity(), 0u);  // NOLINT(bugprone-use-after-move)
  EXPECT_EQ(b.address(), base);
  EXPECT_EQ(b.size(), 64_MiB);
  growable_buffer c = make({.size = 2_MiB, .max_size = 2_MiB});
  c = std::move(b);  // releases c's own memory first
  EXPECT_EQ(c.address(), base);
  EXPECT_EQ(fake_.state().ranges.size(), 1u);
  expect_consistent(c);
}

}  // namespace

namespace {

TEST_F(growable_buffer_test, reserve_maps_exactly_ahead_without_changing_the_size) {
  auto b = make({.size = 64_MiB, .max_size = 1_GiB, .chunks = {.max_chunk = 64_MiB}});
  ASSERT_TRUE(b.reserve(32_MiB));  // already covered: nothing happens
  EXPECT_EQ(b.capacity(), 64_MiB);
  ASSERT_TRUE(b.reserve(200_MiB));
  EXPECT_EQ(b.size(), 64_MiB);
  EXPECT_EQ(b.capacity(), 200_MiB) << "no growth factor: exactly what was asked (a granularity multiple)";
  EXPECT_EQ(b.chunk_count(), 4U) << "64 + 64 + 64 + 8 MiB: split at max_chunk";
  expect_consistent(b);
  const int calls = fake_.counted_calls();
  ASSERT_TRUE(b.grow(200_MiB));
  EXPECT_EQ(fake_.counted_calls(), calls) << "growing into reserved capacity calls nothing";
  const auto past = b.reserve(2_GiB);
  ASSERT_FALSE(past);
  EXPECT_EQ(past.error().code(), errc::out_of_memory);
  EXPECT_EQ(b.capacity(), 200_MiB);
  growable_buffer empty;
  EXPECT_EQ(empty.reserve(1_MiB).error().code(), errc::invalid_argument);
}

TEST_F(growable_buffer_test, a_failure_at_every_step_of_reserve_leaves_the_buffer_as_it_was) {
  auto b = make({.size = 64_MiB, .max_size = 1_GiB, .chunks = {.max_chunk = 64_MiB}});
  int k = 0;
  for (;; ++k) {
    const auto before = fake_.state();
    fake_.fail_nth_call(k, CUDA_ERROR_OUT_OF_MEMORY);
    const auto r = b.reserve(256_MiB);
    if (!fake_.injection_fired()) {
      fake_.clear_failures();
      ASSERT_TRUE(r) << r.error().message();
      break;
    }
    ASSERT_FALSE(r);
    EXPECT_EQ(fake_.state(), before) << "step " << k;
    EXPECT_EQ(b.capacity(), 64_MiB);
    EXPECT_EQ(b.size(), 64_MiB);
  }
  EXPECT_GE(k, 9);
  expect_consistent(b);
}

}  // namespace

// Issue 18 item 4: one shared chunk list, ONE context synchronize per teardown, whatever the number
// of chunks (a cuCtxSynchronize stalls every stream of the context), and it comes before every unmap.
TEST_F(growable_buffer_test, destroying_an_n_chunk_buffer_synchronizes_once_before_the_unmaps) {
  auto b = make({.size = 64_MiB, .max_size = 4_GiB});
  for (std::size_t s = 128_MiB; s <= 1_GiB; s *= 2) ASSERT_TRUE(b.grow(s));
  ASSERT_EQ(b.chunk_count(), 5u);
  const int syncs = fake_.synchronize_count();
  const std::size_t from = fake_.calls().size();
  b = growable_buffer{};
  const auto made = calls_since(from);
  EXPECT_EQ(fake_.synchronize_count() - syncs, 1) << membridge::testing::join(made);
  EXPECT_EQ(std::count(made.begin(), made.end(), "cuMemUnmap"), 5) << membridge::testing::join(made);
  EXPECT_EQ(std::count(made.begin(), made.end(), "cuMemRelease"), 5) << membridge::testing::join(made);
  const auto sync_at = std::find(made.begin(), made.end(), "cuCtxSynchronize");
  const auto first_unmap = std::find(made.begin(), made.end(), "cuMemUnmap");
  EXPECT_LT(sync_at, first_unmap) << "the wait must come before the first unmap: " << membridge::testing::join(made);
  EXPECT_TRUE(fake_.state().mappings.empty());
  EXPECT_EQ(fake_.state().free_memory, 80_GiB);
}

TEST_F(growable_buffer_test, shrinking_past_several_chunks_synchronizes_once_and_an_empty_buffer_not_at_all) {
  auto b = make({.size = 64_MiB, .max_size = 4_GiB});
  for (std::size_t s = 128_MiB; s <= 1_GiB; s *= 2) ASSERT_TRUE(b.grow(s));
  ASSERT_EQ(b.chunk_count(), 5u);
  int syncs = fake_.synchronize_count();
  ASSERT_TRUE(b.shrink(100_MiB));  // unmaps the 128, 256 and 512 MiB chunks
  EXPECT_EQ(b.chunk_count(), 2u);
  EXPECT_EQ(b.capacity(), 128_MiB);
  EXPECT_EQ(fake_.synchronize_count() - syncs, 1);
  syncs = fake_.synchronize_count();
  ASSERT_TRUE(b.shrink(90_MiB));  // no chunk lies wholly past 90 MiB: nothing to wait for
  EXPECT_EQ(fake_.synchronize_count(), syncs);
  ASSERT_TRUE(b.shrink(0));
  EXPECT_EQ(fake_.synchronize_count() - syncs, 1);
  EXPECT_EQ(b.chunk_count(), 0u);
  syncs = fake_.synchronize_count();
  b = growable_buffer{};  // no chunks left: the teardown has nothing to wait for
  EXPECT_EQ(fake_.synchronize_count(), syncs);
  EXPECT_EQ(fake_.state().free_memory, 80_GiB);
}
