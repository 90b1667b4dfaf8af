// bench/producer/launch_floor.cpp: see launch_floor.hpp.
#include "launch_floor.hpp"

#include "frame_memory.hpp"
#include "producer_kernels.cuh"

#include "cuda_support.hpp"

#include <cudaTypedefs.h>

#include <membridge/sync/frame_timeline.hpp>
#include <membridge/sync/producer_graph.hpp>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace membridge::bench::producer_bench {

namespace {

using steady = std::chrono::steady_clock;

double micros(steady::duration d) { return std::chrono::duration<double, std::micro>(d).count(); }

/// How built_graph::update sets its two semaphore nodes' values.
enum class update_call : std::uint8_t {
  typed,    ///< cuGraphExecExternalSemaphoresWaitNodeSetParams / ...SignalNodeSetParams (producer_graph's).
  generic,  ///< cuGraphExecNodeSetParams (CUDA 12.2+), once per node.
};

/// cuGraphExecNodeSetParams from the driver (not in membridge's table: CUDA 12.0-12.1 drivers lack
/// it). Throws bench_failure when the driver does not provide it.
PFN_cuGraphExecNodeSetParams_v12020 generic_set_params() {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult status = cudaDriverEntryPointSymbolNotFound;
  check_cuda(cudaGetDriverEntryPointByVersion("cuGraphExecNodeSetParams", &fn, 12020, cudaEnableDefault, &status),
             "cudaGetDriverEntryPointByVersion (cuGraphExecNodeSetParams)");
  if (status != cudaDriverEntryPointSuccess || fn == nullptr)
    throw bench_failure("the driver does not provide cuGraphExecNodeSetParams (CUDA 12.2+)");
  return reinterpret_cast<PFN_cuGraphExecNodeSetParams_v12020>(fn);
}

/// How built_graph puts its graph together.
enum class shape : std::uint8_t {
  plain,     ///< The captured frame step itself (no semaphore node).
  child,     ///< As producer_graph: [wait on consumed ->] the work as a child graph node [-> signal produced].
  captured,  ///< Wait, frame step and signal all captured on the stream, one flat graph (both semaphores).
};

/// Driver-table status `rc` of `call` as a bench failure.
void check_cu(const cuda::driver& drv, CUresult rc, const char* call) {
  if (rc != CUDA_SUCCESS) throw bench_failure(std::string(call) + " failed: " + drv.error_name(rc));
}

/// One frame step captured on `stream` in the graph `how` says, through membridge's driver table as
/// producer_graph does, the semaphore nodes with fixed values (wait for consumed >= 0, signal
/// produced = 1) until update() changes them; instantiated. A null semaphore: no such node
/// (shape::captured needs both). The runtime's current context must be the device's primary context.
/// Ownership: owns the graphs and the executable; borrows the driver and the semaphores (they must
/// outlive it).
class built_graph {
 public:
  built_graph(const cuda::driver& drv, const step_args& args, CUstream stream, shape how, CUexternalSemaphore consumed,
              CUexternalSemaphore produced)
      : drv_(drv), consumed_(consumed), produced_(produced) {
    try {
      if (how == shape::captured)
        build_captured(args, stream);
      else
        build(args, stream, how);
      check_cu(drv_, drv_.api().cuGraphInstantiateWithFlags(&exec_, graph_, 0), "cuGraphInstantiateWithFlags");
    } catch (...) {
      destroy();
      throw;
    }
  }
  built_graph(const built_graph&) = delete;
  built_graph& operator=(const built_graph&) = delete;
  ~built_graph() { destroy(); }

  [[nodiscard]] CUgraphExec exec() const noexcept { return exec_; }

