// The GPU path of membridge_particles: CUDA writes the particles into a membridge growable_buffer,
// Vulkan draws them from the same memory (imported once, no copies), and a frame_timeline hands each
// frame over: one CUDA -> Vulkan -> CUDA round trip per drawn frame, however many steps run.
//
//   producer thread (own CUDA stream)            render thread (main)
//     host: wait consumed >= n - S + 1 (throttle)   record(slot n % S, buffer + (n % S) * N * 32)
//     cuda_acquire(stream, n)                       submit: wait produced >= n + 1 at the particle stage,
//     copy slot (n-1) % S -> n % S; K steps                 signal consumed = n + 1
//     cuda_release(stream, n): produced = n + 1
//
// With --sim-device B other than --render-device A, the slots and Vulkan stay on A and the producer
// runs on B through a sync::cross_gpu_link: begin_frame/end_frame replace cuda_acquire/cuda_release,
// the steps run on the link's write target (B's buffer, moved into A's slot by B's copy engine; or
// A's slot through the peer mapping; or through pinned host memory when the GPUs cannot peer).
#include "app.hpp"
#include "app_thread.hpp"          // samples/common
#include "cuda_runtime_check.hpp"  // samples/common
#include "particle_sim_cuda.hpp"

#include <membridge/core/units.hpp>
#include <membridge/cuda/device.hpp>
#include <membridge/cuda/growable_buffer.hpp>
#include <membridge/sync/cross_gpu_link.hpp>
#include <membridge/sync/frame_timeline.hpp>
#include <membridge/sync/same_gpu.hpp>
#include <membridge/sync/vulkan_mirror.hpp>

#include <cuda_runtime_api.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <optional>
#include <ostream>
#include <system_error>
#include <thread>
#include <vector>

namespace particles::app {

using membridge::errc;
using membridge::error;
using membridge::result;
using namespace std::chrono_literals;

namespace {

/// Longest a host wait of the producer or the teardown may take before the run fails.
constexpr auto wait_limit = 10s;

using samples::cuda_error;

/// The producer: a thread with a CUDA stream of its own that writes frame n into slot n % S.
class cuda_producer final : public frame_source {
 public:
  /// `link`: null when the simulation runs on the render GPU; else it moves each frame to it.
  cuda_producer(const membridge::sync::frame_timeline& timeline, membridge::sync::cross_gpu_link* link, particle* base,
                std::size_t count, const sim_params& params, const app_options& o, VkBuffer buffer,
                VkDeviceSize buffer_offset)
      : timeline_(timeline),
        link_(link),
        sim_device_(o.sim_device),
        base_(base),
        count_(count),
        params_(params),
        steps_(o.steps),
        slots_(o.slots),
        frames_(o.frames),
        buffer_(buffer),
        buffer_offset_(buffer_offset) {}

  ~cuda_producer() override { stop(); }

  result<frame_input> prepare(std::uint64_t frame, particle_renderer& renderer) override {
    if (!thread_.joinable() && !started_) {
      started_ = true;
      MEMBRIDGE_TRY(samples::start_thread(thread_, [this] { run(); }, "starting the CUDA producer thread"));
    }
    if (auto failed = failure()) return *std::move(failed);
    frame_input input;
    input.buffer = buffer_;
    input.offset = buffer_offset_ + timeline_.slot(frame) * slot_bytes();
    input.count = static_cast<std::uint32_t>(count_);
    const auto wait = timeline_.wait_info(frame);
    const auto signal = timeline_.signal_info(frame);
    // The stage that reads the particles: COMPUTE_SHADER (splat) or VERTEX_INPUT (points).
    input.waits.push_back({wait.semaphore, wait.value, renderer.particle_stages()});
    input.signals.push_back({signal.semaphore, signal.value});
    return input;
  }

  result<void> finish(std::uint64_t submitted) override {
    result<void> waited = membridge::ok();
    if (submitted > 0) {
      auto done = wait_consumed(submitted - 1, [this] { return failure().has_value(); });
      if (!done) waited = std::move(done).error();
    }
    stop();
    std::optional<error> failed = failure();
    if (submitted > 0 && (failed || !waited)) {
      // Vulkan may still wait for frames the producer never released: release them from the host so
      // the queue drains and nothing is destroyed under it (the producer has stopped and synchronised).
      const std::uint64_t target = membridge::sync::frame_timeline::produced_value(submitted - 1);
      if (auto value = timeline_.produced().value(); value && *value < target)
        (void)timeline_.produced().signal(target);
      (void)timeline_.wait_consumed(submitted - 1, wait_limit);
    }
    if (failed) return *std::move(failed);
    return waited;
  }

 private:
  [[nodiscard]] std::size_t slot_bytes() const noexcept { return count_ * sizeof(particle); }
  [[nodiscard]] particle* slot(std::uint64_t frame) const noexcept { return base_ + timeline_.slot(frame) * count_; }
  /// Where the steps of frame `frame` run: the slot, or the link's write target.
  [[nodiscard]] particle* target(std::uint64_t frame) const noexcept {
    return link_ != nullptr ? reinterpret_cast<particle*>(link_->write_target(frame)) : slot(frame);
  }

