// sync::cross_gpu_link on the scripted driver modelling two GPUs (peer access or not): the mode it
// picks, the staged fallback, the clear refusal of a peer mode without peer access, the exact order
// of events, waits and copies per frame in each mode, the begin/end pairing, and a failure at every
// driver step of create and of a frame leaving nothing behind (and the slots' access unchanged).
#include "fake_driver_test.hpp"

#include <membridge/core/units.hpp>
#include <membridge/cuda/growable_buffer.hpp>
#include <membridge/sync/cross_gpu_link.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <string>
#include <vector>

namespace {

using namespace membridge::literals;
using membridge::errc;
using membridge::cuda::device;
using membridge::cuda::growable_buffer;
using membridge::sync::cross_gpu_link;
using membridge::sync::cross_gpu_mode;
using membridge::testing::fake_cuda;
using op = fake_cuda::stream_op;

constexpr std::size_t slot_bytes = 2_MiB;
constexpr std::uint32_t slot_count = 2;
constexpr CUstream producer_stream = nullptr;  // the producer's stream: the legacy default stream of B

class cross_gpu_link_test : public membridge::testing::fake_driver_test {
 protected:
  void SetUp() override {
    fake_.device_count = 2;
  }

  void TearDown() override {
    slots_memory_ = {};
    render_ = {};
    producer_ = {};
    fake_driver_test::TearDown();
  }

  // Opens A (device 0) and B (device 1) and the ring's slots on A.
  void open_devices() {
    render_ = open_device(0);
    producer_ = open_device(1);
    auto buffer = growable_buffer::create(render_, {.size = slot_count * slot_bytes, .max_size = slot_count * slot_bytes});
    ASSERT_TRUE(buffer) << buffer.error().message();
    slots_memory_ = std::move(buffer).value();
    slots_ = {slots_memory_.address(), slots_memory_.address() + slot_bytes};
  }


  membridge::result<cross_gpu_link> make(cross_gpu_mode mode) {
    return cross_gpu_link::create(render_, producer_, slots_, slot_bytes, {.mode = mode});
  }

  // B's rights on the slot memory (0 when never granted).
  int producer_rights() const {
    const auto& maps = fake_.state().mappings;
    const auto m = maps.find(slots_memory_.address());
    if (m == maps.end()) return -1;
    const auto p = m->second.peers.find(1);
    return p == m->second.peers.end() ? 0 : p->second;
  }

  // The stream operations enqueued since `from`, without host synchronisations.
  std::vector<op> ops_since(std::size_t from) const {
    std::vector<op> out;
    for (std::size_t i = from; i < fake_.stream_ops_.size(); ++i)
      if (fake_.stream_ops_[i].what != "sync") out.push_back(fake_.stream_ops_[i]);
    return out;
  }

  // Runs frames [0, count) through open_slot/close_slot; returns the index in stream_ops_ where each began.
  std::vector<std::size_t> run_frames(cross_gpu_link& link, std::uint64_t count) {
    std::vector<std::size_t> starts;
    for (std::uint64_t n = 0; n < count; ++n) {
      starts.push_back(fake_.stream_ops_.size());
      auto target = link.open_slot(producer_stream, n);
      EXPECT_TRUE(target) << target.error().message();
      if (target) {
        EXPECT_EQ(*target, link.write_target(n));
      }
      auto closed = link.close_slot(producer_stream, n);
      EXPECT_TRUE(closed) << closed.error().message();
    }
    starts.push_back(fake_.stream_ops_.size());
    return starts;
  }

