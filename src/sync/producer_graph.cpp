#include <membridge/sync/producer_graph.hpp>

#include "detail/context_scope.hpp"

#include <membridge/core/log.hpp>

#include <string>
#include <utility>

namespace membridge::sync {

namespace {

// What producer_graph needs of the device, from cuda::device's public API: the driver table, the
// primary context (made current around driver calls) and a description for error context.
struct device_link {
  const cuda::driver* drv = nullptr;
  CUcontext context = nullptr;
  const std::string* text = nullptr;

  [[nodiscard]] const cuda::driver_api& api() const noexcept { return drv->api(); }

  [[nodiscard]] error fail(CUresult code, std::string call, std::string context_text,
                           std::source_location where = std::source_location::current()) const {
    if (!context_text.empty()) context_text += " on ";
    context_text += *text;
    return drv->make_error(code, std::move(call), std::move(context_text), where);
  }
};

using detail::context_scope;
using detail::log_teardown_failure;

result<context_scope> enter(const device_link& device) {
  const auto& api = device.api();
  CUcontext current = nullptr;
  if (const CUresult rc = api.cuCtxGetCurrent(&current); rc != CUDA_SUCCESS)
    return device.fail(rc, "cuCtxGetCurrent", "checking the current context");
  if (current == device.context) return context_scope(&api, false);
  if (const CUresult rc = api.cuCtxPushCurrent(device.context); rc != CUDA_SUCCESS)
    return device.fail(rc, "cuCtxPushCurrent", "making the primary context current");
  return context_scope(&api, true);
}

std::string slot_text(std::uint32_t slot) { return "slot " + std::to_string(slot); }

// The capture stream, destroyed when create() returns.
class stream_guard {
 public:
  explicit stream_guard(const device_link& state) noexcept : state_(state) {}
  stream_guard(const stream_guard&) = delete;
  stream_guard& operator=(const stream_guard&) = delete;
  ~stream_guard() {
    if (stream_ == nullptr) return;
    if (const CUresult rc = state_.api().cuStreamDestroy(stream_); rc != CUDA_SUCCESS)
      log_teardown_failure(state_.fail(rc, "cuStreamDestroy", "destroying the capture stream"));
  }
  CUstream stream_ = nullptr;

 private:
  const device_link& state_;
};

// A graph owned until given away (the captured work; a slot's template until it is kept).
class graph_guard {
 public:
  explicit graph_guard(const device_link& state) noexcept : state_(state) {}
  graph_guard(const graph_guard&) = delete;
  graph_guard& operator=(const graph_guard&) = delete;
  ~graph_guard() {
    if (graph_ == nullptr) return;
    if (const CUresult rc = state_.api().cuGraphDestroy(graph_); rc != CUDA_SUCCESS)
      log_teardown_failure(state_.fail(rc, "cuGraphDestroy", "destroying a graph"));
  }
  CUgraph release() noexcept { return std::exchange(graph_, nullptr); }
  CUgraph graph_ = nullptr;

 private:
  const device_link& state_;
};

// Captures `record`'s work for `slot` on `stream` into a new graph. A failure (of the caller's
// work or of the capture) ends the capture and destroys whatever graph it made.
result<void> capture_slot(const device_link& state, CUstream stream, std::uint32_t slot,
                          const producer_record_fn& record, graph_guard& work) {
  const auto& api = state.api();
  if (const CUresult rc = api.cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL); rc != CUDA_SUCCESS)
    return state.fail(rc, "cuStreamBeginCapture", "recording " + slot_text(slot));
  result<void> recorded = record(stream, slot);
  CUgraph captured = nullptr;
  const CUresult end_rc = api.cuStreamEndCapture(stream, &captured);
  work.graph_ = captured;  // destroyed by the guard on any failure below
  if (!recorded) return std::move(recorded).with_context("the producer's work for " + slot_text(slot));
  if (end_rc != CUDA_SUCCESS)
    return state.fail(end_rc, "cuStreamEndCapture",
                      "recording " + slot_text(slot) +
                          " (the recorded work must only enqueue on the capture stream, never synchronise)");
  if (captured == nullptr)
    return error(errc::internal, "cuStreamEndCapture", "no graph for " + slot_text(slot));
  return ok();
}

}  // namespace

producer_graph::producer_graph() noexcept = default;

producer_graph::producer_graph(producer_graph&& other) noexcept
    : device_keepalive_(std::move(other.device_keepalive_)),
      driver_(std::move(other.driver_)),
      context_(std::exchange(other.context_, nullptr)),
      device_text_(std::move(other.device_text_)),
      consumed_(std::exchange(other.consumed_, nullptr)),
      produced_(std::exchange(other.produced_, nullptr)),
      graphs_(std::move(other.graphs_)) {
  other.graphs_.clear();
}

