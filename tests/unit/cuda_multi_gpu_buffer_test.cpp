// growable_buffer over several GPUs on the scripted driver modelling two or three devices: chunk
// placement (the buffer's own GPU, round-robin, per chunk), access lists set with one cuMemSetAccess,
// one wait per GPU at teardown, refusal without peer access naming both GPUs before anything is
// mapped, and a failure at every driver step of create and grow leaving nothing behind.
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
using membridge::cuda::access;
using membridge::cuda::device;
using membridge::cuda::growable_buffer;
using membridge::cuda::growable_buffer_options;
using membridge::testing::join;

class multi_gpu_buffer_test : public membridge::testing::three_gpu_fake_test {
 protected:
  growable_buffer make(const device& owner, const growable_buffer_options& options) {
    return membridge::testing::value_or_failure(growable_buffer::create(owner, options));
  }

  /// Every chunk of `b` is mapped, lies on `expected[i]`'s memory (and chunk_info says so).
  void expect_placement(const growable_buffer& b, const std::vector<int>& expected) {
    ASSERT_EQ(b.chunk_count(), expected.size());
    for (std::size_t i = 0; i < expected.size(); ++i) {
      const auto c = b.chunk(i);
      EXPECT_EQ(c.device, expected[i]) << "chunk " << i;
      EXPECT_EQ(memory_location(b.address() + c.offset), expected[i]) << "chunk " << i;
    }
  }
};

// 2 MiB chunks (the fake's granularity), so chunk i is at offset 2 MiB * i.
constexpr membridge::cuda::chunk_policy two_mib{.growth_factor = 1.0, .max_chunk = 2_MiB};