  [[nodiscard]] std::optional<error> failure() const {
    const std::scoped_lock hold(lock_);
    return failure_;
  }

  void stop() {
    stop_.store(true);
    if (thread_.joinable()) thread_.join();
  }

  /// Waits until frame `frame` was consumed, in short slices so that a stop request or `abandon()`
  /// ends the wait early (then: nothing). Errors: timeout after wait_limit; Vulkan errors.
  template <class Abandon>
  result<bool> wait_consumed(std::uint64_t frame, Abandon&& abandon) const {
    const auto deadline = std::chrono::steady_clock::now() + wait_limit;
    for (;;) {
      auto r = timeline_.wait_consumed(frame, 50ms);
      if (r) return true;
      if (r.error().code() != errc::timeout) return std::move(r).error();
      if (abandon()) return false;
      if (std::chrono::steady_clock::now() > deadline)
        return error(errc::timeout, "frame_timeline::wait_consumed",
                     "Vulkan did not finish frame " + std::to_string(frame) + " within 10 s");
    }
  }

  void run() noexcept {
    cudaStream_t stream = nullptr;
    result<void> produced = produce(stream);
    if (stream != nullptr) {
      // Every GPU-side wait on the stream was satisfied before it was enqueued (the host throttle),
      // so this returns once the enqueued copies and steps are done.
      if (const cudaError_t rc = cudaStreamSynchronize(stream); rc != cudaSuccess && produced)
        produced = cuda_error(rc, "cudaStreamSynchronize", "the producer's last frames");
      (void)cudaStreamDestroy(stream);
      if (link_ != nullptr)  // its relay and copy streams too: no GPU signal of `produced` stays pending
        if (auto synced = link_->synchronize(); !synced && produced) produced = std::move(synced).error();
    }
    if (!produced) {
      const std::scoped_lock hold(lock_);
      failure_ = std::move(produced).error().add_context("CUDA producer thread");
    }
  }

  result<void> produce(cudaStream_t& stream) {
    if (const cudaError_t rc = cudaSetDevice(sim_device_); rc != cudaSuccess)
      return cuda_error(rc, "cudaSetDevice", "device " + std::to_string(sim_device_));
    if (const cudaError_t rc = cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking); rc != cudaSuccess)
      return cuda_error(rc, "cudaStreamCreateWithFlags");
    for (std::uint64_t n = 0; (frames_ == 0 || n < frames_) && !stop_.load(); ++n) {
      if (n >= slots_) {
        // Throttle on the host: the slot's previous frame (n - S) must have been drawn, so the GPU
        // wait cuda_acquire enqueues is already satisfied and the stream never blocks on a frame
        // the render thread might not submit (it may stop at any frame).
        MEMBRIDGE_TRY_ASSIGN(const bool slot_free, wait_consumed(n - slots_, [this] { return stop_.load(); }));
        if (!slot_free) return membridge::ok();  // stopping
      }
      const auto frame = "frame " + std::to_string(n);
      if (link_ != nullptr)
        MEMBRIDGE_TRY(link_->begin_frame(timeline_, stream, n).with_context(frame));
      else
        MEMBRIDGE_TRY(timeline_.cuda_acquire(stream, n).with_context(frame));
      if (n > 0 && slots_ > 1) {
        if (const cudaError_t rc =
                cudaMemcpyAsync(target(n), target(n - 1), slot_bytes(), cudaMemcpyDeviceToDevice, stream);
            rc != cudaSuccess)
          return cuda_error(rc, "cudaMemcpyAsync", "copying the previous frame's slot: " + frame);
      }
      if (const cudaError_t rc = step_cuda(target(n), count_, params_, steps_, stream); rc != cudaSuccess)
        return cuda_error(rc, "step_cuda", frame);
      if (link_ != nullptr)
        MEMBRIDGE_TRY(link_->end_frame(timeline_, stream, n).with_context(frame));
      else
        MEMBRIDGE_TRY(timeline_.cuda_release(stream, n).with_context(frame));
    }
    return membridge::ok();
  }

  const membridge::sync::frame_timeline& timeline_;
  membridge::sync::cross_gpu_link* link_;
  int sim_device_;
  particle* base_;
  std::size_t count_;
  sim_params params_;
  int steps_;
  std::uint32_t slots_;
  std::uint64_t frames_;  // 0: until stopped
  VkBuffer buffer_;
  VkDeviceSize buffer_offset_;
  std::thread thread_;
  bool started_ = false;
  std::atomic<bool> stop_{false};
  mutable std::mutex lock_;
  std::optional<error> failure_;
};

}  // namespace

std::string gpu_unavailable_reason() { return samples::cuda_unavailable_reason(); }