  /// Sets the wait node to `wait_value` and the signal node to `signal_value` in the executable graph
  /// (both nodes must exist: shape::child with both semaphores) through `how` (`generic`: the
  /// generic call); returns the first failure (not checked here: the caller times this call and
  /// checks afterwards).
  [[nodiscard]] CUresult update(update_call how, PFN_cuGraphExecNodeSetParams_v12020 generic, std::uint64_t wait_value,
                                std::uint64_t signal_value) {
    CUDA_EXTERNAL_SEMAPHORE_WAIT_PARAMS wait_value_params{};
    wait_value_params.params.fence.value = wait_value;
    CUDA_EXTERNAL_SEMAPHORE_SIGNAL_PARAMS signal_value_params{};
    signal_value_params.params.fence.value = signal_value;
    if (how == update_call::typed) {
      CUDA_EXT_SEM_WAIT_NODE_PARAMS wait{};
      wait.extSemArray = &consumed_;
      wait.paramsArray = &wait_value_params;
      wait.numExtSems = 1;
      if (const CUresult rc = drv_.api().cuGraphExecExternalSemaphoresWaitNodeSetParams(exec_, wait_, &wait);
          rc != CUDA_SUCCESS)
        return rc;
      CUDA_EXT_SEM_SIGNAL_NODE_PARAMS signal{};
      signal.extSemArray = &produced_;
      signal.paramsArray = &signal_value_params;
      signal.numExtSems = 1;
      return drv_.api().cuGraphExecExternalSemaphoresSignalNodeSetParams(exec_, signal_, &signal);
    }
    CUgraphNodeParams wait{};
    wait.type = CU_GRAPH_NODE_TYPE_EXT_SEMAS_WAIT;
    wait.extSemWait.extSemArray = &consumed_;
    wait.extSemWait.paramsArray = &wait_value_params;
    wait.extSemWait.numExtSems = 1;
    if (const CUresult rc = generic(exec_, wait_, &wait); rc != CUDA_SUCCESS) return rc;
    CUgraphNodeParams signal{};
    signal.type = CU_GRAPH_NODE_TYPE_EXT_SEMAS_SIGNAL;
    signal.extSemSignal.extSemArray = &produced_;
    signal.extSemSignal.paramsArray = &signal_value_params;
    signal.extSemSignal.numExtSems = 1;
    return generic(exec_, signal_, &signal);
  }

 private:
  void build(const step_args& args, CUstream stream, shape how) {
    const auto& api = drv_.api();
    check_cu(drv_, api.cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL), "cuStreamBeginCapture");
    const cudaError_t launched = launch_frame_step(args, stream);
    const CUresult ended = api.cuStreamEndCapture(stream, &work_);
    check_cuda(launched, "launch_frame_step (captured)");
    check_cu(drv_, ended, "cuStreamEndCapture");
    if (how == shape::plain) {
      graph_ = std::exchange(work_, nullptr);
      return;
    }
    check_cu(drv_, api.cuGraphCreate(&graph_, 0), "cuGraphCreate");
    if (consumed_ != nullptr) {
      CUDA_EXTERNAL_SEMAPHORE_WAIT_PARAMS value{};  // 0: always reached
      CUDA_EXT_SEM_WAIT_NODE_PARAMS wait{};
      wait.extSemArray = &consumed_;
      wait.paramsArray = &value;
      wait.numExtSems = 1;
      check_cu(drv_, api.cuGraphAddExternalSemaphoresWaitNode(&wait_, graph_, nullptr, 0, &wait),
               "cuGraphAddExternalSemaphoresWaitNode");
    }
    CUgraphNode work_node = nullptr;
    check_cu(drv_,
             api.cuGraphAddChildGraphNode(&work_node, graph_, wait_ != nullptr ? &wait_ : nullptr,
                                          wait_ != nullptr ? 1 : 0, work_),
             "cuGraphAddChildGraphNode");
    if (produced_ != nullptr) {
      CUDA_EXTERNAL_SEMAPHORE_SIGNAL_PARAMS value{};
      value.params.fence.value = 1;
      CUDA_EXT_SEM_SIGNAL_NODE_PARAMS signal{};
      signal.extSemArray = &produced_;
      signal.paramsArray = &value;
      signal.numExtSems = 1;
      check_cu(drv_, api.cuGraphAddExternalSemaphoresSignalNode(&signal_, graph_, &work_node, 1, &signal),
               "cuGraphAddExternalSemaphoresSignalNode");
    }
  }

  void build_captured(const step_args& args, CUstream stream) {
    const auto& api = drv_.api();
    CUDA_EXTERNAL_SEMAPHORE_WAIT_PARAMS wait{};  // 0: always reached
    CUDA_EXTERNAL_SEMAPHORE_SIGNAL_PARAMS signal{};
    signal.params.fence.value = 1;
    check_cu(drv_, api.cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL), "cuStreamBeginCapture");
    CUresult rc = api.cuWaitExternalSemaphoresAsync(&consumed_, &wait, 1, stream);
    cudaError_t launched = cudaSuccess;
    if (rc == CUDA_SUCCESS) launched = launch_frame_step(args, stream);
    if (rc == CUDA_SUCCESS && launched == cudaSuccess) rc = api.cuSignalExternalSemaphoresAsync(&produced_, &signal, 1, stream);
    const CUresult ended = api.cuStreamEndCapture(stream, &graph_);
    check_cu(drv_, rc, "cuWaitExternalSemaphoresAsync / cuSignalExternalSemaphoresAsync (captured)");
    check_cuda(launched, "launch_frame_step (captured)");
    check_cu(drv_, ended, "cuStreamEndCapture");
  }

  void destroy() noexcept {
    const auto& api = drv_.api();
    if (exec_ != nullptr) (void)api.cuGraphExecDestroy(std::exchange(exec_, nullptr));
    if (graph_ != nullptr) (void)api.cuGraphDestroy(std::exchange(graph_, nullptr));
    if (work_ != nullptr) (void)api.cuGraphDestroy(std::exchange(work_, nullptr));
  }

  const cuda::driver& drv_;
  CUexternalSemaphore consumed_ = nullptr;
  CUexternalSemaphore produced_ = nullptr;
  CUgraph work_ = nullptr;  // the capture, cloned into a child node (null once it is the graph itself)
  CUgraph graph_ = nullptr;
  CUgraphExec exec_ = nullptr;
  CUgraphNode wait_ = nullptr;
  CUgraphNode signal_ = nullptr;
};