  device render_;
  device producer_;
  growable_buffer slots_memory_;
  std::vector<CUdeviceptr> slots_;
};

TEST_F(cross_gpu_link_test, automatic_picks_the_default_peer_mode_and_grants_the_producer_access) {
  open_devices();
  ASSERT_EQ(producer_rights(), 0);
  auto link = make(cross_gpu_mode::automatic);
  ASSERT_TRUE(link) << link.error().message();
  EXPECT_EQ(link->mode(), membridge::sync::default_cross_gpu_peer_mode);
  EXPECT_EQ(link->mode(), cross_gpu_mode::copy_engine);
  EXPECT_FALSE(link->staged());
  EXPECT_EQ(producer_rights(), CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
  EXPECT_EQ(link->slots(), slot_count);
  EXPECT_EQ(link->slot_bytes(), slot_bytes);
  EXPECT_NE(link->relay_stream(), nullptr);
  EXPECT_NE(link->copy_stream(), nullptr);
  // B's kernels write a buffer of B's, one slot per frame in the ring, never A's slots.
  EXPECT_NE(link->write_target(0), slots_[0]);
  EXPECT_EQ(link->write_target(1), link->write_target(0) + slot_bytes);
  EXPECT_EQ(link->write_target(2), link->write_target(0));
  EXPECT_EQ(fake_.events_.size(), 3U * slot_count);  // freed, written, moved per slot
  EXPECT_TRUE(fake_.host_sizes_.empty());
}

TEST_F(cross_gpu_link_test, without_peer_access_automatic_goes_through_pinned_host_memory) {
  fake_.no_peer_access = {{1, 0}};
  open_devices();
  auto link = make(cross_gpu_mode::automatic);
  ASSERT_TRUE(link) << link.error().message();
  EXPECT_EQ(link->mode(), cross_gpu_mode::staged);
  EXPECT_TRUE(link->staged());
  EXPECT_EQ(membridge::sync::to_string(link->mode()), "staged");
  EXPECT_EQ(producer_rights(), 0);  // nothing granted
  ASSERT_EQ(fake_.host_sizes_.size(), 1U);
  EXPECT_EQ(fake_.host_sizes_.begin()->second, slot_count * slot_bytes);
}

TEST_F(cross_gpu_link_test, peer_write_picks_a_slot_of_a_and_has_no_copy_stream) {
  open_devices();
  auto link = make(cross_gpu_mode::peer_write);
  ASSERT_TRUE(link) << link.error().message();
  EXPECT_EQ(link->mode(), cross_gpu_mode::peer_write);
  EXPECT_EQ(link->write_target(0), slots_[0]);
  EXPECT_EQ(link->write_target(3), slots_[1]);
  EXPECT_EQ(link->copy_stream(), nullptr);
  EXPECT_EQ(producer_rights(), CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
  EXPECT_EQ(fake_.events_.size(), 2U * slot_count);  // freed, written per slot
}

TEST_F(cross_gpu_link_test, a_peer_mode_without_peer_access_is_refused_naming_both_gpus) {
  fake_.no_peer_access = {{1, 0}};
  open_devices();
  const auto before = fake_.state();
  for (const cross_gpu_mode mode : {cross_gpu_mode::peer_write, cross_gpu_mode::copy_engine}) {
    auto link = make(mode);
    ASSERT_FALSE(link);
    EXPECT_EQ(link.error().code(), errc::unsupported);
    const std::string message = link.error().message();
    EXPECT_NE(message.find("device 1"), std::string::npos) << message;
    EXPECT_NE(message.find("device 0"), std::string::npos) << message;
  }
  EXPECT_EQ(fake_.state(), before);
  EXPECT_TRUE(fake_.events_.empty());
}

TEST_F(cross_gpu_link_test, bad_arguments_are_refused) {
  open_devices();
  EXPECT_EQ(cross_gpu_link::create(render_, render_, slots_, slot_bytes).error().code(), errc::invalid_argument);
  EXPECT_EQ(cross_gpu_link::create(render_, producer_, {}, slot_bytes).error().code(), errc::invalid_argument);
  EXPECT_EQ(cross_gpu_link::create(render_, producer_, slots_, 0).error().code(), errc::invalid_argument);
  const std::array<CUdeviceptr, 2> zero{slots_[0], 0};
  EXPECT_EQ(cross_gpu_link::create(render_, producer_, zero, slot_bytes).error().code(), errc::invalid_argument);
  EXPECT_EQ(cross_gpu_link::create(device{}, producer_, slots_, slot_bytes).error().code(),
            errc::invalid_argument);
  cross_gpu_link empty;
  EXPECT_FALSE(empty.valid());
  EXPECT_EQ(empty.open_slot(producer_stream, 0).error().code(), errc::invalid_argument);
  EXPECT_EQ(empty.close_slot(producer_stream, 0).error().code(), errc::invalid_argument);
  EXPECT_EQ(empty.synchronize().error().code(), errc::invalid_argument);
}

TEST_F(cross_gpu_link_test, peer_write_orders_each_frame_with_two_events) {
  open_devices();
  auto link = make(cross_gpu_mode::peer_write);
  ASSERT_TRUE(link) << link.error().message();
  const auto starts = run_frames(*link, 4);
  const CUstream relay = link->relay_stream();
  for (std::size_t n = 0; n < 4; ++n) {
    const auto ops = std::vector<op>(fake_.stream_ops_.begin() + static_cast<long>(starts[n]),
                                     fake_.stream_ops_.begin() + static_cast<long>(starts[n + 1]));
    ASSERT_EQ(ops.size(), 4U) << n;
    const CUevent freed = ops[0].event;
    const CUevent written = ops[2].event;
    EXPECT_EQ(ops[0], (op{"record", relay, freed, 0, 0, 0})) << n;            // A: the slot is free
    EXPECT_EQ(ops[1], (op{"wait", producer_stream, freed, 0, 0, 0})) << n;    // B writes only after that
    EXPECT_EQ(ops[2], (op{"record", producer_stream, written, 0, 0, 0})) << n;  // B: the frame is written
    EXPECT_EQ(ops[3], (op{"wait", relay, written, 0, 0, 0})) << n;            // A releases only after that
    EXPECT_NE(freed, written);
    if (n >= slot_count) {  // the same slot's events again
      EXPECT_EQ(freed, fake_.stream_ops_[starts[n - slot_count]].event);
    } else if (n == 1) {
      EXPECT_NE(freed, fake_.stream_ops_[starts[0]].event);
    }
  }
}

TEST_F(cross_gpu_link_test, copy_engine_moves_each_frame_on_the_copy_stream) {
  open_devices();
  auto link = make(cross_gpu_mode::copy_engine);
  ASSERT_TRUE(link) << link.error().message();
  const auto starts = run_frames(*link, 4);
  const CUstream relay = link->relay_stream();
  const CUstream copy = link->copy_stream();
  for (std::size_t n = 0; n < 4; ++n) {
    const auto ops = std::vector<op>(fake_.stream_ops_.begin() + static_cast<long>(starts[n]),
                                     fake_.stream_ops_.begin() + static_cast<long>(starts[n + 1]));
    const std::size_t reuse = n >= slot_count ? 1 : 0;  // B's buffer slot is waited for from its second use on
    ASSERT_EQ(ops.size(), 7U + reuse) << n;
    const CUevent freed = ops[0].event;
    const CUevent written = ops[1 + reuse].event;
    const CUevent moved = ops[5 + reuse].event;
    const std::uint32_t k = static_cast<std::uint32_t>(n % slot_count);
    EXPECT_EQ(ops[0], (op{"record", relay, freed, 0, 0, 0})) << n;
    if (reuse != 0) {
      EXPECT_EQ(ops[1], (op{"wait", producer_stream, moved, 0, 0, 0})) << n;  // the last copy out of B's slot
    }
    EXPECT_EQ(ops[1 + reuse], (op{"record", producer_stream, written, 0, 0, 0})) << n;
    EXPECT_EQ(ops[2 + reuse], (op{"wait", copy, written, 0, 0, 0})) << n;
    EXPECT_EQ(ops[3 + reuse], (op{"wait", copy, freed, 0, 0, 0})) << n;
    EXPECT_EQ(ops[4 + reuse], (op{"dtod", copy, nullptr, slots_[k], link->write_target(n), slot_bytes})) << n;
    EXPECT_EQ(ops[5 + reuse], (op{"record", copy, moved, 0, 0, 0})) << n;
    EXPECT_EQ(ops[6 + reuse], (op{"wait", relay, moved, 0, 0, 0})) << n;
  }
}

TEST_F(cross_gpu_link_test, staged_copies_through_host_memory_on_both_gpus) {
  fake_.no_peer_access = {{1, 0}, {0, 1}};
  open_devices();
  auto link = make(cross_gpu_mode::automatic);
  ASSERT_TRUE(link) << link.error().message();
  ASSERT_TRUE(link->staged());
  const auto host = static_cast<std::uint64_t>(fake_.host_sizes_.begin()->first);
  const auto starts = run_frames(*link, 3);
  const CUstream relay = link->relay_stream();
  const CUstream copy = link->copy_stream();
  for (std::size_t n = 0; n < 3; ++n) {
    const auto ops = std::vector<op>(fake_.stream_ops_.begin() + static_cast<long>(starts[n]),
                                     fake_.stream_ops_.begin() + static_cast<long>(starts[n + 1]));
    const std::size_t reuse = n >= slot_count ? 1 : 0;
    ASSERT_EQ(ops.size(), 8U + reuse) << n;
    const std::uint32_t k = static_cast<std::uint32_t>(n % slot_count);
    const std::uint64_t staging = host + k * slot_bytes;
    const CUevent freed = ops[0].event;
    const CUevent moved = ops[5 + reuse].event;
    EXPECT_EQ(ops[3 + reuse], (op{"wait", copy, freed, 0, 0, 0})) << n;  // A copied out of host slot k before
    EXPECT_EQ(ops[4 + reuse], (op{"dtoh", copy, nullptr, staging, link->write_target(n), slot_bytes})) << n;
    EXPECT_EQ(ops[5 + reuse], (op{"record", copy, moved, 0, 0, 0})) << n;
    EXPECT_EQ(ops[6 + reuse], (op{"wait", relay, moved, 0, 0, 0})) << n;
    EXPECT_EQ(ops[7 + reuse], (op{"htod", relay, nullptr, slots_[k], staging, slot_bytes})) << n;
  }
}

TEST_F(cross_gpu_link_test, the_timeline_calls_refuse_a_timeline_without_cuda_before_any_driver_call) {
  open_devices();
  auto link = make(cross_gpu_mode::copy_engine);
  ASSERT_TRUE(link) << link.error().message();
  const membridge::sync::frame_timeline none;  // empty: no CUDA producer
  const std::size_t before = fake_.stream_ops_.size();
  auto begun = link->begin_frame(none, producer_stream, 0);
  ASSERT_FALSE(begun);
  EXPECT_EQ(begun.error().code(), errc::invalid_argument);
  EXPECT_NE(begun.error().message().find("no CUDA producer"), std::string::npos) << begun.error().message();
  EXPECT_EQ(link->end_frame(none, producer_stream, 0).error().code(), errc::invalid_argument);
  EXPECT_EQ(fake_.stream_ops_.size(), before);
  cross_gpu_link empty;
  EXPECT_EQ(empty.begin_frame(none, producer_stream, 0).error().code(), errc::invalid_argument);
}

TEST_F(cross_gpu_link_test, frames_alternate_open_and_close) {
  open_devices();
  auto link = make(cross_gpu_mode::peer_write);
  ASSERT_TRUE(link) << link.error().message();
  EXPECT_EQ(link->close_slot(producer_stream, 0).error().code(), errc::invalid_argument);
  ASSERT_TRUE(link->open_slot(producer_stream, 0));
  auto twice = link->open_slot(producer_stream, 1);
  ASSERT_FALSE(twice);
  EXPECT_NE(twice.error().message().find("frame 0 is still open"), std::string::npos) << twice.error().message();
  EXPECT_EQ(link->close_slot(producer_stream, 1).error().code(), errc::invalid_argument);
  EXPECT_TRUE(link->close_slot(producer_stream, 0));
}

TEST_F(cross_gpu_link_test, destruction_waits_for_its_streams_and_frees_everything) {
  open_devices();
  for (const cross_gpu_mode mode : {cross_gpu_mode::peer_write, cross_gpu_mode::copy_engine, cross_gpu_mode::staged}) {
    auto link = make(mode);
    ASSERT_TRUE(link) << link.error().message();
    run_frames(*link, 3);
    const CUstream relay = link->relay_stream();
    const std::size_t before = fake_.stream_ops_.size();
    *link = cross_gpu_link{};
    EXPECT_FALSE(link->valid());
    const auto& ops = fake_.stream_ops_;
    EXPECT_NE(std::find(ops.begin() + static_cast<long>(before), ops.end(), op{"sync", relay, nullptr, 0, 0, 0}),
              ops.end())
        << to_string(mode);
    EXPECT_TRUE(fake_.events_.empty()) << to_string(mode);
    EXPECT_TRUE(fake_.host_sizes_.empty()) << to_string(mode);
    EXPECT_TRUE(fake_.streams_.empty()) << to_string(mode);
  }
}

TEST_F(cross_gpu_link_test, a_failure_at_every_step_of_create_leaves_nothing_behind) {
  for (const cross_gpu_mode mode : {cross_gpu_mode::peer_write, cross_gpu_mode::copy_engine, cross_gpu_mode::staged}) {
    open_devices();
    const auto before = fake_.state();
    int steps = 0;
    for (int n = 0;; ++n) {
      fake_.fail_nth_call(n, CUDA_ERROR_OUT_OF_MEMORY);
      auto link = make(mode);
      if (!fake_.injection_fired()) {
        fake_.clear_failures();
        ASSERT_TRUE(link) << link.error().message();
        steps = n;
        break;
      }
      ASSERT_FALSE(link) << to_string(mode) << " step " << n << " (" << fake_.failed_function() << ")";
      EXPECT_NE(link.error().message().find(fake_.failed_function()), std::string::npos) << link.error().message();
      EXPECT_EQ(fake_.state(), before) << to_string(mode) << " step " << n << " (" << fake_.failed_function() << ")";
      EXPECT_TRUE(fake_.events_.empty()) << n;
      EXPECT_TRUE(fake_.host_sizes_.empty()) << n;
      EXPECT_TRUE(fake_.streams_.empty()) << n;
    }
    EXPECT_GE(steps, 6) << to_string(mode);  // the loop reached every step
    slots_memory_ = {};
    render_ = {};
    producer_ = {};
  }
}

TEST_F(cross_gpu_link_test, a_failure_at_every_step_of_a_frame_names_the_call_and_leaks_nothing) {
  for (const cross_gpu_mode mode : {cross_gpu_mode::peer_write, cross_gpu_mode::copy_engine, cross_gpu_mode::staged}) {
    open_devices();
    for (int n = 0;; ++n) {
      auto link = make(mode);
      ASSERT_TRUE(link) << link.error().message();
      ASSERT_EQ(run_frames(*link, slot_count).size(), slot_count + 1U);  // the next frame reuses a slot
      fake_.fail_nth_call(n, CUDA_ERROR_LAUNCH_FAILED);
      auto opened = link->open_slot(producer_stream, slot_count);
      auto closed = opened ? link->close_slot(producer_stream, slot_count) : membridge::result<void>(opened.error());
      if (!fake_.injection_fired()) {
        fake_.clear_failures();
        EXPECT_TRUE(closed) << closed.error().message();
        EXPECT_GE(n, 4) << to_string(mode);
        break;
      }
      ASSERT_FALSE(closed) << to_string(mode) << " step " << n;
      EXPECT_NE(closed.error().message().find(fake_.failed_function()), std::string::npos) << closed.error().message();
      EXPECT_EQ(closed.error().code(), errc::device_lost) << closed.error().message();
    }
    slots_memory_ = {};
    render_ = {};
    producer_ = {};
    EXPECT_TRUE(fake_.leaks().empty()) << membridge::testing::join(fake_.leaks());
  }
}

}  // namespace