result<void> run_gpu(run_environment& env) {
  const app_options& o = env.options;
  const std::string render_text = "CUDA device " + std::to_string(o.render_device);
  MEMBRIDGE_TRY_ASSIGN(auto device, membridge::cuda::device::open(o.render_device).with_context("opening " + render_text));
  std::optional<membridge::cuda::device> sim;  // only when the simulation runs on another GPU
  if (o.sim_device != o.render_device) {
    MEMBRIDGE_TRY_ASSIGN(sim, membridge::cuda::device::open(device.shared_driver(), o.sim_device)
                                  .with_context("opening the simulation's CUDA device " + std::to_string(o.sim_device)));
  }
  MEMBRIDGE_TRY_ASSIGN(auto context, membridge::sync::create_vulkan_context_for(device, context_options(env))
                                         .with_context("creating a Vulkan device on the CUDA device's GPU"));
  {
    // One buffer holds the ring of S slots. Reserve twice its size (room to grow) and map it as one
    // chunk, so Vulkan sees one VkBuffer in both growth modes: sparse (NVIDIA) and per chunk.
    const std::size_t slot_bytes = static_cast<std::size_t>(o.particles) * sizeof(particle);
    const auto rounded = membridge::round_up(slot_bytes * o.slots, device.granularity());
    if (!rounded) return error(errc::invalid_argument, "run_gpu", "the particle buffer size overflows");
    membridge::cuda::growable_buffer_options bo;
    bo.size = *rounded;
    bo.max_size = 2 * *rounded;
    bo.chunks.min_chunk = *rounded;
    MEMBRIDGE_TRY_ASSIGN(auto buffer,
                         membridge::cuda::growable_buffer::create(device, bo)
                             .with_context("allocating " + membridge::format_bytes(*rounded) + " for the particles"));
    MEMBRIDGE_TRY_ASSIGN(
        auto view,
        membridge::sync::mirror_in_vulkan(context, buffer).with_context("importing the particles into Vulkan"));
    if (view.segments().size() != 1)
      return error(errc::unsupported, "run_gpu",
                   "Vulkan sees the particle buffer as " + std::to_string(view.segments().size()) +
                       " pieces; the renderer draws from one VkBuffer");
    const membridge::vulkan::buffer_segment segment = view.segments()[0];

    const sim_params params = default_params();
    MEMBRIDGE_TRY_ASSIGN(auto timeline, membridge::sync::frame_timeline::create(context, device, {.slots = o.slots})
                                            .with_context("creating the frame timeline"));
    membridge::sync::cross_gpu_link link;  // destroyed before the timeline and the buffer
    if (sim) {
      std::vector<CUdeviceptr> slots;
      for (std::uint32_t k = 0; k < o.slots; ++k) slots.push_back(buffer.address() + k * slot_bytes);
      MEMBRIDGE_TRY_ASSIGN(link, membridge::sync::cross_gpu_link::create(device, *sim, slots, slot_bytes)
                                     .with_context("linking the simulation's GPU to the render GPU"));
    }
    {
      const auto initial = initial_particles(static_cast<std::size_t>(o.particles), o.seed, params);
      void* first = link.valid() ? reinterpret_cast<void*>(link.write_target(0)) : buffer.data<particle>();
      // The copy runs on the GPU that owns the target (with a link: the simulation's GPU, whose
      // memory the render GPU may not map), then the render GPU is current again.
      const int owner = link.valid() ? o.sim_device : o.render_device;
      cudaError_t rc = cudaSetDevice(owner);
      if (rc == cudaSuccess) rc = cudaMemcpy(first, initial.data(), slot_bytes, cudaMemcpyHostToDevice);
      const cudaError_t back = cudaSetDevice(o.render_device);
      if (rc != cudaSuccess) return cuda_error(rc, "cudaMemcpy", "uploading the initial particles into slot 0");
      if (back != cudaSuccess) return cuda_error(back, "cudaSetDevice", "device " + std::to_string(o.render_device));
    }

    path_description d;
    d.path = sim ? "GPU path (CUDA on another GPU -> Vulkan, " + std::string(membridge::sync::to_string(link.mode())) + ")"
                 : "GPU path (CUDA -> Vulkan, zero copy)";
    d.device = device.name();
    if (sim) d.device += " (simulation on CUDA device " + std::to_string(o.sim_device) + ": " + sim->name() + ")";
    d.memory = std::to_string(o.slots) + " slots x " + membridge::format_bytes(slot_bytes) +
               " in one growable_buffer (" + membridge::format_bytes(buffer.capacity()) + ", " +
               std::to_string(buffer.chunk_count()) + (buffer.chunk_count() == 1 ? " chunk" : " chunks") +
               ") imported as " + (view.is_sparse() ? "one sparse VkBuffer" : "one VkBuffer") +
               "; one frame_timeline handoff per frame, CUDA on a producer thread";
    cuda_producer producer(timeline, link.valid() ? &link : nullptr, buffer.data<particle>(), static_cast<std::size_t>(o.particles), params, o,
                           segment.buffer, segment.buffer_offset);
    MEMBRIDGE_TRY(render(context, producer, d, env));
  }  // the producer has stopped; the timeline, the view and the buffer go (buffer last: it waits for CUDA)
  return check_validation(context, env);
}

}  // namespace particles::app
