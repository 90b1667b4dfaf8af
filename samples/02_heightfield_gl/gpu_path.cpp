// The GPU path of membridge_heightfield_gl: CUDA steps the wave equation in a membridge
// growable_buffer and writes each frame into a ring slot, OpenGL draws the slot from the same memory
// (imported once with sync::mirror_in_gl, bound as a shader storage buffer), and a frame_timeline
// hands each frame over: one CUDA -> GL -> CUDA round trip per drawn frame, however many steps run.
//
//   producer thread (own CUDA stream)              render thread (main, GL context current)
//     host: wait consumed >= n - S + 1 (throttle)    GL fence of frame n - S (S frames in flight)
//     cuda_acquire(stream, n)                        consumer.acquire(n, {buffer}): GL waits produced >= n + 1
//     drops; K steps; the last writes slot n % S     draw slot n % S
//     cuda_release(stream, n): produced = n + 1      consumer.release(n, {buffer}): consumed = n + 1
//
// The semaphores are Vulkan's (sync::frame_timeline; GL and CUDA cannot make shareable ones): CUDA
// imports them, GL imports them through gl_frame_consumer (GL_EXT_semaphore_fd +
// GL_NV_timeline_semaphore). Without those GL extensions (or with --host-ordering) the render thread
// waits for `produced` on the host and signals `consumed` from the host once a frame's GL fence is done.
#include "app.hpp"
#include "app_thread.hpp"          // samples/common
#include "cuda_runtime_check.hpp"  // samples/common
#include "wave_sim_cuda.hpp"

#include <membridge/core/units.hpp>
#include <membridge/cuda/device.hpp>
#include <membridge/cuda/growable_buffer.hpp>
#include <membridge/gl/chunked_buffer.hpp>
#include <membridge/gl/headless_context.hpp>
#include <membridge/sync/frame_timeline.hpp>
#include <membridge/sync/gl_bridge.hpp>
#include <membridge/sync/gl_frame_consumer.hpp>
#include <membridge/sync/same_gpu.hpp>

#include <cuda_runtime_api.h>

#include <array>
#include <atomic>
#include <chrono>
#include <mutex>
#include <ostream>
#include <system_error>
#include <thread>

namespace heightfield {

using namespace std::chrono_literals;

namespace {

/// Longest a host wait of the producer or the render thread may take before the run fails.
constexpr auto wait_limit = 10s;

using samples::cuda_error;

/// Where the field lives in the buffer: S ring slots GL reads, then the two simulation fields.
struct buffer_layout {
  std::size_t slot_bytes = 0;   ///< grid * grid * 4.
  std::size_t stride = 0;       ///< slot_bytes rounded up to the storage buffer offset alignment.
  std::uint32_t slots = 0;      ///< Ring slots.
  [[nodiscard]] std::size_t field_offset(int which) const noexcept {
    return stride * (slots + static_cast<std::size_t>(which));
  }
  [[nodiscard]] std::size_t total() const noexcept { return stride * (slots + 2); }
};

/// The CUDA producer thread and the GL side of the handoff.
class gpu_source final : public frame_source {
 public:
  gpu_source(const membridge::sync::frame_timeline& timeline, const membridge::sync::gl_frame_consumer* consumer,
             const membridge::gl::chunked_buffer& view, std::byte* base, const buffer_layout& layout,
             const app_options& o)
      : timeline_(timeline), consumer_(consumer), view_(view), base_(base), layout_(layout), o_(o) {
    for (const auto& segment : view.segments()) names_.push_back(segment.buffer);
  }
  gpu_source(const gpu_source&) = delete;
  gpu_source& operator=(const gpu_source&) = delete;
  ~gpu_source() override { stop(); }

  result<draw_input> acquire(std::uint64_t frame) override {
    if (!started_) {
      started_ = true;
      MEMBRIDGE_TRY(samples::start_thread(thread_, [this] { run(); }, "starting the CUDA producer thread"));
    }
    if (auto failed = failure()) return *std::move(failed);
    if (consumer_ != nullptr) {
      MEMBRIDGE_TRY(consumer_->acquire(frame, objects()));
    } else {
      // Host ordering: wait on the host until CUDA released the frame.
      MEMBRIDGE_TRY_ASSIGN(const bool produced, wait_produced(frame));
      if (!produced) return *failure();
    }
    const membridge::gl::buffer_segment& segment = view_.segments().front();
    return draw_input{segment.buffer, segment.buffer_offset + timeline_.slot(frame) * layout_.stride,
                      layout_.slot_bytes};
  }

  result<void> release(std::uint64_t frame) override {
    if (consumer_ != nullptr) return consumer_->release(frame, objects());
    return membridge::ok();
  }

