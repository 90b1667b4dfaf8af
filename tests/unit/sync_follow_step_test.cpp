// sync::plan_follow_step (the policy that decides when to map and import ahead of need) and the
// follow step it drives, on the scripted CUDA driver with a scripted view: bounded work per step,
// growth within the headroom costs no driver call, and a failure at every step (the driver's or the
// view's) leaves the view, the buffer and the driver as they were, with no fd left open.
#include "fake_driver_test.hpp"

#include "sync/detail/follow_chunks.hpp"

#include <membridge/core/units.hpp>
#include <membridge/cuda/growable_buffer.hpp>
#include <membridge/sync/follow_plan.hpp>

#include <gtest/gtest.h>

#include <fcntl.h>

#include <cmath>
#include <limits>
#include <vector>

namespace {

using namespace membridge::literals;
using membridge::errc;
using membridge::cuda::chunk_policy;
using membridge::cuda::growable_buffer;
using membridge::sync::follow_action;
using membridge::sync::follow_options;
using membridge::sync::follow_state;
using membridge::sync::plan_follow_step;

// A graphics view as chunked_buffer presents it to the follow step: imports in order, can be told to
// fail its next append or truncate. Each append checks that it got a live fd (and takes no ownership).
class scripted_view {
 public:
  explicit scripted_view(std::size_t reserved) : reserved_(reserved) {}
  [[nodiscard]] bool valid() const noexcept { return true; }
  [[nodiscard]] std::size_t reserved_size() const noexcept { return reserved_; }
  [[nodiscard]] std::size_t chunk_count() const noexcept { return chunks_.size(); }
  [[nodiscard]] std::size_t size() const noexcept {
    std::size_t s = 0;
    for (const auto& c : chunks_) s += c.second;
    return s;
  }
  membridge::result<void> append(membridge::os::borrowed_fd fd, std::size_t offset, std::size_t size) {
    ++appends_;
    if (fcntl(fd.get(), F_GETFD) < 0) return membridge::error(errc::invalid_argument, "append", "dead fd");
    if (offset != this->size()) return membridge::error(errc::invalid_argument, "append", "out of order");
    if (fail_next_) {
      fail_next_ = false;
      return membridge::error(errc::out_of_memory, "vkAllocateMemory", "scripted failure");
    }
    chunks_.emplace_back(offset, size);
    return membridge::ok();
  }
  membridge::result<void> truncate(std::size_t count) {
    if (fail_next_) {
      fail_next_ = false;
      return membridge::error(errc::device_lost, "vkQueueBindSparse", "scripted failure");
    }
    chunks_.resize(count);
    return membridge::ok();
  }
  void fail_next() { fail_next_ = true; }
  [[nodiscard]] const std::vector<std::pair<std::size_t, std::size_t>>& chunks() const { return chunks_; }
  [[nodiscard]] int appends() const noexcept { return appends_; }

