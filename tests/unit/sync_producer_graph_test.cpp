// sync::producer_graph on the scripted driver, at the CUDA graph layer (the semaphores are imported
// from plain fds: no Vulkan): one graph per slot holding wait(consumed) -> the recorded work ->
// signal(produced); per frame the two values set and one launch; a failure at every step of create
// leaving nothing behind; errors of the caller's work and of the capture; teardown.
#include "fake_driver_test.hpp"
#include "fd_leak_listener.hpp"

#include <membridge/cuda/external_semaphore.hpp>
#include <membridge/sync/producer_graph.hpp>

#include <gtest/gtest.h>

#include <sys/eventfd.h>

#include <string>
#include <utility>
#include <vector>

namespace {

using membridge::errc;
using membridge::cuda::external_semaphore;
using membridge::sync::producer_graph;
using membridge::sync::producer_semaphores;
using membridge::testing::fake_cuda;
namespace os = membridge::os;

class producer_graph_test : public membridge::testing::fake_driver_test {
 protected:
  void SetUp() override {
    dev_ = open_device();
    consumed_ = import_semaphore();
    produced_ = import_semaphore();
  }

  void TearDown() override {
    consumed_ = {};  // drop the test's imports and share of the primary context before the leak check
    produced_ = {};
    dev_ = {};
    fake_driver_test::TearDown();
  }

  external_semaphore import_semaphore() {
    const auto fd = os::unique_fd::from_native(::eventfd(0, EFD_CLOEXEC));  // the fake takes any open fd
    return membridge::testing::value_or_failure(external_semaphore::import_timeline(dev_, fd));
  }

  producer_semaphores semaphores(std::uint32_t slots) { return {&consumed_, &produced_, slots}; }

  // Records k kernels per slot, named "k<j> slot <s>", through the fake's stand-in for a launch.
  membridge::sync::producer_record_fn kernels(int k) {
    return [this, k](CUstream stream, std::uint32_t slot) -> membridge::result<void> {
      ++recorded_;
      for (int j = 0; j < k; ++j) fake_.launch_kernel(stream, "k" + std::to_string(j) + " slot " + std::to_string(slot));
      return membridge::ok();
    };
  }

  fake_cuda::graph_op wait(std::uint64_t v) const {
    return {CU_GRAPH_NODE_TYPE_EXT_SEMAS_WAIT, consumed_.native(), v, {}, stream_};
  }
  fake_cuda::graph_op kernel(int j, std::uint32_t slot) const {
    return {CU_GRAPH_NODE_TYPE_KERNEL, nullptr, 0, "k" + std::to_string(j) + " slot " + std::to_string(slot), stream_};
  }
  fake_cuda::graph_op signal(std::uint64_t v) const {
    return {CU_GRAPH_NODE_TYPE_EXT_SEMAS_SIGNAL, produced_.native(), v, {}, stream_};
  }

