// bench/producer/launch_floor.cpp: see launch_floor.hpp.
#include "launch_floor.hpp"

#include "frame_memory.hpp"
#include "producer_kernels.cuh"

#include "cuda_support.hpp"

#include <membridge/sync/frame_timeline.hpp>
#include <membridge/sync/producer_graph.hpp>

#include <chrono>
#include <string>

namespace membridge::bench::producer_bench {

namespace {

using steady = std::chrono::steady_clock;

double micros(steady::duration d) { return std::chrono::duration<double, std::micro>(d).count(); }

/// A graph of one frame step, captured on `stream` (the runtime's graph and exec; destroyed with it).
/// Ownership: owns both.
class kernel_graph {
 public:
  kernel_graph(const step_args& args, cudaStream_t stream) {
    check_cuda(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture");
    const cudaError_t launched = launch_frame_step(args, stream);
    const cudaError_t ended = cudaStreamEndCapture(stream, &graph_);
    check_cuda(launched, "launch_frame_step (captured)");
    check_cuda(ended, "cudaStreamEndCapture");
    check_cuda(cudaGraphInstantiate(&exec_, graph_, 0), "cudaGraphInstantiate");
  }
  kernel_graph(const kernel_graph&) = delete;
  kernel_graph& operator=(const kernel_graph&) = delete;
  ~kernel_graph() {
    if (exec_ != nullptr) (void)cudaGraphExecDestroy(exec_);
    if (graph_ != nullptr) (void)cudaGraphDestroy(graph_);
  }
  [[nodiscard]] cudaGraphExec_t exec() const noexcept { return exec_; }

 private:
  cudaGraph_t graph_ = nullptr;
  cudaGraphExec_t exec_ = nullptr;
};

}  // namespace

launch_floor_samples measure_launch_floor(const cuda::device& cu, const vulkan::device_context& vk, int rounds,
                                          int launches) {
  constexpr int sync_every = 16;
  // Two scratch timelines of one slot that nobody consumes: the fixed graph signals produced = 1
  // again and again, the updated one 1, 2, 3, ... (one timeline each: a timeline never goes back).
  // frame_memory's log holds every launch of the three ways, warm-up included.
  auto fixed_timeline = value_or_fail(sync::frame_timeline::create(vk, cu, {.slots = 1}), "sync::frame_timeline::create");
  auto timeline = value_or_fail(sync::frame_timeline::create(vk, cu, {.slots = 1}), "sync::frame_timeline::create");
  frame_memory mem(static_cast<std::uint64_t>(rounds + 1) * static_cast<std::uint64_t>(launches) * 3 + 16, 1, 64, 1);
  cuda_stream stream;
  mem.reset(1, stream.get());
  const step_args args = mem.args(0, 0);
  const kernel_graph alone(args, stream.get());
  const auto record = [&args](CUstream s, std::uint32_t) -> result<void> {
    if (launch_frame_step(args, s) != cudaSuccess)
      return error(errc::internal, "launch_frame_step", "the captured frame step failed");
    return ok();
  };
  auto fixed_graph = value_or_fail(sync::producer_graph::create(cu, fixed_timeline, record),
                                   "sync::producer_graph::create (scratch, fixed)");
  auto graph = value_or_fail(sync::producer_graph::create(cu, timeline, record), "sync::producer_graph::create (scratch)");
  const cudaGraphExec_t fixed = fixed_graph.native(0);

  launch_floor_samples out;
  std::uint64_t frame = 0;  // the updated way's frames: wait consumed >= frame, signal produced = frame + 1
  const auto run_way = [&](int way, bool timed) {
    for (int i = 0; i < launches; ++i) {
      if (i % sync_every == 0) stream.synchronize();
      if (way == 0 || way == 1) {
        const auto t0 = steady::now();
        const cudaError_t rc = cudaGraphLaunch(way == 0 ? alone.exec() : fixed, stream.get());
        const auto t1 = steady::now();
        check_cuda(rc, "cudaGraphLaunch");
        if (timed) (way == 0 ? out.kernel_graph_us : out.semaphore_graph_us).push_back(micros(t1 - t0));
        continue;
      }
      // The consumed value this frame's wait needs, from the host (Vulkan), before the timed call.
      if (frame >= 1) {
        ok_or_fail(timeline.consumed().signal(sync::frame_timeline::consumed_value(frame - 1)),
                   "timeline_semaphore::signal (scratch consumed)");
      }
      sync::producer_graph::launch_timing timing;
      const auto t0 = steady::now();
      const auto launched = graph.launch(stream.get(), frame, &timing);
      const auto t1 = steady::now();
      ok_or_fail(launched, "producer_graph::launch (scratch)");
      ++frame;
      if (timed) {
        out.updated_graph_us.push_back(micros(t1 - t0));
        out.updated_launch_only_us.push_back(micros(timing.launch));
      }
    }
    stream.synchronize();
  };
  for (int way = 0; way < 3; ++way) run_way(way, false);  // warm-up
  for (int r = 0; r < rounds; ++r)
    for (int q = 0; q < 3; ++q) run_way((q + r) % 3, true);
  // The produced semaphore ends at the updated way's last frame (its signals all ran), or the
  // measurement did not measure what it says.
  const std::uint64_t produced = value_or_fail(timeline.produced().value(), "timeline_semaphore::value (scratch)");
  if (produced < frame)
    throw bench_failure("the scratch produced semaphore reads " + std::to_string(produced) + " after " +
                        std::to_string(frame) + " updated launches");
  return out;
}

}  // namespace membridge::bench::producer_bench