 private:
  std::size_t reserved_;
  std::vector<std::pair<std::size_t, std::size_t>> chunks_;
  bool fail_next_ = false;
  int appends_ = 0;
};

constexpr follow_options one_doubling_ahead{.headroom = 0, .headroom_fraction = 1.0};

// ----------------------------------------------------------------------------- the policy itself ---

TEST(plan_follow_step, drops_first_then_imports_then_reserves_one_chunk) {
  const chunk_policy policy{};  // doubling, no cap
  follow_state s{.size = 64_MiB, .capacity = 64_MiB, .max_size = 1_GiB, .granularity = 2_MiB, .buffer_chunks = 1,
                 .view_chunks = 2};
  EXPECT_EQ(plan_follow_step(s, one_doubling_ahead, policy).value().action, follow_action::dropped);
  s.view_chunks = 0;
  EXPECT_EQ(plan_follow_step(s, one_doubling_ahead, policy).value().action, follow_action::imported);
  s.view_chunks = 1;
  const auto reserve = plan_follow_step(s, one_doubling_ahead, policy).value();
  EXPECT_EQ(reserve.action, follow_action::reserved);
  EXPECT_EQ(reserve.reserve_to, 128_MiB) << "the next doubling, as one chunk";
  s.capacity = 128_MiB;
  s.buffer_chunks = 2;
  s.view_chunks = 2;
  EXPECT_EQ(plan_follow_step(s, one_doubling_ahead, policy).value().action, follow_action::none);
}

TEST(plan_follow_step, maps_one_capped_chunk_per_step_and_stops_at_max_size) {
  const chunk_policy policy{.growth_factor = 2.0, .min_chunk = 0, .max_chunk = 32_MiB};
  follow_state s{.size = 96_MiB, .capacity = 96_MiB, .max_size = 160_MiB, .granularity = 2_MiB,
                 .buffer_chunks = 3, .view_chunks = 3};
  const auto d = plan_follow_step(s, one_doubling_ahead, policy).value();
  EXPECT_EQ(d.action, follow_action::reserved);
  EXPECT_EQ(d.reserve_to, 128_MiB) << "one chunk of max_chunk, not the whole headroom";
  s.capacity = 160_MiB;
  EXPECT_EQ(plan_follow_step(s, one_doubling_ahead, policy).value().action, follow_action::none)
      << "capacity is at max_size: nothing more to map";
}

TEST(plan_follow_step, without_headroom_it_only_follows_what_is_mapped) {
  const follow_state s{.size = 10_MiB, .capacity = 16_MiB, .max_size = 1_GiB, .granularity = 2_MiB,
                       .buffer_chunks = 2, .view_chunks = 2};
  EXPECT_EQ(plan_follow_step(s, {}, chunk_policy{}).value().action, follow_action::none);
  const follow_options bytes{.headroom = 8_MiB, .headroom_fraction = 0.0};
  const auto d = plan_follow_step(s, bytes, chunk_policy{}).value();
  EXPECT_EQ(d.action, follow_action::reserved);
  EXPECT_GE(d.reserve_to, 18_MiB);
}

TEST(plan_follow_step, rejects_bad_headroom_and_bad_policies) {
  const follow_state s{.size = 8_MiB, .capacity = 8_MiB, .max_size = 64_MiB, .granularity = 2_MiB,
                       .buffer_chunks = 1, .view_chunks = 1};
  for (const double f : {-1.0, std::nan(""), std::numeric_limits<double>::infinity()}) {
    const auto r = plan_follow_step(s, {.headroom = 0, .headroom_fraction = f}, chunk_policy{});
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code(), errc::invalid_argument);
  }
  const auto bad = plan_follow_step(s, one_doubling_ahead, chunk_policy{.growth_factor = 0.5});
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code(), errc::invalid_argument);
  const follow_options huge{.headroom = std::numeric_limits<std::size_t>::max(), .headroom_fraction = 1e300};
  const auto capped = plan_follow_step(s, huge, chunk_policy{}).value();
  EXPECT_EQ(capped.action, follow_action::reserved);
  EXPECT_LE(capped.reserve_to, 64_MiB) << "never past max_size";
}

// ------------------------------------------------------- the step on the scripted driver and view ---

class follow_step_test : public membridge::testing::fake_driver_test {
 protected:
  growable_buffer make(std::size_t size, std::size_t max_chunk) {
    return membridge::testing::value_or_failure(
        growable_buffer::create(dev_, {.size = size, .max_size = 1_GiB, .chunks = {.max_chunk = max_chunk}}));
  }
  // Steps until nothing is left to do; returns the actions taken.
  std::vector<follow_action> settle(scripted_view& view, growable_buffer& b, const follow_options& o) {
    std::vector<follow_action> actions;
    for (int i = 0; i < 100; ++i) {
      auto a = membridge::sync::detail::follow_one_step(view, b, o);
      if (!a) {
        ADD_FAILURE() << a.error().message();
        break;
      }
      if (*a == follow_action::none) break;
      actions.push_back(*a);
    }
    return actions;
  }
  void TearDown() override {
    dev_ = {};
    fake_driver_test::TearDown();
  }
  membridge::cuda::device dev_ = open_device();
};

TEST_F(follow_step_test, the_next_doubling_is_mapped_and_imported_before_the_buffer_grows_into_it) {
  auto b = make(32_MiB, 32_MiB);
  scripted_view view(b.max_size());
  // Import what is mapped, then map + import one 32 MiB chunk per step up to 2 x size.
  const auto first = settle(view, b, one_doubling_ahead);
  EXPECT_EQ(first, (std::vector{follow_action::imported, follow_action::reserved, follow_action::imported}));
  EXPECT_EQ(b.size(), 32_MiB);
  EXPECT_EQ(b.capacity(), 64_MiB);
  EXPECT_EQ(view.size(), 64_MiB) << "the view covers the headroom before it is needed";
  // Growing within the headroom makes no driver call at all.
  const int calls = fake_.counted_calls();
  ASSERT_TRUE(b.grow(64_MiB));
  EXPECT_EQ(fake_.counted_calls(), calls) << "grow() within the reserved headroom must not call the driver";
  EXPECT_GE(view.size(), b.size()) << "the renderer can draw the new size at once";
  // The step after that prepares the next doubling, one capped chunk per call.
  const auto second = settle(view, b, one_doubling_ahead);
  EXPECT_EQ(second, (std::vector{follow_action::reserved, follow_action::imported, follow_action::reserved,
                                 follow_action::imported}));
  EXPECT_EQ(view.size(), 128_MiB);
  for (std::size_t i = 0; i < view.chunks().size(); ++i) {
    EXPECT_EQ(view.chunks()[i].first, b.chunk(i).offset);
    EXPECT_EQ(view.chunks()[i].second, b.chunk(i).size);
  }
}