  membridge::cuda::device dev_;
  external_semaphore consumed_;
  external_semaphore produced_;
  CUstream stream_ = reinterpret_cast<CUstream>(std::uintptr_t{0x5157});  // the caller's stream (opaque here)
  int recorded_ = 0;
};

TEST_F(producer_graph_test, records_once_per_slot_and_leaves_no_capture_stream) {
  auto g = producer_graph::create(dev_, semaphores(3), kernels(2));
  ASSERT_TRUE(g) << g.error().message();
  EXPECT_TRUE(g->valid());
  EXPECT_EQ(g->slots(), 3u);
  EXPECT_EQ(recorded_, 3);
  EXPECT_TRUE(fake_.streams_.empty()) << "the capture stream must be destroyed once create() returns";
  EXPECT_EQ(fake_.execs_.size(), 3u);
  for (std::uint32_t s = 0; s < 3; ++s) {
    EXPECT_NE(g->native(s), nullptr);
    // Each executable graph: wait(consumed), the slot's kernels in order, signal(produced).
    const auto& ops = fake_.execs_.at(g->native(s)).ops;
    ASSERT_EQ(ops.size(), 4u);
    EXPECT_EQ(ops[0].second.type, CU_GRAPH_NODE_TYPE_EXT_SEMAS_WAIT);
    EXPECT_EQ(ops[0].second.semaphore, consumed_.native());
    EXPECT_EQ(ops[1].second.kernel, "k0 slot " + std::to_string(s));
    EXPECT_EQ(ops[2].second.kernel, "k1 slot " + std::to_string(s));
    EXPECT_EQ(ops[3].second.type, CU_GRAPH_NODE_TYPE_EXT_SEMAS_SIGNAL);
    EXPECT_EQ(ops[3].second.semaphore, produced_.native());
  }
  EXPECT_EQ(fake_.graph_launches_, 0) << "create() launches nothing";
}

TEST_F(producer_graph_test, each_frame_waits_for_its_slot_and_signals_its_value) {
  auto g = producer_graph::create(dev_, semaphores(3), kernels(2));
  ASSERT_TRUE(g) << g.error().message();
  constexpr std::uint64_t frames = 8;
  fake_.current_ = membridge::testing::fake_primary_context();  // the producer thread's runtime made it current
  for (std::uint64_t n = 0; n < frames; ++n) {
    const int calls_before = fake_.counted_calls();
    ASSERT_TRUE(g->launch(stream_, n)) << "frame " << n;
    // cuCtxGetCurrent, two SetParams, one launch: whatever the number of kernels.
    EXPECT_EQ(fake_.counted_calls() - calls_before, 4) << "frame " << n;
  }
  std::vector<fake_cuda::graph_op> expected;
  for (std::uint64_t n = 0; n < frames; ++n) {
    // What cuda_acquire + kernels + cuda_release enqueue: frame n waits for consumed >= n - 3 + 1
    // (0, always reached, for the first 3 frames), runs slot n % 3's kernels, signals n + 1.
    expected.push_back(wait(n < 3 ? 0 : n - 3 + 1));
    expected.push_back(kernel(0, static_cast<std::uint32_t>(n % 3)));
    expected.push_back(kernel(1, static_cast<std::uint32_t>(n % 3)));
    expected.push_back(signal(n + 1));
  }
  EXPECT_EQ(fake_.executed_, expected);
  EXPECT_EQ(fake_.graph_launches_, static_cast<int>(frames));
  EXPECT_EQ(fake_.semaphores_.at(produced_.native()), frames);
  EXPECT_EQ(fake_.waits_, (std::vector<std::uint64_t>{0, 0, 0, 1, 2, 3, 4, 5}));
}

TEST_F(producer_graph_test, one_slot_waits_for_the_previous_frame) {
  auto g = producer_graph::create(dev_, semaphores(1), kernels(1));
  ASSERT_TRUE(g) << g.error().message();
  for (std::uint64_t n = 0; n < 4; ++n) ASSERT_TRUE(g->launch(stream_, n));
  EXPECT_EQ(fake_.waits_, (std::vector<std::uint64_t>{0, 1, 2, 3}));
  EXPECT_EQ(fake_.semaphores_.at(produced_.native()), 4u);
}

TEST_F(producer_graph_test, the_timed_launch_does_the_same_work_and_reports_each_call) {
  auto g = producer_graph::create(dev_, semaphores(2), kernels(1));
  ASSERT_TRUE(g) << g.error().message();
  fake_.current_ = membridge::testing::fake_primary_context();
  for (std::uint64_t n = 0; n < 3; ++n) {
    producer_graph::launch_timing t{std::chrono::nanoseconds(-1), std::chrono::nanoseconds(-1),
                                    std::chrono::nanoseconds(-1)};
    const int calls_before = fake_.counted_calls();
    ASSERT_TRUE(g->launch(stream_, n, &t)) << "frame " << n;
    EXPECT_EQ(fake_.counted_calls() - calls_before, 4) << "the same driver calls as launch(stream, frame)";
    EXPECT_GE(t.wait_update.count(), 0);
    EXPECT_GE(t.signal_update.count(), 0);
    EXPECT_GE(t.launch.count(), 0);
  }
  EXPECT_EQ(fake_.waits_, (std::vector<std::uint64_t>{0, 0, 1}));
  EXPECT_EQ(fake_.semaphores_.at(produced_.native()), 3u);
}

TEST_F(producer_graph_test, a_failure_at_every_step_of_create_leaves_nothing) {
  const auto leaks_before = fake_.leaks();
  const auto fds_before = membridge::testing::open_fds();
  int k = 0;
  for (;; ++k) {
    recorded_ = 0;
    fake_.fail_nth_call(k, CUDA_ERROR_OUT_OF_MEMORY);
    auto g = producer_graph::create(dev_, semaphores(2), kernels(3));
    if (!fake_.injection_fired()) {
      fake_.clear_failures();
      ASSERT_TRUE(g) << g.error().message();
      break;
    }
    const std::string step = "step " + std::to_string(k) + " (" + fake_.failed_function() + ")";
    ASSERT_FALSE(g) << step << " failed but create() reported success";
    EXPECT_EQ(g.error().code(), errc::out_of_memory) << step;
    EXPECT_EQ(g.error().call(), fake_.failed_function()) << step << ": " << g.error().message();
    EXPECT_EQ(fake_.leaks(), leaks_before) << step;
    EXPECT_EQ(membridge::testing::open_fds(), fds_before) << step;
    ASSERT_TRUE(fake_.misuse().empty()) << step << membridge::testing::join(fake_.misuse());
  }
  // cuCtxGetCurrent, cuCtxPushCurrent, cuStreamCreate, then per slot: begin, end capture, graph,
  // wait node, child node, signal node, instantiate.
  EXPECT_EQ(k, 3 + 2 * 7);
  EXPECT_EQ(fake_.graph_launches_, 0);
}

TEST_F(producer_graph_test, a_failing_launch_names_the_call_and_frame_and_later_frames_still_run) {
  auto g = producer_graph::create(dev_, semaphores(2), kernels(1));
  ASSERT_TRUE(g) << g.error().message();
  for (const char* call : {"cuGraphExecExternalSemaphoresWaitNodeSetParams",
                           "cuGraphExecExternalSemaphoresSignalNodeSetParams", "cuGraphLaunch"}) {
    fake_.fail_function(call, CUDA_ERROR_LAUNCH_FAILED);
    const auto r = g->launch(stream_, 0);
    ASSERT_FALSE(r) << call;
    EXPECT_EQ(r.error().code(), errc::device_lost) << call;
    EXPECT_EQ(r.error().call(), call);
    EXPECT_NE(r.error().message().find("frame 0"), std::string::npos) << r.error().message();
  }
  fake_.clear_failures();
  EXPECT_EQ(fake_.graph_launches_, 0);
  ASSERT_TRUE(g->launch(stream_, 0));
  ASSERT_TRUE(g->launch(stream_, 1));
  EXPECT_EQ(fake_.semaphores_.at(produced_.native()), 2u);
}

TEST_F(producer_graph_test, an_error_of_the_recorded_work_names_the_slot_and_leaves_nothing) {
  const auto leaks_before = fake_.leaks();
  int calls = 0;
  auto g = producer_graph::create(dev_, semaphores(3),
                                  [&](CUstream stream, std::uint32_t slot) -> membridge::result<void> {
                                    ++calls;
                                    fake_.launch_kernel(stream, "step");
                                    if (slot == 1) return membridge::error(errc::out_of_memory, "cudaLaunchKernel", "step");
                                    return membridge::ok();
                                  });
  ASSERT_FALSE(g);
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(g.error().code(), errc::out_of_memory);
  EXPECT_EQ(g.error().call(), "cudaLaunchKernel");
  EXPECT_NE(g.error().message().find("slot 1"), std::string::npos) << g.error().message();
  EXPECT_EQ(fake_.leaks(), leaks_before);
}

TEST_F(producer_graph_test, an_invalidated_capture_is_reported_with_the_slot) {
  const auto leaks_before = fake_.leaks();
  auto g = producer_graph::create(dev_, semaphores(2), [&](CUstream stream, std::uint32_t slot) -> membridge::result<void> {
    fake_.launch_kernel(stream, "step");
    if (slot == 0) fake_.invalidate_capture(stream);  // e.g. a cudaStreamSynchronize in the recorded work
    return membridge::ok();
  });
  ASSERT_FALSE(g);
  EXPECT_EQ(g.error().call(), "cuStreamEndCapture");
  EXPECT_EQ(g.error().native_code(), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
  EXPECT_NE(g.error().message().find("slot 0"), std::string::npos) << g.error().message();
  EXPECT_EQ(fake_.leaks(), leaks_before);
}

TEST_F(producer_graph_test, refuses_bad_arguments_without_driver_calls) {
  const int before = fake_.counted_calls();
  EXPECT_EQ(producer_graph::create({}, semaphores(2), kernels(1)).error().code(), errc::invalid_argument);
  EXPECT_EQ(producer_graph::create(dev_, semaphores(0), kernels(1)).error().code(), errc::invalid_argument);
  EXPECT_EQ(producer_graph::create(dev_, {&consumed_, nullptr, 2}, kernels(1)).error().code(), errc::invalid_argument);
  const external_semaphore empty;
  EXPECT_EQ(producer_graph::create(dev_, {&empty, &produced_, 2}, kernels(1)).error().code(), errc::invalid_argument);
  EXPECT_EQ(producer_graph::create(dev_, semaphores(2), {}).error().code(), errc::invalid_argument);
  const membridge::sync::frame_timeline no_timeline;
  EXPECT_EQ(producer_graph::create(dev_, no_timeline, kernels(1)).error().code(), errc::invalid_argument);
  producer_graph none;
  EXPECT_FALSE(none.valid());
  EXPECT_EQ(none.launch(stream_, 0).error().code(), errc::invalid_argument);
  EXPECT_EQ(fake_.counted_calls(), before);
}

TEST_F(producer_graph_test, moves_and_destruction_destroy_each_graph_once) {
  auto g = producer_graph::create(dev_, semaphores(2), kernels(1));
  ASSERT_TRUE(g) << g.error().message();
  producer_graph a = std::move(g).value();
  producer_graph b = std::move(a);
  EXPECT_FALSE(a.valid());  // NOLINT(bugprone-use-after-move): moved-from is empty by contract
  ASSERT_TRUE(b.valid());
  ASSERT_TRUE(b.launch(stream_, 0));
  auto other = producer_graph::create(dev_, semaphores(3), kernels(1));
  ASSERT_TRUE(other) << other.error().message();
  EXPECT_EQ(fake_.execs_.size(), 5u);
  b = std::move(other).value();  // b's two graphs go, other's three stay
  EXPECT_EQ(fake_.execs_.size(), 3u);
  EXPECT_EQ(b.slots(), 3u);
  b = producer_graph{};
  EXPECT_TRUE(fake_.execs_.empty());
  EXPECT_TRUE(fake_.graph_leaks().empty()) << membridge::testing::join(fake_.graph_leaks());
}

}  // namespace
