#include <membridge/sync/cross_gpu_link.hpp>

#include "detail/context_scope.hpp"

#include <membridge/core/log.hpp>
#include <membridge/core/units.hpp>
#include <membridge/cuda/growable_buffer.hpp>
#include <membridge/cuda/peer.hpp>

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace membridge::sync {

namespace {

using detail::context_scope;
using detail::log_teardown_failure;

// One GPU as the link needs it, from cuda::device's public API: the driver, the primary context
// (kept retained by `keepalive`) and a description for errors.
struct gpu {
  std::shared_ptr<const cuda::detail::device_state> keepalive;
  std::shared_ptr<const cuda::driver> drv;
  CUcontext context = nullptr;
  std::string text;

  static gpu of(const cuda::device& dev, const char* role) {
    return {dev.state(), dev.shared_driver(), dev.primary_context(),
            std::string(role) + " device " + std::to_string(dev.ordinal()) + " (" + dev.name() + ")"};
  }

  [[nodiscard]] const cuda::driver_api& api() const noexcept { return drv->api(); }

  [[nodiscard]] error fail(CUresult code, std::string call, std::string what,
                           std::source_location where = std::source_location::current()) const {
    return drv->make_error(code, std::move(call), std::move(what) + " on the " + text, where);
  }

  [[nodiscard]] result<context_scope> enter() const {
    CUcontext current = nullptr;
    if (const CUresult rc = api().cuCtxGetCurrent(&current); rc != CUDA_SUCCESS)
      return fail(rc, "cuCtxGetCurrent", "checking the current context");
    if (current == context) return context_scope(&api(), false);
    if (const CUresult rc = api().cuCtxPushCurrent(context); rc != CUDA_SUCCESS)
      return fail(rc, "cuCtxPushCurrent", "making the primary context current");
    return context_scope(&api(), true);
  }
};

std::string slot_text(std::uint32_t slot) { return "slot " + std::to_string(slot); }

// `count` new events on `on` (whose context is current), appended to `out` as each is made.
result<void> create_events(const gpu& on, std::size_t count, std::vector<CUevent>& out, const char* name) {
  for (std::size_t i = 0; i < count; ++i) {
    CUevent event = nullptr;
    if (const CUresult rc = on.api().cuEventCreate(&event, CU_EVENT_DISABLE_TIMING); rc != CUDA_SUCCESS)
      return on.fail(rc, "cuEventCreate", std::string("creating the ") + name + " event of " +
                                              slot_text(static_cast<std::uint32_t>(i)));
    out.push_back(event);
  }
  return ok();
}

// The mode create() uses, or why it cannot.
result<cross_gpu_mode> resolve_mode(const cuda::device& render_gpu, const cuda::device& producer_gpu,
                                    cross_gpu_mode asked) {
  if (asked == cross_gpu_mode::staged) return asked;
  MEMBRIDGE_TRY_ASSIGN(const cuda::peer_link link, cuda::query_peer(producer_gpu, render_gpu));
  if (link.access) return asked == cross_gpu_mode::automatic ? default_cross_gpu_peer_mode : asked;
  if (asked == cross_gpu_mode::automatic) {
    log(log_level::info, "membridge: cross_gpu_link: device " + std::to_string(producer_gpu.ordinal()) +
                             " cannot access the memory of device " + std::to_string(render_gpu.ordinal()) +
                             ": frames go through pinned host memory (staged)");
    return cross_gpu_mode::staged;
  }
  MEMBRIDGE_TRY(cuda::require_peer_access(producer_gpu, render_gpu));  // the error naming both GPUs
  return error(errc::internal, "cross_gpu_link::create", "peer access changed while creating the link");
}

// Each maximal run of adjacent slots, as (address, bytes): one cuMemSetAccess per run.
std::vector<std::pair<CUdeviceptr, std::size_t>> slot_runs(std::span<const CUdeviceptr> slots, std::size_t bytes) {
  std::vector<std::pair<CUdeviceptr, std::size_t>> runs;
  for (const CUdeviceptr s : slots) {
    if (!runs.empty() && runs.back().first + runs.back().second == s)
      runs.back().second += bytes;
    else
      runs.emplace_back(s, bytes);
  }
  return runs;
}

}  // namespace

std::string_view to_string(cross_gpu_mode mode) noexcept {
  switch (mode) {
    case cross_gpu_mode::automatic: return "automatic";
    case cross_gpu_mode::peer_write: return "peer_write";
    case cross_gpu_mode::copy_engine: return "copy_engine";
    case cross_gpu_mode::staged: return "staged";
  }
  return "unknown";
}

struct cross_gpu_link::state {
  gpu render;    // A: the slots, the acquire and relay streams, freed[]
  gpu producer;  // B: the kernels, the copy stream, written[], moved[], the local buffer
  cross_gpu_mode mode = cross_gpu_mode::staged;
  std::vector<CUdeviceptr> slots;
  std::size_t slot_bytes = 0;
  CUstream acquire = nullptr;       // on A: begin_frame's timeline acquire and freed[] (not behind the releases)
  CUstream relay = nullptr;         // on A
  CUstream copy = nullptr;          // on B (copy_engine, staged)
  std::vector<CUevent> freed;       // on A: recorded after the slot's acquire (acquire stream; open_slot: relay)
  std::vector<CUevent> written;     // on B: recorded on the producer's stream after the frame's kernels
  std::vector<CUevent> moved;       // on B: recorded on copy after the slot's copy (copy_engine, staged)
  std::vector<bool> moved_recorded; // whether moved[k] has a record to wait for
  cuda::growable_buffer local;      // on B: slots x slot_bytes the kernels write (copy_engine, staged)
  void* host = nullptr;             // pinned: slots x slot_bytes (staged)
  std::optional<std::uint64_t> open_frame;

  state() = default;
  state(const state&) = delete;
  state& operator=(const state&) = delete;
  ~state();

  [[nodiscard]] std::uint32_t slot(std::uint64_t frame) const noexcept {
    return static_cast<std::uint32_t>(frame % slots.size());
  }
  [[nodiscard]] CUdeviceptr target(std::uint32_t k) const noexcept {
    return mode == cross_gpu_mode::peer_write ? slots[k] : local.address() + k * slot_bytes;
  }
  [[nodiscard]] void* host_slot(std::uint32_t k) const noexcept {
    return static_cast<std::byte*>(host) + std::size_t{k} * slot_bytes;
  }
  [[nodiscard]] result<void> make(const cuda::device& producer_gpu);
  [[nodiscard]] result<void> wait(const gpu& on, CUstream stream, CUevent event, const char* what) const;
  [[nodiscard]] result<void> record(const gpu& on, CUevent event, CUstream stream, const char* what) const;
  [[nodiscard]] result<void> move_to_slot(std::uint32_t k);
  [[nodiscard]] result<CUdeviceptr> open(CUstream producer, std::uint64_t frame, CUstream freed_on);
  [[nodiscard]] result<void> sync_streams() const;
};

cross_gpu_link::state::~state() {
  if (const auto synced = sync_streams(); !synced) log_teardown_failure(synced.error());
  const auto destroy_events = [](const gpu& on, std::vector<CUevent>& events, const char* name) {
    auto scope = on.enter();
    if (!scope) return log_teardown_failure(scope.error());
    for (const CUevent e : events)
      if (const CUresult rc = on.api().cuEventDestroy(e); rc != CUDA_SUCCESS)
        log_teardown_failure(on.fail(rc, "cuEventDestroy", std::string("destroying a ") + name + " event"));
    events.clear();
  };
  const auto destroy_stream = [](const gpu& on, CUstream& stream, const char* name) {
    if (stream == nullptr) return;
    auto scope = on.enter();
    if (!scope) return log_teardown_failure(scope.error());
    if (const CUresult rc = on.api().cuStreamDestroy(stream); rc != CUDA_SUCCESS)
      log_teardown_failure(on.fail(rc, "cuStreamDestroy", std::string("destroying the ") + name + " stream"));
    stream = nullptr;
  };
  if (render.drv) {
    destroy_events(render, freed, "freed");
    destroy_stream(render, acquire, "acquire");
    destroy_stream(render, relay, "relay");
  }
  if (producer.drv) {
    destroy_events(producer, written, "written");
    destroy_events(producer, moved, "moved");
    destroy_stream(producer, copy, "copy");
    if (host != nullptr) {
      if (auto scope = producer.enter(); !scope)
        log_teardown_failure(scope.error());
      else if (const CUresult rc = producer.api().cuMemFreeHost(host); rc != CUDA_SUCCESS)
        log_teardown_failure(producer.fail(rc, "cuMemFreeHost", "freeing the staging memory"));
      host = nullptr;
    }
  }
  // `local` (B's buffer) is freed after this body; the streams that used it are idle.
}

result<void> cross_gpu_link::state::sync_streams() const {
  const auto sync = [](const gpu& on, CUstream stream, const char* name) -> result<void> {
    if (stream == nullptr) return ok();
    MEMBRIDGE_TRY_ASSIGN(auto scope, on.enter());
    if (const CUresult rc = on.api().cuStreamSynchronize(stream); rc != CUDA_SUCCESS)
      return on.fail(rc, "cuStreamSynchronize", std::string("waiting for the ") + name + " stream");
    return ok();
  };
  MEMBRIDGE_TRY(sync(producer, copy, "copy"));
  MEMBRIDGE_TRY(sync(render, acquire, "acquire"));
  return sync(render, relay, "relay");
}

// Everything but the grant: the relay stream and freed[] on A; written[], and for the copy modes the
// copy stream, moved[] and B's buffer (staged: the pinned memory) on B.
result<void> cross_gpu_link::state::make(const cuda::device& producer_gpu) {
  const std::size_t count = slots.size();
  {
    MEMBRIDGE_TRY_ASSIGN(auto scope, render.enter());
    if (const CUresult rc = render.api().cuStreamCreate(&relay, CU_STREAM_NON_BLOCKING); rc != CUDA_SUCCESS)
      return render.fail(rc, "cuStreamCreate", "creating the relay stream");
    if (const CUresult rc = render.api().cuStreamCreate(&acquire, CU_STREAM_NON_BLOCKING); rc != CUDA_SUCCESS)
      return render.fail(rc, "cuStreamCreate", "creating the acquire stream");
    MEMBRIDGE_TRY(create_events(render, count, freed, "freed"));
  }
  MEMBRIDGE_TRY_ASSIGN(auto scope, producer.enter());
  MEMBRIDGE_TRY(create_events(producer, count, written, "written"));
  if (mode == cross_gpu_mode::peer_write) return ok();
  if (const CUresult rc = producer.api().cuStreamCreate(&copy, CU_STREAM_NON_BLOCKING); rc != CUDA_SUCCESS)
    return producer.fail(rc, "cuStreamCreate", "creating the copy stream");
  MEMBRIDGE_TRY(create_events(producer, count, moved, "moved"));
  moved_recorded.assign(count, false);
  const std::optional<std::size_t> bytes = round_up(count * slot_bytes, producer_gpu.granularity());
  if (!bytes) return error(errc::invalid_argument, "cross_gpu_link::create", "the slots are too large");
  auto local_buffer = cuda::growable_buffer::create(producer_gpu, {.size = *bytes, .max_size = *bytes});
  if (!local_buffer) return std::move(local_buffer).error().add_context("the producer's buffer for the slots");
  local = std::move(local_buffer).value();
  if (mode == cross_gpu_mode::copy_engine) return ok();
  if (const CUresult rc = producer.api().cuMemHostAlloc(&host, count * slot_bytes, CU_MEMHOSTALLOC_PORTABLE);
      rc != CUDA_SUCCESS)
    return producer.fail(rc, "cuMemHostAlloc", "allocating " + format_bytes(count * slot_bytes) + " of staging memory");
  return ok();
}

result<void> cross_gpu_link::state::wait(const gpu& on, CUstream stream, CUevent event, const char* what) const {
  MEMBRIDGE_TRY_ASSIGN(auto scope, on.enter());
  if (const CUresult rc = on.api().cuStreamWaitEvent(stream, event, 0); rc != CUDA_SUCCESS)
    return on.fail(rc, "cuStreamWaitEvent", what);
  return ok();
}

result<void> cross_gpu_link::state::record(const gpu& on, CUevent event, CUstream stream, const char* what) const {
  MEMBRIDGE_TRY_ASSIGN(auto scope, on.enter());
  if (const CUresult rc = on.api().cuEventRecord(event, stream); rc != CUDA_SUCCESS)
    return on.fail(rc, "cuEventRecord", what);
  return ok();
}

// The copy modes' half of close_slot: B's copy stream moves the slot (over the link, or into host
// memory that A's relay stream then copies from), and the relay stream waits for it.
result<void> cross_gpu_link::state::move_to_slot(std::uint32_t k) {
  MEMBRIDGE_TRY(wait(producer, copy, written[k], "the copy stream waiting for the frame's kernels"));
  MEMBRIDGE_TRY(wait(producer, copy, freed[k], "the copy stream waiting until the renderer is done with the slot"));
  {
    MEMBRIDGE_TRY_ASSIGN(auto scope, producer.enter());
    if (mode == cross_gpu_mode::copy_engine) {
      if (const CUresult rc = producer.api().cuMemcpyDtoDAsync(slots[k], target(k), slot_bytes, copy);
          rc != CUDA_SUCCESS)
        return producer.fail(rc, "cuMemcpyDtoDAsync", "copying " + slot_text(k) + " to the render device");
    } else if (const CUresult rc = producer.api().cuMemcpyDtoHAsync(host_slot(k), target(k), slot_bytes, copy);
               rc != CUDA_SUCCESS) {
      return producer.fail(rc, "cuMemcpyDtoHAsync", "copying " + slot_text(k) + " to staging memory");
    }
  }
  MEMBRIDGE_TRY(record(producer, moved[k], copy, "marking the slot's copy"));
  moved_recorded[k] = true;
  MEMBRIDGE_TRY(wait(render, relay, moved[k], "the relay stream waiting for the slot's copy"));
  if (mode == cross_gpu_mode::copy_engine) return ok();
  MEMBRIDGE_TRY_ASSIGN(auto scope, render.enter());
  if (const CUresult rc = render.api().cuMemcpyHtoDAsync(slots[k], host_slot(k), slot_bytes, relay); rc != CUDA_SUCCESS)
    return render.fail(rc, "cuMemcpyHtoDAsync", "copying " + slot_text(k) + " from staging memory");
  return ok();
}

cross_gpu_link::cross_gpu_link() noexcept = default;
cross_gpu_link::cross_gpu_link(cross_gpu_link&& other) noexcept = default;
cross_gpu_link& cross_gpu_link::operator=(cross_gpu_link&& other) noexcept = default;
cross_gpu_link::~cross_gpu_link() = default;

result<cross_gpu_link> cross_gpu_link::create(const cuda::device& render_gpu, const cuda::device& producer_gpu,
                                              std::span<const CUdeviceptr> slots, std::size_t slot_bytes,
                                              const cross_gpu_link_options& options) {
  constexpr const char* call = "cross_gpu_link::create";
  if (!render_gpu.valid() || !producer_gpu.valid())
    return error(errc::invalid_argument, call, "the render or the producer device is empty");
  if (render_gpu.native() == producer_gpu.native())
    return error(errc::invalid_argument, call,
                 "the producer and the renderer are the same GPU (device " + std::to_string(render_gpu.ordinal()) +
                     "): use the frame timeline alone");
  if (slots.empty() || slot_bytes == 0) return error(errc::invalid_argument, call, "no slot, or slots of 0 bytes");
  for (std::size_t i = 0; i < slots.size(); ++i)
    if (slots[i] == 0)
      return error(errc::invalid_argument, call, slot_text(static_cast<std::uint32_t>(i)) + " has address 0");

  MEMBRIDGE_TRY_ASSIGN(const cross_gpu_mode mode, resolve_mode(render_gpu, producer_gpu, options.mode));
  auto s = std::make_unique<state>();  // owns each resource as soon as it exists: a failure frees them
  s->render = gpu::of(render_gpu, "render");
  s->producer = gpu::of(producer_gpu, "producer");
  s->mode = mode;
  s->slots.assign(slots.begin(), slots.end());
  s->slot_bytes = slot_bytes;
  if (auto made = s->make(producer_gpu); !made) return std::move(made).error().add_context(call);

  if (mode != cross_gpu_mode::staged) {
    const cuda::device_access grant{&producer_gpu, cuda::access::read_write};
    for (const auto& [address, bytes] : slot_runs(slots, slot_bytes))
      if (auto granted = cuda::set_access(render_gpu, address, bytes, std::span(&grant, 1)); !granted)
        return std::move(granted).error().add_context("granting the producer device access to the slots");
  }
  cross_gpu_link out;
  out.state_ = std::move(s);
  return out;
}

cross_gpu_mode cross_gpu_link::mode() const noexcept { return state_ ? state_->mode : cross_gpu_mode::automatic; }
std::uint32_t cross_gpu_link::slots() const noexcept {
  return state_ ? static_cast<std::uint32_t>(state_->slots.size()) : 0;
}
std::size_t cross_gpu_link::slot_bytes() const noexcept { return state_ ? state_->slot_bytes : 0; }
CUdeviceptr cross_gpu_link::write_target(std::uint64_t frame) const noexcept {
  return state_ ? state_->target(state_->slot(frame)) : 0;
}
CUstream cross_gpu_link::relay_stream() const noexcept { return state_ ? state_->relay : nullptr; }
CUstream cross_gpu_link::copy_stream() const noexcept { return state_ ? state_->copy : nullptr; }

result<CUdeviceptr> cross_gpu_link::state::open(CUstream producer_stream, std::uint64_t frame, CUstream freed_on) {
  const std::uint32_t k = slot(frame);
  MEMBRIDGE_TRY(record(render, freed[k], freed_on, "marking the slot free on the render device"));
  if (mode == cross_gpu_mode::peer_write)
    MEMBRIDGE_TRY(wait(producer, producer_stream, freed[k], "the producer waiting until the renderer is done with the slot"));
  else if (moved_recorded[k])
    MEMBRIDGE_TRY(wait(producer, producer_stream, moved[k], "the producer waiting until its buffer's slot was copied"));
  open_frame = frame;
  return target(k);
}

result<CUdeviceptr> cross_gpu_link::open_slot(CUstream producer, std::uint64_t frame) {
  constexpr const char* call = "cross_gpu_link::open_slot";
  if (!state_) return error(errc::invalid_argument, call, "the link is empty");
  state& s = *state_;
  if (s.open_frame)
    return error(errc::invalid_argument, call,
                 "frame " + std::to_string(*s.open_frame) + " is still open (end it before frame " +
                     std::to_string(frame) + ")");
  return s.open(producer, frame, s.relay);
}

result<void> cross_gpu_link::close_slot(CUstream producer, std::uint64_t frame) {
  constexpr const char* call = "cross_gpu_link::close_slot";
  if (!state_) return error(errc::invalid_argument, call, "the link is empty");
  state& s = *state_;
  if (s.open_frame != frame)
    return error(errc::invalid_argument, call, "frame " + std::to_string(frame) + " is not the open frame");
  const std::uint32_t k = s.slot(frame);
  MEMBRIDGE_TRY(s.record(s.producer, s.written[k], producer, "marking the frame's kernels done"));
  if (s.mode == cross_gpu_mode::peer_write)
    MEMBRIDGE_TRY(s.wait(s.render, s.relay, s.written[k], "the relay stream waiting for the frame's kernels"));
  else
    MEMBRIDGE_TRY(s.move_to_slot(k));
  s.open_frame.reset();
  return ok();
}

namespace {

result<void> check_timeline(const frame_timeline& timeline, std::uint32_t slots, const char* call) {
  if (!timeline.valid() || !timeline.has_cuda())
    return error(errc::invalid_argument, call, "the frame timeline has no CUDA producer");
  if (timeline.slots() != slots)
    return error(errc::invalid_argument, call,
                 "the frame timeline has " + std::to_string(timeline.slots()) + " slots, the link " +
                     std::to_string(slots));
  return ok();
}

}  // namespace

result<CUdeviceptr> cross_gpu_link::begin_frame(const frame_timeline& timeline, CUstream producer, std::uint64_t frame) {
  constexpr const char* call = "cross_gpu_link::begin_frame";
  if (!state_) return error(errc::invalid_argument, call, "the link is empty");
  MEMBRIDGE_TRY(check_timeline(timeline, slots(), call));
  if (state_->open_frame) return open_slot(producer, frame);  // the error naming the open frame
  // On the acquire stream, not the relay: the relay stream waits for each frame's copy before its
  // release, and a slot's acquire queued behind that would hold the next copy (or the producer's
  // kernels, peer_write) until the previous frame had crossed, one frame at a time.
  MEMBRIDGE_TRY(timeline.cuda_acquire(state_->acquire, frame));
  return state_->open(producer, frame, state_->acquire);
}

result<void> cross_gpu_link::end_frame(const frame_timeline& timeline, CUstream producer, std::uint64_t frame) {
  constexpr const char* call = "cross_gpu_link::end_frame";
  if (!state_) return error(errc::invalid_argument, call, "the link is empty");
  MEMBRIDGE_TRY(check_timeline(timeline, slots(), call));
  MEMBRIDGE_TRY(close_slot(producer, frame));
  return timeline.cuda_release(state_->relay, frame);
}

result<void> cross_gpu_link::synchronize() const {
  if (!state_) return error(errc::invalid_argument, "cross_gpu_link::synchronize", "the link is empty");
  return state_->sync_streams();
}

}  // namespace membridge::sync