  result<void> retired(std::uint64_t frame) override {
    if (consumer_ != nullptr) return membridge::ok();  // GL signalled `consumed` on the GPU
    return timeline_.consumed().signal(membridge::sync::frame_timeline::consumed_value(frame));
  }

  std::optional<error> failure() const override {
    const std::scoped_lock hold(lock_);
    return failure_;
  }

  void unblock(std::uint64_t submitted) override {
    if (submitted == 0) return;
    const std::uint64_t target = membridge::sync::frame_timeline::produced_value(submitted - 1);
    if (auto value = timeline_.produced().value(); value && *value < target) (void)timeline_.produced().signal(target);
  }

  result<void> finish(std::uint64_t submitted) override {
    // GL was told to wait (on the GPU) for every submitted frame: let the producer make them all
    // before stopping it, or GL would wait for frames that never come.
    if (submitted > 0 && !failure()) (void)timeline_.wait_produced(submitted - 1, wait_limit);
    stop();
    if (auto failed = failure()) {
      unblock(submitted);
      return *std::move(failed);
    }
    if (submitted > 0) MEMBRIDGE_TRY(timeline_.wait_consumed(submitted - 1, wait_limit));
    return membridge::ok();
  }

  std::vector<double> sim_times_ms() const override {
    const std::scoped_lock hold(lock_);
    return sim_ms_;
  }
  std::string sim_clock() const override { return "CUDA events"; }

 private:
  [[nodiscard]] membridge::gl::semaphore_objects objects() const {
    return membridge::gl::semaphore_objects{names_, {}};
  }
  [[nodiscard]] float* field(int which) const noexcept {
    return reinterpret_cast<float*>(base_ + layout_.field_offset(which));
  }
  [[nodiscard]] float* slot(std::uint64_t frame) const noexcept {
    return reinterpret_cast<float*>(base_ + timeline_.slot(frame) * layout_.stride);
  }

  void stop() {
    stop_.store(true);
    if (thread_.joinable()) thread_.join();
  }

  /// Host wait in slices so that a stop or a failure ends it. Returns false when abandoned.
  template <class Wait, class Abandon>
  result<bool> wait_in_slices(Wait&& wait, Abandon&& abandon, const std::string& what) const {
    const auto deadline = std::chrono::steady_clock::now() + wait_limit;
    for (;;) {
      auto r = wait(50ms);
      if (r) return true;
      if (r.error().code() != errc::timeout) return std::move(r).error();
      if (abandon()) return false;
      if (std::chrono::steady_clock::now() > deadline) return error(errc::timeout, "frame_timeline", what + " within 10 s");
    }
  }

  result<bool> wait_produced(std::uint64_t frame) const {
    return wait_in_slices([&](std::chrono::nanoseconds t) { return timeline_.wait_produced(frame, t); },
                          [this] { return failure().has_value(); },
                          "CUDA did not produce frame " + std::to_string(frame));
  }

  void run() noexcept {
    cudaStream_t stream = nullptr;
    std::array<std::pair<cudaEvent_t, cudaEvent_t>, max_slots> events{};
    result<void> produced = produce(stream, events);
    if (stream != nullptr) {
      if (const cudaError_t rc = cudaStreamSynchronize(stream); rc != cudaSuccess && produced)
        produced = cuda_error(rc, "cudaStreamSynchronize", "the producer's last frames");
      // The last S frames' simulation times.
      const std::uint64_t first = produced_ > o_.slots ? produced_ - o_.slots : 0;
      for (std::uint64_t f = first; f < produced_ && produced; ++f) record_time(events[f % o_.slots]);
      (void)cudaStreamDestroy(stream);
    }
    for (auto& [a, b] : events) {
      if (a != nullptr) (void)cudaEventDestroy(a);
      if (b != nullptr) (void)cudaEventDestroy(b);
    }
    if (!produced) {
      const std::scoped_lock hold(lock_);
      failure_ = std::move(produced).error().add_context("CUDA producer thread");
    }
  }

  void record_time(const std::pair<cudaEvent_t, cudaEvent_t>& e) {
    float ms = 0.0f;
    if (cudaEventElapsedTime(&ms, e.first, e.second) != cudaSuccess) return;
    const std::scoped_lock hold(lock_);
    sim_ms_.push_back(static_cast<double>(ms));
  }