producer_graph& producer_graph::operator=(producer_graph&& other) noexcept {
  if (this != &other) {
    reset();
    device_keepalive_ = std::move(other.device_keepalive_);
    driver_ = std::move(other.driver_);
    context_ = std::exchange(other.context_, nullptr);
    device_text_ = std::move(other.device_text_);
    consumed_ = std::exchange(other.consumed_, nullptr);
    produced_ = std::exchange(other.produced_, nullptr);
    graphs_ = std::move(other.graphs_);
    other.graphs_.clear();
  }
  return *this;
}

producer_graph::~producer_graph() { reset(); }

void producer_graph::reset() noexcept {
  if (driver_ && !graphs_.empty()) {
    const device_link device{driver_.get(), context_, &device_text_};
    auto scope = enter(device);
    const auto& api = device.api();
    for (std::size_t i = 0; i < graphs_.size(); ++i) {
      const slot_graph& g = graphs_[i];
      const std::string what = slot_text(static_cast<std::uint32_t>(i));
      if (g.exec != nullptr)
        if (const CUresult rc = api.cuGraphExecDestroy(g.exec); rc != CUDA_SUCCESS)
          log_teardown_failure(device.fail(rc, "cuGraphExecDestroy", "destroying the graph of " + what));
      if (g.graph != nullptr)
        if (const CUresult rc = api.cuGraphDestroy(g.graph); rc != CUDA_SUCCESS)
          log_teardown_failure(device.fail(rc, "cuGraphDestroy", "destroying the template of " + what));
    }
  }
  graphs_.clear();
  device_keepalive_.reset();
  driver_.reset();
  context_ = nullptr;
  device_text_.clear();
  consumed_ = nullptr;
  produced_ = nullptr;
}

result<producer_graph> producer_graph::create(const cuda::device& cuda_device, const frame_timeline& timeline,
                                              const producer_record_fn& record) {
  if (!timeline.valid() || !timeline.has_cuda())
    return error(errc::invalid_argument, "producer_graph::create",
                 "the frame timeline has no CUDA producer (use frame_timeline::create, or import with a CUDA device)");
  return create(cuda_device, {&timeline.cuda_consumed(), &timeline.cuda_produced(), timeline.slots()}, record);
}

result<producer_graph> producer_graph::create(const cuda::device& cuda_device, const producer_semaphores& semaphores,
                                              const producer_record_fn& record) {
  constexpr const char* call = "producer_graph::create";
  if (!cuda_device.valid()) return error(errc::invalid_argument, call, "the device is empty");
  if (semaphores.consumed == nullptr || semaphores.produced == nullptr || !semaphores.consumed->valid() ||
      !semaphores.produced->valid())
    return error(errc::invalid_argument, call, "the consumed or produced semaphore is missing or empty");
  if (semaphores.slots == 0) return error(errc::invalid_argument, call, "slots must be at least 1");
  if (!record) return error(errc::invalid_argument, call, "no function records the producer's work");

  producer_graph out;  // owns each slot's graphs as soon as they exist: a failure destroys them
  out.device_keepalive_ = cuda_device.state();
  out.driver_ = cuda_device.shared_driver();
  out.context_ = cuda_device.primary_context();
  out.device_text_ = "device " + std::to_string(cuda_device.ordinal());
  if (!cuda_device.name().empty()) out.device_text_ += " (" + cuda_device.name() + ")";
  const device_link state{out.driver_.get(), out.context_, &out.device_text_};
  const auto& api = state.api();
  MEMBRIDGE_TRY_ASSIGN(auto scope, enter(state));

  out.consumed_ = semaphores.consumed->native();
  out.produced_ = semaphores.produced->native();
  out.graphs_.reserve(semaphores.slots);

  stream_guard capture(state);
  if (const CUresult rc = api.cuStreamCreate(&capture.stream_, CU_STREAM_NON_BLOCKING); rc != CUDA_SUCCESS)
    return state.fail(rc, "cuStreamCreate", "creating the capture stream");

  for (std::uint32_t slot = 0; slot < semaphores.slots; ++slot) {
    const std::string what = slot_text(slot);
    graph_guard work(state);
    MEMBRIDGE_TRY(capture_slot(state, capture.stream_, slot, record, work));

    graph_guard frame(state);
    if (const CUresult rc = api.cuGraphCreate(&frame.graph_, 0); rc != CUDA_SUCCESS)
      return state.fail(rc, "cuGraphCreate", "the graph of " + what);
    slot_graph g;
    // acquire: wait for consumed >= value (set per frame; 0 is always reached).
    CUDA_EXTERNAL_SEMAPHORE_WAIT_PARAMS wait_value{};
    CUDA_EXT_SEM_WAIT_NODE_PARAMS wait{};
    wait.extSemArray = &out.consumed_;
    wait.paramsArray = &wait_value;
    wait.numExtSems = 1;
    if (const CUresult rc = api.cuGraphAddExternalSemaphoresWaitNode(&g.wait, frame.graph_, nullptr, 0, &wait);
        rc != CUDA_SUCCESS)
      return state.fail(rc, "cuGraphAddExternalSemaphoresWaitNode", "the consumed wait of " + what);
    // the work, after the wait (cloned: the captured graph goes when this iteration ends).
    CUgraphNode work_node = nullptr;
    if (const CUresult rc = api.cuGraphAddChildGraphNode(&work_node, frame.graph_, &g.wait, 1, work.graph_);
        rc != CUDA_SUCCESS)
      return state.fail(rc, "cuGraphAddChildGraphNode", "the recorded work of " + what);
    // release: signal produced = value (set per frame), after the work.
    CUDA_EXTERNAL_SEMAPHORE_SIGNAL_PARAMS signal_value{};
    signal_value.params.fence.value = frame_timeline::produced_value(slot);
    CUDA_EXT_SEM_SIGNAL_NODE_PARAMS signal{};
    signal.extSemArray = &out.produced_;
    signal.paramsArray = &signal_value;
    signal.numExtSems = 1;
    if (const CUresult rc = api.cuGraphAddExternalSemaphoresSignalNode(&g.signal, frame.graph_, &work_node, 1, &signal);
        rc != CUDA_SUCCESS)
      return state.fail(rc, "cuGraphAddExternalSemaphoresSignalNode", "the produced signal of " + what);
    if (const CUresult rc = api.cuGraphInstantiateWithFlags(&g.exec, frame.graph_, 0); rc != CUDA_SUCCESS)
      return state.fail(rc, "cuGraphInstantiateWithFlags", "instantiating the graph of " + what);
    g.graph = frame.release();
    out.graphs_.push_back(g);
  }
  return out;
}

