#include <membridge/core/units.hpp>
#include <membridge/cuda/chunk_policy.hpp>

#include <gtest/gtest.h>

#include <limits>
#include <numeric>
#include <vector>

namespace {

using namespace membridge::literals;
using membridge::errc;
using membridge::cuda::chunk_policy;
using membridge::cuda::plan_growth;
using sizes = std::vector<std::size_t>;

constexpr std::size_t g = 2_MiB;

sizes plan(const chunk_policy& p, std::size_t capacity, std::size_t required, std::size_t max_size = 64_GiB) {
  auto r = plan_growth(p, capacity, required, max_size, g);
  EXPECT_TRUE(r) << r.error().message();
  return r ? *r : sizes{};
}

TEST(chunk_policy, doubling_adds_one_chunk_equal_to_the_current_capacity) {
  EXPECT_EQ(plan({}, 64_MiB, 128_MiB), sizes{64_MiB});
  EXPECT_EQ(plan({}, 2_GiB, 4_GiB), sizes{2_GiB});
}

TEST(chunk_policy, a_small_grow_still_grows_geometrically) {
  EXPECT_EQ(plan({}, 64_MiB, 64_MiB + 1), sizes{64_MiB});
  EXPECT_EQ(plan({.growth_factor = 1.5}, 64_MiB, 64_MiB + 1), sizes{32_MiB});
}

TEST(chunk_policy, a_large_grow_maps_what_is_asked_in_one_chunk) {
  EXPECT_EQ(plan({}, 64_MiB, 1_GiB), sizes{1_GiB - 64_MiB});
  EXPECT_EQ(plan({}, 0, 3_MiB), sizes{4_MiB});  // from empty: the request, rounded to granules
}

TEST(chunk_policy, growth_factor_one_maps_exactly_rounded_to_the_granularity) {
  EXPECT_EQ(plan({.growth_factor = 1.0}, 64_MiB, 65_MiB), sizes{2_MiB});
  EXPECT_EQ(plan({.growth_factor = 1.0}, 64_MiB, 66_MiB), sizes{2_MiB});
}

TEST(chunk_policy, min_chunk_raises_small_steps) {
  EXPECT_EQ(plan({.growth_factor = 1.0, .min_chunk = 32_MiB}, 64_MiB, 65_MiB), sizes{32_MiB});
  EXPECT_EQ(plan({.growth_factor = 1.0, .min_chunk = 3_MiB}, 0, 1), sizes{4_MiB});  // rounded to granules
}

TEST(chunk_policy, max_chunk_splits_large_steps) {
  EXPECT_EQ(plan({.max_chunk = 256_MiB}, 512_MiB, 1_GiB), (sizes{256_MiB, 256_MiB}));
  EXPECT_EQ(plan({.growth_factor = 1.0, .max_chunk = 256_MiB}, 0, 600_MiB), (sizes{256_MiB, 256_MiB, 88_MiB}));
}

TEST(chunk_policy, nothing_to_do_when_capacity_suffices) {
  EXPECT_TRUE(plan({}, 64_MiB, 10_MiB).empty());
  EXPECT_TRUE(plan({}, 64_MiB, 64_MiB).empty());
}

TEST(chunk_policy, never_plans_past_the_reserved_range) {
  // Doubling 3 GiB would give 6 GiB; the range holds 4 GiB, so growth stops there.
  EXPECT_EQ(plan({}, 3_GiB, 3_GiB + 1, 4_GiB), sizes{1_GiB});
  EXPECT_EQ(plan({}, 4_GiB - 2_MiB, 4_GiB, 4_GiB), sizes{2_MiB});
  // A max_size that is not a granule multiple is rounded down.
  EXPECT_EQ(plan({}, 2_MiB, 4_MiB, 5_MiB), sizes{2_MiB});
}

TEST(chunk_policy, a_request_past_the_range_is_out_of_memory) {
  const auto r = plan_growth({}, 64_MiB, 4_GiB + 1, 4_GiB, g);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), errc::out_of_memory);
  EXPECT_NE(r.error().message().find("address range is full"), std::string::npos) << r.error().message();
  const auto odd = plan_growth({}, 2_MiB, 5_MiB, 5_MiB, g);  // 5 MiB fits max_size but not in whole granules
  ASSERT_FALSE(odd);
  EXPECT_EQ(odd.error().code(), errc::out_of_memory);
}

TEST(chunk_policy, huge_capacities_do_not_overflow) {
  const std::size_t max = std::numeric_limits<std::size_t>::max() / g * g;
  const auto r = plan_growth({.growth_factor = 3.0}, max / 2 / g * g, max / 2 / g * g + 1, max, g);
  ASSERT_TRUE(r) << r.error().message();
  const std::size_t total = std::accumulate(r->begin(), r->end(), std::size_t{0});
  EXPECT_LE(total, max - max / 2 / g * g);
}

TEST(chunk_policy, every_planned_chunk_is_a_positive_granule_multiple) {
  for (double factor : {1.0, 1.25, 2.0, 3.7}) {
    for (std::size_t cap = 0; cap <= 64_MiB; cap += 6_MiB) {
      for (std::size_t need : {cap + 1, cap + 5_MiB + 3, cap + 100_MiB}) {
        const auto r = plan_growth({.growth_factor = factor, .max_chunk = 16_MiB}, cap, need, 1_GiB, g);
        ASSERT_TRUE(r) << r.error().message();
        std::size_t total = cap;
        for (std::size_t s : *r) {
          EXPECT_GT(s, 0u);
          EXPECT_EQ(s % g, 0u);
          EXPECT_LE(s, 16_MiB);
          total += s;
        }
        EXPECT_GE(total, need);
        EXPECT_LE(total, 1_GiB);
      }
    }
  }
}

TEST(chunk_policy, bad_policies_are_invalid_arguments) {
  EXPECT_EQ(plan_growth({.growth_factor = 0.5}, 0, 1, 1_GiB, g).error().code(), errc::invalid_argument);
  EXPECT_EQ(plan_growth({.growth_factor = std::numeric_limits<double>::quiet_NaN()}, 0, 1, 1_GiB, g).error().code(),
            errc::invalid_argument);
  EXPECT_EQ(plan_growth({.max_chunk = 3_MiB}, 0, 1, 1_GiB, g).error().code(), errc::invalid_argument);
  EXPECT_EQ(plan_growth({.min_chunk = 64_MiB, .max_chunk = 32_MiB}, 0, 1, 1_GiB, g).error().code(),
            errc::invalid_argument);
  EXPECT_EQ(plan_growth({}, 0, 1, 1_GiB, 3_MiB).error().code(), errc::invalid_argument);  // not a power of two
  EXPECT_EQ(plan_growth({}, 3_MiB, 8_MiB, 1_GiB, g).error().code(), errc::invalid_argument);  // odd capacity
  EXPECT_TRUE(membridge::cuda::validate({}, g));
}

}  // namespace