  result<void> produce(cudaStream_t& stream, std::array<std::pair<cudaEvent_t, cudaEvent_t>, max_slots>& events) {
    if (const cudaError_t rc = cudaSetDevice(0); rc != cudaSuccess) return cuda_error(rc, "cudaSetDevice", "device 0");
    if (const cudaError_t rc = cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking); rc != cudaSuccess)
      return cuda_error(rc, "cudaStreamCreateWithFlags");
    for (std::uint32_t i = 0; i < o_.slots; ++i) {
      if (const cudaError_t rc = cudaEventCreate(&events[i].first); rc != cudaSuccess)
        return cuda_error(rc, "cudaEventCreate");
      if (const cudaError_t rc = cudaEventCreate(&events[i].second); rc != cudaSuccess)
        return cuda_error(rc, "cudaEventCreate");
    }
    float* u_prev = field(0);
    float* u = field(1);
    for (std::uint64_t n = 0; (o_.frames == 0 || n < o_.frames) && !stop_.load(); ++n) {
      const auto& e = events[n % o_.slots];
      if (n >= o_.slots) {
        // Throttle on the host: frame n - S (the slot's last reader) was drawn, so the GPU wait
        // cuda_acquire enqueues is already satisfied and the stream never waits for a frame the render
        // thread might not submit. Its simulation events are complete too.
        MEMBRIDGE_TRY_ASSIGN(
            const bool free,
            wait_in_slices([&](std::chrono::nanoseconds t) { return timeline_.wait_consumed(n - o_.slots, t); },
                           [this] { return stop_.load(); }, "GL did not draw frame " + std::to_string(n - o_.slots)));
        if (!free) return membridge::ok();  // stopping
        record_time(e);
      }
      const std::string frame = "frame " + std::to_string(n);
      MEMBRIDGE_TRY(timeline_.cuda_acquire(stream, n).with_context(frame));
      if (const cudaError_t rc = cudaEventRecord(e.first, stream); rc != cudaSuccess)
        return cuda_error(rc, "cudaEventRecord", frame);
      std::array<drop, max_drops_per_frame> drops{};
      const std::size_t count = drops_for_frame(o_.seed, n, o_.grid, drops.data(), drops.size());
      if (const cudaError_t rc = add_drops_cuda(u_prev, u, o_.grid, drops.data(), count, stream); rc != cudaSuccess)
        return cuda_error(rc, "add_drops_cuda", frame);
      if (const cudaError_t rc = step_cuda(u_prev, u, o_.grid, wave_params{}, o_.steps, slot(n), stream);
          rc != cudaSuccess)
        return cuda_error(rc, "step_cuda", frame);
      if (const cudaError_t rc = cudaEventRecord(e.second, stream); rc != cudaSuccess)
        return cuda_error(rc, "cudaEventRecord", frame);
      MEMBRIDGE_TRY(timeline_.cuda_release(stream, n).with_context(frame));
      produced_ = n + 1;
    }
    return membridge::ok();
  }