TEST_F(multi_gpu_buffer_test, by_default_every_chunk_lies_on_the_buffers_gpu_and_access_names_the_set_in_one_call) {
  const std::size_t from = fake_.calls().size();
  auto b = make(d0_, {.size = 6_MiB, .max_size = 64_MiB, .chunks = two_mib,
                      .access = {{&d1_, access::read_write}, {&d2_, access::read}}});
  expect_placement(b, {0, 0, 0});
  const auto made = calls_since(from);
  EXPECT_EQ(std::count(made.begin(), made.end(), "cuMemSetAccess"), 3) << "one per chunk:" << join(made);
  for (std::size_t i = 0; i < 3; ++i) {
    const CUdeviceptr at = b.address() + b.chunk(i).offset;
    EXPECT_EQ(rights_of(at, 0), CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
    EXPECT_EQ(rights_of(at, 1), CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
    EXPECT_EQ(rights_of(at, 2), CU_MEM_ACCESS_FLAGS_PROT_READ);
  }
  EXPECT_EQ(b.access_devices(), (std::vector<int>{0, 1, 2}));
  EXPECT_TRUE(growable_buffer{}.access_devices().empty());
}

TEST_F(multi_gpu_buffer_test, round_robin_alternates_the_gpus_and_growth_continues_the_pattern) {
  auto b = make(d0_, {.size = 6_MiB, .max_size = 64_MiB, .chunks = two_mib,
                      .access = {{&d1_, access::read_write}},
                      .placement = {.devices = {&d0_, &d1_}}});
  expect_placement(b, {0, 1, 0});
  const CUdeviceptr base = b.address();
  const auto first = fake_.mappings_.at(base).physical_id;
  ASSERT_TRUE(b.grow(10_MiB));
  EXPECT_EQ(b.address(), base);
  EXPECT_EQ(fake_.mappings_.at(base).physical_id, first) << "old chunks stay where they are";
  expect_placement(b, {0, 1, 0, 1, 0});
  for (std::size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(rights_of(base + b.chunk(i).offset, 0), CU_MEM_ACCESS_FLAGS_PROT_READWRITE) << i;
    EXPECT_EQ(rights_of(base + b.chunk(i).offset, 1), CU_MEM_ACCESS_FLAGS_PROT_READWRITE) << i;
  }
  // A shrink and a regrow take the same GPUs again: placement follows the chunk index.
  ASSERT_TRUE(b.shrink(2_MiB));
  ASSERT_TRUE(b.grow(8_MiB));
  expect_placement(b, {0, 1, 0, 1});
}

TEST_F(multi_gpu_buffer_test, per_chunk_places_the_first_chunks_then_round_robin_takes_over) {
  // A buffer on GPU 1 whose memory is on GPUs 0 and 2 only.
  auto b = make(d1_, {.size = 4_MiB, .max_size = 64_MiB, .chunks = two_mib,
                      .placement = {.devices = {&d0_, &d2_}, .per_chunk = {1, 1, 0}}});
  expect_placement(b, {2, 2});
  ASSERT_TRUE(b.grow(10_MiB));  // chunk 2 from per_chunk, chunks 3 and 4 round-robin (3 % 2, 4 % 2)
  expect_placement(b, {2, 2, 0, 2, 0});
  for (std::size_t i = 0; i < 5; ++i) {
    const CUdeviceptr at = b.address() + b.chunk(i).offset;
    EXPECT_EQ(rights_of(at, 1), CU_MEM_ACCESS_FLAGS_PROT_READWRITE) << "the buffer's own GPU, chunk " << i;
    EXPECT_EQ(rights_of(at, 0), CU_MEM_ACCESS_FLAGS_PROT_NONE) << "a placement GPU gets no rights by itself";
  }
  EXPECT_EQ(b.access_devices(), std::vector<int>{1});
  // Moving keeps the placement for later growth.
  growable_buffer moved = std::move(b);
  ASSERT_TRUE(moved.grow(12_MiB));
  expect_placement(moved, {2, 2, 0, 2, 0, 2});
}

TEST_F(multi_gpu_buffer_test, a_gpu_pair_without_peer_access_is_refused_naming_both_before_anything_is_mapped) {
  fake_.no_peer_access = {{1, 0}};
  const auto clean = fake_.state();
  const std::size_t from = fake_.calls().size();
  // GPU 1 given access to memory on GPU 0.
  auto access_refused = growable_buffer::create(d0_, {.size = 4_MiB, .max_size = 64_MiB, .access = {{&d1_, access::read}}});
  ASSERT_FALSE(access_refused);
  EXPECT_EQ(access_refused.error().code(), errc::unsupported);
  const std::string text = access_refused.error().message();
  EXPECT_NE(text.find("device 1"), std::string::npos) << text;
  EXPECT_NE(text.find("device 0"), std::string::npos) << text;
  // The buffer's own GPU 1 using memory placed on GPU 0.
  auto placement_refused = growable_buffer::create(d1_, {.size = 4_MiB, .max_size = 64_MiB,
                                                         .placement = {.devices = {&d1_, &d0_}}});
  ASSERT_FALSE(placement_refused);
  EXPECT_EQ(placement_refused.error().code(), errc::unsupported);
  EXPECT_NE(placement_refused.error().message().find("device 0"), std::string::npos);
  const auto made = calls_since(from);
  EXPECT_EQ(std::count(made.begin(), made.end(), "cuMemAddressReserve"), 0) << join(made);
  EXPECT_EQ(std::count(made.begin(), made.end(), "cuMemCreate"), 0) << join(made);
  EXPECT_EQ(fake_.state(), clean);

  // An accessor other than the buffer's own is checked against every placement GPU: 2 -> 1 missing.
  fake_.no_peer_access = {{2, 1}};
  auto third = growable_buffer::create(d0_, {.size = 4_MiB, .max_size = 64_MiB, .access = {{&d2_, access::read}},
                                             .placement = {.devices = {&d0_, &d1_}}});
  ASSERT_FALSE(third);
  EXPECT_EQ(third.error().code(), errc::unsupported);
  EXPECT_NE(third.error().message().find("device 2"), std::string::npos) << third.error().message();
  EXPECT_NE(third.error().message().find("device 1"), std::string::npos) << third.error().message();
  EXPECT_EQ(fake_.state(), clean);
}

TEST_F(multi_gpu_buffer_test, bad_placement_and_access_lists_are_refused_before_any_driver_call) {
  const int calls = fake_.counted_calls();
  const auto refused = [&](const growable_buffer_options& options, const std::string& says) {
    auto b = growable_buffer::create(d0_, options);
    ASSERT_FALSE(b) << says;
    EXPECT_EQ(b.error().code(), errc::invalid_argument) << b.error().message();
    EXPECT_NE(b.error().message().find(says), std::string::npos) << b.error().message();
  };
  const device empty;
  refused({.max_size = 64_MiB, .placement = {.devices = {&d0_, nullptr}}}, "placement device 1 is empty");
  refused({.max_size = 64_MiB, .placement = {.devices = {&empty}}}, "placement device 0 is empty");
  refused({.max_size = 64_MiB, .placement = {.devices = {&d0_, &d1_}, .per_chunk = {0, 2}}}, "per_chunk[1] is 2");
  refused({.max_size = 64_MiB, .placement = {.per_chunk = {1}}}, "is 1 placement device");
  refused({.max_size = 64_MiB, .access = {{nullptr, access::read}}}, "access entry 0 names no device");
  refused({.max_size = 64_MiB, .access = {{&d1_, access::read}, {&d1_, access::read_write}}}, "named twice");
  refused({.max_size = 64_MiB, .access = {{&d0_, access::read}}}, "the buffer's own device");
  EXPECT_EQ(fake_.counted_calls(), calls);
  // per_chunk index 0 with no device list names the buffer's own device: fine.
  auto own = make(d0_, {.size = 2_MiB, .max_size = 64_MiB, .placement = {.per_chunk = {0}}});
  expect_placement(own, {0});
}

TEST_F(multi_gpu_buffer_test, teardown_waits_once_per_gpu_with_access_before_the_unmaps) {
  auto b = make(d0_, {.size = 8_MiB, .max_size = 64_MiB, .chunks = two_mib,
                      .access = {{&d2_, access::read}},
                      .placement = {.devices = {&d0_, &d1_, &d2_}}});
  ASSERT_EQ(b.chunk_count(), 4U);
  std::size_t synced = fake_.synchronized_devices().size();
  ASSERT_TRUE(b.shrink(2_MiB));  // three chunks go: one wait on GPU 0, one on GPU 2 (GPU 1 has no rights)
  EXPECT_EQ(std::vector<int>(fake_.synchronized_devices().begin() + static_cast<std::ptrdiff_t>(synced),
                             fake_.synchronized_devices().end()),
            (std::vector<int>{0, 2}));
  ASSERT_TRUE(b.grow(8_MiB));
  synced = fake_.synchronized_devices().size();
  const std::size_t from = fake_.calls().size();
  b = growable_buffer{};
  EXPECT_EQ(std::vector<int>(fake_.synchronized_devices().begin() + static_cast<std::ptrdiff_t>(synced),
                             fake_.synchronized_devices().end()),
            (std::vector<int>{0, 2}));
  const auto made = calls_since(from);
  EXPECT_EQ(std::count(made.begin(), made.end(), "cuMemUnmap"), 4) << join(made);
  const auto last_sync = std::find(made.rbegin(), made.rend(), "cuCtxSynchronize");
  const auto first_unmap = std::find(made.begin(), made.end(), "cuMemUnmap");
  EXPECT_LT(made.rend() - last_sync - 1, first_unmap - made.begin()) << "every wait comes before the unmaps";
  EXPECT_TRUE(fake_.state().mappings.empty());
}

TEST_F(multi_gpu_buffer_test, a_failed_wait_on_the_second_gpu_refuses_the_shrink_and_keeps_the_chunks) {
  auto b = make(d0_, {.size = 6_MiB, .max_size = 64_MiB, .chunks = two_mib, .access = {{&d1_, access::read}},
                      .placement = {.devices = {&d0_, &d1_}}});
  const auto before = fake_.state();
  fake_.fail_function("cuCtxSynchronize", CUDA_ERROR_LAUNCH_FAILED, 2);
  const auto r = b.shrink(2_MiB);
  fake_.clear_failures();
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message().find("device 1"), std::string::npos) << r.error().message();
  EXPECT_EQ(fake_.state(), before) << "nothing unmapped when a wait fails";
  EXPECT_EQ(b.chunk_count(), 3U);
  EXPECT_EQ(b.capacity(), 6_MiB);
}

TEST_F(multi_gpu_buffer_test, a_failure_at_every_step_of_a_spread_create_leaks_nothing) {
  const auto clean = fake_.state();
  int k = 0;
  for (;; ++k) {
    fake_.fail_nth_call(k, CUDA_ERROR_OUT_OF_MEMORY);
    {
      auto b = growable_buffer::create(d0_, {.size = 6_MiB, .max_size = 64_MiB, .chunks = two_mib,
                                             .access = {{&d1_, access::read_write}, {&d2_, access::read}},
                                             .placement = {.devices = {&d1_, &d2_}, .per_chunk = {0, 0}}});
      if (!fake_.injection_fired()) {
        fake_.clear_failures();
        ASSERT_TRUE(b) << b.error().message();
        expect_placement(*b, {1, 1, 1});
        break;
      }
      ASSERT_FALSE(b) << "step " << k << " (" << fake_.failed_function() << ")";
    }
    EXPECT_EQ(fake_.state(), clean) << "step " << k << " (" << fake_.failed_function() << ")";
    ASSERT_TRUE(fake_.misuse().empty()) << "step " << k << join(fake_.misuse());
  }
  fake_.clear_failures();
  EXPECT_GE(k, 15) << "too few steps: peer checks, granularities, reserve, three creates, maps and access calls";
}

TEST_F(multi_gpu_buffer_test, a_failure_at_every_step_of_a_mixed_growth_leaves_the_buffer_as_it_was) {
  auto b = make(d0_, {.size = 2_MiB, .max_size = 64_MiB, .chunks = two_mib, .access = {{&d1_, access::read_write}},
                      .placement = {.devices = {&d0_, &d1_}, .per_chunk = {1}}});
  expect_placement(b, {1});
  const auto before = fake_.state();
  int k = 0;
  for (;; ++k) {
    fake_.fail_nth_call(k, CUDA_ERROR_OUT_OF_MEMORY);
    const auto r = b.grow(8_MiB);
    if (!fake_.injection_fired()) {
      fake_.clear_failures();
      ASSERT_TRUE(r) << r.error().message();
      break;
    }
    const std::string step = "step " + std::to_string(k) + " (" + fake_.failed_function() + ")";
    ASSERT_FALSE(r) << step;
    EXPECT_EQ(r.error().code(), errc::out_of_memory) << step;
    EXPECT_EQ(fake_.state(), before) << step;
    EXPECT_EQ(b.size(), 2_MiB) << step;
    EXPECT_EQ(b.capacity(), 2_MiB) << step;
    EXPECT_EQ(b.chunk_count(), 1U) << step;
    ASSERT_TRUE(fake_.misuse().empty()) << step << join(fake_.misuse());
  }
  fake_.clear_failures();
  EXPECT_GE(k, 9) << "too few steps: three chunks, each created, mapped and given access";
  expect_placement(b, {1, 1, 0, 1});
}

}  // namespace