/// The ways, in the order launch_floor.hpp lists them.
enum class way : std::uint8_t { kernel, child, signal, wait, semaphore, captured, updated, typed, generic };
constexpr int way_count = 9;

/// A scratch timeline an updated way counts its frames on: frame n waits consumed >= n (0 for the
/// first) and signals produced = n + 1, as producer_graph does with one slot.
struct counted_timeline {
  sync::frame_timeline timeline;
  std::uint64_t frame = 0;

  /// The consumed value frame `frame` waits for, signalled from the host (untimed).
  void consume_previous() {
    if (frame >= 1)
      ok_or_fail(timeline.consumed().signal(sync::frame_timeline::consumed_value(frame - 1)),
                 "timeline_semaphore::signal (scratch consumed)");
  }
  /// Empty when produced reached the last frame's value (every signal ran), else what went wrong.
  [[nodiscard]] std::string check(const char* what) const {
    const std::uint64_t produced = value_or_fail(timeline.produced().value(), "timeline_semaphore::value (scratch)");
    if (produced >= frame) return {};
    return std::string("the scratch produced semaphore of ") + what + " reads " + std::to_string(produced) +
           " after " + std::to_string(frame) + " updated launches";
  }
};

}  // namespace

launch_floor_samples measure_launch_floor(const cuda::device& cu, const vulkan::device_context& vk, int rounds,
                                          int launches) {
  constexpr int sync_every = 16;
  launch_floor_samples out;
  // Scratch timelines of one slot that nobody consumes: the fixed graphs signal produced = 1 again and
  // again (and wait for consumed >= 0), each updated way 1, 2, 3, ... on its own (a timeline never goes
  // back). frame_memory's log holds every launch of every way, warm-up included.
  const auto make_timeline = [&] {
    return value_or_fail(sync::frame_timeline::create(vk, cu, {.slots = 1}), "sync::frame_timeline::create");
  };
  auto fixed_timeline = make_timeline();
  counted_timeline updated{make_timeline()};
  counted_timeline typed{make_timeline()};
  counted_timeline generic{make_timeline()};
  frame_memory mem(static_cast<std::uint64_t>(rounds + 1) * static_cast<std::uint64_t>(launches) * way_count + 16, 1,
                   64, 1);
  cuda_stream stream;
  mem.reset(1, stream.get());
  const step_args args = mem.args(0, 0);
  const cuda::driver& drv = *cu.shared_driver();
  // The two ways that rely on what the driver may refuse (the generic call, capturing the semaphore
  // operations) are left out with the reason rather than ending the benchmark.
  PFN_cuGraphExecNodeSetParams_v12020 generic_call = nullptr;
  try {
    generic_call = generic_set_params();
  } catch (const bench_failure& e) {
    out.generic_error = e.what();
  }
  const CUexternalSemaphore fixed_consumed = fixed_timeline.cuda_consumed().native();
  const CUexternalSemaphore fixed_produced = fixed_timeline.cuda_produced().native();
  const built_graph alone(drv, args, stream.get(), shape::plain, nullptr, nullptr);
  const built_graph child_only(drv, args, stream.get(), shape::child, nullptr, nullptr);
  const built_graph signal_only(drv, args, stream.get(), shape::child, nullptr, fixed_produced);
  const built_graph wait_only(drv, args, stream.get(), shape::child, fixed_consumed, nullptr);
  std::optional<built_graph> captured;
  try {
    captured.emplace(drv, args, stream.get(), shape::captured, fixed_consumed, fixed_produced);
  } catch (const bench_failure& e) {
    out.captured_error = e.what();
  }
  built_graph typed_graph(drv, args, stream.get(), shape::child, typed.timeline.cuda_consumed().native(),
                          typed.timeline.cuda_produced().native());
  built_graph generic_graph(drv, args, stream.get(), shape::child, generic.timeline.cuda_consumed().native(),
                            generic.timeline.cuda_produced().native());
  const auto record = [&args](CUstream s, std::uint32_t) -> result<void> {
    if (launch_frame_step(args, s) != cudaSuccess)
      return error(errc::internal, "launch_frame_step", "the captured frame step failed");
    return ok();
  };
  auto fixed_graph = value_or_fail(sync::producer_graph::create(cu, fixed_timeline, record),
                                   "sync::producer_graph::create (scratch, fixed)");
  auto graph = value_or_fail(sync::producer_graph::create(cu, updated.timeline, record),
                             "sync::producer_graph::create (scratch)");

  // A graph launched as instantiated: only the launch is timed.
  const auto launch_fixed = [&](CUgraphExec exec, std::vector<double>& samples, bool timed) {
    const auto t0 = steady::now();
    const CUresult rc = drv.api().cuGraphLaunch(exec, stream.get());
    const auto t1 = steady::now();
    check_cu(drv, rc, "cuGraphLaunch");
    if (timed) samples.push_back(micros(t1 - t0));
  };
  // The graph built here, its values updated through `how`, then launched: both timed.
  const auto launch_built = [&](built_graph& g, counted_timeline& tl, update_call how, std::vector<double>& total,
                                std::vector<double>& updates, bool timed) {
    tl.consume_previous();
    const std::uint64_t n = tl.frame;
    const auto t0 = steady::now();
    const CUresult updated_rc = g.update(how, generic_call, n == 0 ? 0 : sync::frame_timeline::consumed_value(n - 1),
                                         sync::frame_timeline::produced_value(n));
    const auto t1 = steady::now();
    const CUresult launched_rc = updated_rc == CUDA_SUCCESS ? drv.api().cuGraphLaunch(g.exec(), stream.get()) : updated_rc;
    const auto t2 = steady::now();
    if (how == update_call::generic && updated_rc != CUDA_SUCCESS) {  // the way stops, the benchmark goes on
      out.generic_error = "cuGraphExecNodeSetParams failed: " + drv.error_name(updated_rc);
      generic_call = nullptr;
      return;
    }
    check_cu(drv, updated_rc, "cuGraphExecExternalSemaphores*NodeSetParams");
    check_cu(drv, launched_rc, "cuGraphLaunch");
    ++tl.frame;
    if (timed) {
      total.push_back(micros(t2 - t0));
      updates.push_back(micros(t1 - t0));
    }
  };
  const auto run_way = [&](way w, bool timed) {
    for (int i = 0; i < launches; ++i) {
      if (i % sync_every == 0) stream.synchronize();
      switch (w) {
        case way::kernel: launch_fixed(alone.exec(), out.kernel_graph_us, timed); break;
        case way::child: launch_fixed(child_only.exec(), out.child_graph_us, timed); break;
        case way::signal: launch_fixed(signal_only.exec(), out.signal_graph_us, timed); break;
        case way::wait: launch_fixed(wait_only.exec(), out.wait_graph_us, timed); break;
        case way::semaphore: launch_fixed(fixed_graph.native(0), out.semaphore_graph_us, timed); break;
        case way::captured:
          if (captured) launch_fixed(captured->exec(), out.captured_graph_us, timed);
          break;
        case way::updated: {
          updated.consume_previous();  // the consumed value this frame's wait needs, before the timed call
          sync::producer_graph::launch_timing timing;
          const auto t0 = steady::now();
          const auto launched = graph.launch(stream.get(), updated.frame, &timing);
          const auto t1 = steady::now();
          ok_or_fail(launched, "producer_graph::launch (scratch)");
          ++updated.frame;
          if (timed) {
            out.updated_graph_us.push_back(micros(t1 - t0));
            out.updated_launch_only_us.push_back(micros(timing.launch));
          }
          break;
        }
        case way::typed:
          launch_built(typed_graph, typed, update_call::typed, out.typed_updated_graph_us, out.typed_update_only_us,
                       timed);
          break;
        case way::generic:
          if (generic_call != nullptr)
            launch_built(generic_graph, generic, update_call::generic, out.generic_updated_graph_us,
                         out.generic_update_only_us, timed);
          break;
      }
    }
    stream.synchronize();
  };
  for (int q = 0; q < way_count; ++q) run_way(static_cast<way>(q), false);  // warm-up
  for (int r = 0; r < rounds; ++r)
    for (int q = 0; q < way_count; ++q) run_way(static_cast<way>((q + r) % way_count), true);
  // Each updated timeline's produced semaphore ends at its way's last frame (its signals all ran), or
  // the measurement did not measure what it says.
  for (const auto* tl : {&updated, &typed})
    if (const std::string wrong = tl->check(tl == &updated ? "producer_graph::launch" : "the per-type updates");
        !wrong.empty())
      throw bench_failure(wrong);
  if (generic_call != nullptr)
    if (std::string wrong = generic.check("the generic updates"); !wrong.empty()) {
      out.generic_error = std::move(wrong);  // its figures measured updates that did not take
      out.generic_updated_graph_us.clear();
      out.generic_update_only_us.clear();
    }
  return out;
}

}  // namespace membridge::bench::producer_bench
