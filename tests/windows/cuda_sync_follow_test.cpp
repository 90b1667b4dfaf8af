// The sync module's cuda-only part on Windows: a cuda::imported_buffer following a growable_buffer
// through NT handles (sync::detail::follow_chunks and follow_one_step, driven by plan_follow_step), on
// the scripted driver. The exported handles are closed after each import (the view borrows them), so
// the binary's handle-count listener sees none left over.
#include "fake_driver_test.hpp"

#include "sync/detail/follow_chunks.hpp"

#include <membridge/core/units.hpp>
#include <membridge/cuda/growable_buffer.hpp>
#include <membridge/cuda/imported_buffer.hpp>
#include <membridge/sync/follow_plan.hpp>

#include <gtest/gtest.h>

namespace {

using namespace membridge::literals;
using membridge::cuda::growable_buffer;
using membridge::cuda::imported_buffer;
using membridge::sync::follow_action;

class sync_follow_win32_test : public membridge::testing::fake_driver_test {
 protected:
  void SetUp() override { dev_ = open_device(); }
  void TearDown() override {
    dev_ = {};
    fake_driver_test::TearDown();
  }

  // Every chunk of the view is the buffer's physical memory at the same offset.
  void expect_mirrors(const imported_buffer& view, const growable_buffer& buffer) {
    const auto state = fake_.state();
    ASSERT_EQ(view.chunk_count(), buffer.chunk_count());
    for (std::size_t i = 0; i < buffer.chunk_count(); ++i) {
      const auto c = buffer.chunk(i);
      const auto mine = state.mappings.find(view.address() + c.offset);
      const auto theirs = state.mappings.find(buffer.address() + c.offset);
      ASSERT_NE(mine, state.mappings.end()) << "chunk " << i;
      ASSERT_NE(theirs, state.mappings.end()) << "chunk " << i;
      EXPECT_EQ(mine->second.physical_id, theirs->second.physical_id) << "chunk " << i;
    }
  }

  // The view's size is its owner's to set (imported_buffer::set_size); a follower shows all it has.
  void show_all(imported_buffer& view) { ASSERT_TRUE(view.set_size(view.capacity())); }

  membridge::cuda::device dev_;
};

TEST_F(sync_follow_win32_test, follow_chunks_imports_growth_and_drops_after_a_shrink) {
  auto buffer = growable_buffer::create(dev_, {.size = 64_MiB, .max_size = 1_GiB});
  ASSERT_TRUE(buffer) << buffer.error().message();
  auto view = imported_buffer::reserve(dev_, buffer->max_size());
  ASSERT_TRUE(view) << view.error().message();
  auto changed = membridge::sync::detail::follow_chunks(*view, *buffer);
  ASSERT_TRUE(changed) << changed.error().message();
  EXPECT_TRUE(*changed);
  show_all(*view);
  ASSERT_TRUE(buffer->grow(300_MiB));
  changed = membridge::sync::detail::follow_chunks(*view, *buffer);
  ASSERT_TRUE(changed) << changed.error().message();
  EXPECT_TRUE(*changed);
  expect_mirrors(*view, *buffer);
  show_all(*view);
  changed = membridge::sync::detail::follow_chunks(*view, *buffer);
  ASSERT_TRUE(changed) << changed.error().message();
  EXPECT_FALSE(*changed) << "nothing new";
  ASSERT_TRUE(buffer->shrink(64_MiB));
  changed = membridge::sync::detail::follow_chunks(*view, *buffer);
  ASSERT_TRUE(changed) << changed.error().message();
  EXPECT_TRUE(*changed);
  expect_mirrors(*view, *buffer);
}

TEST_F(sync_follow_win32_test, follow_one_step_maps_ahead_and_imports_one_chunk_at_a_time) {
  auto buffer = growable_buffer::create(dev_, {.size = 64_MiB, .max_size = 1_GiB});
  ASSERT_TRUE(buffer) << buffer.error().message();
  auto view = imported_buffer::reserve(dev_, buffer->max_size());
  ASSERT_TRUE(view) << view.error().message();
  const membridge::sync::follow_options ahead{.headroom = 0, .headroom_fraction = 1.0};
  auto step = membridge::sync::detail::follow_one_step(*view, *buffer, ahead);
  ASSERT_TRUE(step) << step.error().message();
  EXPECT_EQ(*step, follow_action::imported) << "what is needed now comes first";
  show_all(*view);
  step = membridge::sync::detail::follow_one_step(*view, *buffer, ahead);
  ASSERT_TRUE(step) << step.error().message();
  EXPECT_EQ(*step, follow_action::reserved) << "then one chunk ahead of need";
  EXPECT_GE(buffer->capacity(), 128_MiB);
  step = membridge::sync::detail::follow_one_step(*view, *buffer, ahead);
  ASSERT_TRUE(step) << step.error().message();
  EXPECT_EQ(*step, follow_action::imported);
  show_all(*view);
  expect_mirrors(*view, *buffer);
  const std::size_t calls = fake_.calls().size();
  ASSERT_TRUE(buffer->grow(128_MiB));
  EXPECT_EQ(fake_.calls().size(), calls) << "growth within the headroom makes no driver call";
}

}  // namespace