  const membridge::sync::frame_timeline& timeline_;
  const membridge::sync::gl_frame_consumer* consumer_;  // null: host ordering
  const membridge::gl::chunked_buffer& view_;
  std::vector<unsigned int> names_;
  std::byte* base_;
  buffer_layout layout_;
  const app_options& o_;
  std::thread thread_;
  bool started_ = false;
  std::atomic<bool> stop_{false};
  std::uint64_t produced_ = 0;  // producer thread only
  mutable std::mutex lock_;
  std::optional<error> failure_;
  std::vector<double> sim_ms_;
};

double ms_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

std::string gpu_unavailable_reason() { return samples::cuda_unavailable_reason(); }

result<void> run_gpu(run_environment& env, exit_status& status) {
  app_options& o = env.options;
  if (o.grid == 0) o.grid = default_gpu_grid;
  MEMBRIDGE_TRY_ASSIGN(auto device, membridge::cuda::device::open(0).with_context("opening CUDA device 0"));
  // The frame timeline's semaphores are Vulkan's: neither CUDA nor GL can make shareable ones.
  MEMBRIDGE_TRY_ASSIGN(auto vk, membridge::sync::create_vulkan_context_for(device).with_context(
                                    "creating a Vulkan device on the CUDA device's GPU (for the semaphores)"));

  // The GL context: a window's (GLFW on EGL, same GPU checked) or a headless EGL one on the CUDA GPU.
  gl_target target;
  if (env.windowed) {
    membridge::gl::adopt_options ao;
    ao.uuid = device.uuid();
    MEMBRIDGE_TRY(open_window(target, o.width, o.height, "membridge heightfield (CUDA -> OpenGL)", ao,
                              "adopting the window's GL context (it must be on the CUDA GPU)", *env.out));
    if (!target.window) apply_mode_defaults(o, false);
  }
  if (!target.window) {
    MEMBRIDGE_TRY_ASSIGN(target.headless, membridge::sync::create_gl_context_for(device).with_context(
                                              "creating a headless GL context (EGL) on the CUDA device's GPU"));
  }
  const membridge::gl::context& gl = target.gl();
  gl_window* const window = target.window.get();
  MEMBRIDGE_TRY(membridge::sync::require_same_gpu(device, gl));

  {
    MEMBRIDGE_TRY_ASSIGN(auto renderer, heightfield_renderer::create({o.width, o.height, o.grid, 4}));
    buffer_layout layout;
    layout.slots = o.slots;
    layout.slot_bytes = static_cast<std::size_t>(o.grid) * static_cast<std::size_t>(o.grid) * sizeof(float);
    layout.stride = *membridge::round_up(layout.slot_bytes, std::max<std::size_t>(renderer.storage_offset_alignment(), 256));
    // One chunk, so GL sees one buffer (growth_mode::automatic is one GL buffer per chunk).
    const auto rounded = membridge::round_up(layout.total(), device.granularity());
    if (!rounded) return error(errc::invalid_argument, "run_gpu", "the height buffer size overflows");
    membridge::cuda::growable_buffer_options bo;
    bo.size = *rounded;
    bo.max_size = *rounded;
    bo.chunks.min_chunk = *rounded;
    MEMBRIDGE_TRY_ASSIGN(auto buffer, membridge::cuda::growable_buffer::create(device, bo).with_context(
                                          "allocating " + membridge::format_bytes(*rounded) + " for the heights"));
    if (const cudaError_t rc = cudaMemset(buffer.data(), 0, buffer.size()); rc != cudaSuccess)
      return cuda_error(rc, "cudaMemset", "clearing the heights");
    if (const cudaError_t rc = cudaDeviceSynchronize(); rc != cudaSuccess)
      return cuda_error(rc, "cudaDeviceSynchronize", "clearing the heights");
    MEMBRIDGE_TRY_ASSIGN(auto timeline, membridge::sync::frame_timeline::create(vk, device, {.slots = o.slots})
                                            .with_context("creating the frame timeline"));

    const auto import_start = std::chrono::steady_clock::now();
    MEMBRIDGE_TRY_ASSIGN(auto view,
                         // One chunk that never grows: one plain GL buffer over it (a sparse buffer gains nothing).
                         membridge::sync::mirror_in_gl(gl, buffer, membridge::gl::growth_mode::per_chunk)
                             .with_context("importing the heights into GL"));
    path_description d;
    d.import_ms = ms_since(import_start);
    if (view.segments().size() != 1)
      return error(errc::unsupported, "run_gpu",
                   "GL sees the height buffer as " + std::to_string(view.segments().size()) +
                       " pieces; the renderer draws from one buffer");

    // GL as the timeline's consumer when it can wait on and signal timeline semaphores.
    membridge::sync::gl_frame_consumer consumer;
    const auto& caps = gl.capabilities();
    std::string host_reason;
    if (o.host_ordering) {
      host_reason = "--host-ordering";
    } else if (!caps.semaphore_import() || !caps.timeline_semaphore) {
      host_reason = std::string("the GL context lacks ") +
                    (!caps.semaphore_import() ? "GL_EXT_semaphore_fd" : "GL_NV_timeline_semaphore");
    } else {
      auto imported = membridge::sync::gl_frame_consumer::import(gl, timeline);
      if (imported) consumer = std::move(*imported);
      else if (imported.error().code() == errc::unsupported) host_reason = imported.error().message();
      else return std::move(imported).error().add_context("importing the frame timeline into GL");
    }
    if (!host_reason.empty())
      *env.out << "membridge_heightfield_gl: GL does not wait on the frame timeline (" << host_reason
               << "); ordering frames on the host\n";

    d.path = "GPU path (CUDA -> GL, zero copy)";
    d.device = device.name();
    d.memory = std::to_string(o.slots) + " slots x " + membridge::format_bytes(layout.slot_bytes) +
               " + 2 simulation fields in one growable_buffer (" + membridge::format_bytes(buffer.capacity()) + ", " +
               std::to_string(buffer.chunk_count()) + (buffer.chunk_count() == 1 ? " chunk" : " chunks") +
               ") imported into GL as " + (view.is_sparse() ? "one sparse buffer" : "one buffer") +
               ", bound as a shader storage buffer";
    d.ordering = consumer.valid()
                     ? "GL waits on and signals the frame timeline's semaphores (GL_NV_timeline_semaphore): one "
                       "handoff per frame, CUDA on a producer thread"
                     : "host (" + host_reason +
                           "): the render thread waits for `produced` on the host and signals `consumed` after a GL "
                           "fence; CUDA on a producer thread";
    gpu_source source(timeline, consumer.valid() ? &consumer : nullptr, view, buffer.data<std::byte>(), layout, o);
    MEMBRIDGE_TRY(run_frames(gl, renderer, source, d, window, env, status));
  }  // the producer stopped; GL's semaphores, view and renderer go (context current), then the timeline, the buffer
  return membridge::ok();
}

}  // namespace heightfield