TEST_F(follow_step_test, a_shrink_is_followed_by_dropping_chunks_first) {
  auto b = make(96_MiB, 32_MiB);
  scripted_view view(b.max_size());
  (void)settle(view, b, {});
  ASSERT_EQ(view.chunk_count(), 3U);
  ASSERT_TRUE(b.shrink(40_MiB));
  ASSERT_EQ(b.chunk_count(), 2U);
  const auto a = membridge::sync::detail::follow_one_step(view, b, {});
  ASSERT_TRUE(a) << a.error().message();
  EXPECT_EQ(*a, follow_action::dropped);
  EXPECT_EQ(view.chunk_count(), 2U);
  EXPECT_EQ(view.size(), 64_MiB);
}

TEST_F(follow_step_test, a_view_of_another_buffer_is_refused) {
  auto b = make(64_MiB, 0);
  scripted_view view(b.max_size());
  const auto exported = b.export_chunk(0);
  ASSERT_TRUE(exported) << exported.error().message();
  ASSERT_TRUE(view.append(exported->fd, 0, 32_MiB));  // not b's chunk size
  const auto a = membridge::sync::detail::follow_one_step(view, b, one_doubling_ahead);
  ASSERT_FALSE(a);
  EXPECT_EQ(a.error().code(), errc::invalid_argument);
  scripted_view small(512_MiB);
  const auto r = membridge::sync::detail::follow_one_step(small, b, {});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), errc::invalid_argument) << "a view reserving less than the buffer";
}

TEST_F(follow_step_test, a_driver_failure_at_every_step_leaves_view_and_buffer_as_they_were) {
  auto b = make(32_MiB, 32_MiB);
  scripted_view view(b.max_size());
  (void)settle(view, b, {});  // the view covers the mapped 32 MiB
  int k = 0;
  for (;; ++k) {
    const auto driver_before = fake_.state();
    const std::size_t capacity = b.capacity();
    const std::size_t view_size = view.size();
    fake_.fail_nth_call(k, CUDA_ERROR_OUT_OF_MEMORY);
    const auto a = membridge::sync::detail::follow_one_step(view, b, one_doubling_ahead);
    if (!fake_.injection_fired()) {
      fake_.clear_failures();
      ASSERT_TRUE(a) << a.error().message();
      EXPECT_EQ(*a, follow_action::reserved);
      break;
    }
    ASSERT_FALSE(a) << "step " << k << " failed but follow_step reported success";
    EXPECT_EQ(fake_.state(), driver_before) << "step " << k << " (" << fake_.failed_function() << ")";
    EXPECT_EQ(b.capacity(), capacity);
    EXPECT_EQ(b.size(), 32_MiB);
    EXPECT_EQ(view.size(), view_size);
    ASSERT_TRUE(fake_.misuse().empty()) << membridge::testing::join(fake_.misuse());
  }
  EXPECT_GE(k, 3) << "the reserve step must have covered create, map and access";
  // The export + import step: the driver's export fails, then the view's import fails.
  for (int j = 0;; ++j) {
    const auto before = fake_.state();
    fake_.fail_nth_call(j, CUDA_ERROR_INVALID_VALUE);
    const auto a = membridge::sync::detail::follow_one_step(view, b, one_doubling_ahead);
    if (!fake_.injection_fired()) {
      fake_.clear_failures();
      ASSERT_TRUE(a) << a.error().message();
      break;
    }
    ASSERT_FALSE(a);
    EXPECT_EQ(fake_.state(), before);
    EXPECT_EQ(view.chunk_count(), 1U);
  }
  ASSERT_EQ(view.chunk_count(), 2U);
  ASSERT_TRUE(view.truncate(1));
  view.fail_next();
  const auto failed = membridge::sync::detail::follow_one_step(view, b, one_doubling_ahead);
  ASSERT_FALSE(failed);
  EXPECT_EQ(failed.error().code(), errc::out_of_memory);
  EXPECT_NE(failed.error().message().find("chunk 1 of 2"), std::string::npos) << failed.error().message();
  EXPECT_EQ(view.chunk_count(), 1U) << "a failed import leaves the view as it was";
  EXPECT_EQ(b.capacity(), 64_MiB);
}

}  // namespace