result<void> producer_graph::launch(CUstream stream, std::uint64_t frame) { return launch(stream, frame, nullptr); }

result<void> producer_graph::launch(CUstream stream, std::uint64_t frame, launch_timing* timing) {
  using clock = std::chrono::steady_clock;
  const auto mark = [timing](clock::time_point& at) {
    if (timing != nullptr) at = clock::now();
  };
  clock::time_point t0;
  clock::time_point t1;
  clock::time_point t2;
  clock::time_point t3;
  mark(t0);
  if (!valid()) return error(errc::invalid_argument, "producer_graph::launch", "the producer graph is empty");
  const auto slots = static_cast<std::uint64_t>(graphs_.size());
  const slot_graph& g = graphs_[static_cast<std::size_t>(frame % slots)];
  const device_link device{driver_.get(), context_, &device_text_};
  const auto& api = device.api();
  MEMBRIDGE_TRY_ASSIGN(auto scope, enter(device));

  CUDA_EXTERNAL_SEMAPHORE_WAIT_PARAMS wait_value{};
  wait_value.params.fence.value = frame < slots ? 0 : frame_timeline::consumed_value(frame - slots);
  CUDA_EXT_SEM_WAIT_NODE_PARAMS wait{};
  wait.extSemArray = &consumed_;
  wait.paramsArray = &wait_value;
  wait.numExtSems = 1;
  if (const CUresult rc = api.cuGraphExecExternalSemaphoresWaitNodeSetParams(g.exec, g.wait, &wait);
      rc != CUDA_SUCCESS)
    return device.fail(rc, "cuGraphExecExternalSemaphoresWaitNodeSetParams", "frame " + std::to_string(frame));
  mark(t1);

  CUDA_EXTERNAL_SEMAPHORE_SIGNAL_PARAMS signal_value{};
  signal_value.params.fence.value = frame_timeline::produced_value(frame);
  CUDA_EXT_SEM_SIGNAL_NODE_PARAMS signal{};
  signal.extSemArray = &produced_;
  signal.paramsArray = &signal_value;
  signal.numExtSems = 1;
  if (const CUresult rc = api.cuGraphExecExternalSemaphoresSignalNodeSetParams(g.exec, g.signal, &signal);
      rc != CUDA_SUCCESS)
    return device.fail(rc, "cuGraphExecExternalSemaphoresSignalNodeSetParams", "frame " + std::to_string(frame));
  mark(t2);

  if (const CUresult rc = api.cuGraphLaunch(g.exec, stream); rc != CUDA_SUCCESS)
    return device.fail(rc, "cuGraphLaunch", "frame " + std::to_string(frame));
  mark(t3);
  if (timing != nullptr) *timing = {t1 - t0, t2 - t1, t3 - t2};
  return ok();
}

}  // namespace membridge::sync
