#include "modes.hpp"

#include "particle_sim_cuda.hpp"
#include "stats.hpp"

#include <membridge/cuda/driver.hpp>
#include <membridge/sync/frame_timeline.hpp>

#include <volk.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <exception>
#include <functional>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <tuple>
#include <utility>

namespace membridge::bench::frame_loop {

namespace {

constexpr double ns_per_us = 1e3;

/// Waits (at most wait_timeout) for `fence`; throws bench_failure naming `what` otherwise.
void wait_fence(const session& s, VkFence fence, std::string_view what) {
  const auto ns = static_cast<std::uint64_t>(std::chrono::nanoseconds(wait_timeout).count());
  const VkResult rc = s.context.functions().vkWaitForFences(s.context.device(), 1, &fence, VK_TRUE, ns);
  if (rc == VK_TIMEOUT)
    throw bench_failure("timeout: " + std::string(what) + " did not finish within " +
                        std::to_string(wait_timeout.count()) + " s");
  check_vk(rc, "vkWaitForFences (" + std::string(what) + ")");
}

/// The first failure of a timeline loop: keeps its message and unblocks every thread, by signalling
/// both timeline semaphores from the host far past any value the loop uses (a CUDA stream or a
/// Vulkan queue left waiting would otherwise block the other threads for good).
class loop_abort {
 public:
  explicit loop_abort(const sync::frame_timeline& timeline) : timeline_(&timeline) {}

  void fail(std::string message) noexcept {
    {
      const std::lock_guard<std::mutex> guard(lock_);
      if (failed_.load()) return;
      message_ = std::move(message);
      failed_.store(true);
      // Said now: if tearing down after the failure goes wrong too, this line is already out.
      std::fprintf(stderr, "[frame_loop] stopping the frame loop: %s\n", message_.c_str());
    }
    for (const vulkan::timeline_semaphore* sem : {&timeline_->produced(), &timeline_->consumed()}) {
      const auto value = sem->value();
      if (value) (void)sem->signal(*value + 1'000'000);
    }
  }
  [[nodiscard]] bool failed() const noexcept { return failed_.load(); }
  void rethrow_if_failed() const {
    if (failed()) throw bench_failure(message_);
  }

 private:
  const sync::frame_timeline* timeline_;
  std::atomic<bool> failed_{false};
  std::mutex lock_;
  std::string message_;
};

/// What a render step reports.
struct render_step {
  std::uint64_t vulkan_waits = 0;  ///< Semaphore waits in the submit.
  double wait_cpu_ns = 0.0;        ///< CPU spent in the throttling wait.
};

/// Everything a timeline loop recorded, for every frame (warm-up included).
struct loop_trace {
  std::vector<steady::time_point> consumed_at;  ///< When the monitor saw frame n consumed.
  std::vector<double> render_cpu_ns;            ///< Render thread CPU per frame.
  std::vector<double> render_wait_cpu_ns;       ///< Of which in the throttling wait.
  std::vector<double> producer_cpu_ns;          ///< Producer thread CPU per frame.
  std::uint64_t cuda_waits = 0;                 ///< CUDA waits enqueued for frames >= first_counted.
  std::uint64_t vulkan_waits = 0;               ///< Vulkan waits submitted for frames >= first_counted.
};

/// Runs `frames` frames of a timeline loop on three threads: a producer thread calls produce(n)
/// (returns the CUDA waits it enqueued), this thread calls render(n), a monitor thread waits for
/// each frame's consumed value and timestamps it. Any failure ends all three (loop_abort) and is
/// rethrown here.
loop_trace run_timeline_loop(session& s, const sync::frame_timeline& timeline, std::uint64_t frames,
                             std::uint64_t first_counted, const std::function<std::uint64_t(std::uint64_t)>& produce,
                             const std::function<render_step(std::uint64_t)>& render) {
  loop_trace t;
  t.consumed_at.resize(frames);
  t.render_cpu_ns.resize(frames);
  t.render_wait_cpu_ns.resize(frames);
  t.producer_cpu_ns.resize(frames);
  loop_abort abort(timeline);
  std::atomic<std::uint64_t> cuda_waits{0};
  {
    const std::jthread producer([&] {
      try {
        MEMBRIDGE_FRAME_LOOP_CUDA(cudaSetDevice(s.ordinal));
        for (std::uint64_t n = 0; n < frames && !abort.failed(); ++n) {
          const double start = thread_cpu_ns();
          const std::uint64_t waits = produce(n);
          t.producer_cpu_ns[n] = thread_cpu_ns() - start;
          if (n >= first_counted) cuda_waits.fetch_add(waits, std::memory_order_relaxed);
        }
      } catch (const std::exception& e) {
        abort.fail(std::string("producer thread: ") + e.what());
      }
    });
    const std::jthread monitor([&] {
      try {
        for (std::uint64_t n = 0; n < frames && !abort.failed(); ++n) {
          ok_or_fail(timeline.wait_consumed(n, wait_timeout),
                     "monitor thread: waiting for frame " + std::to_string(n) + " to be drawn");
          t.consumed_at[n] = steady::now();
          heartbeat();
        }
      } catch (const std::exception& e) {
        abort.fail(e.what());
      }
    });
    try {
      for (std::uint64_t n = 0; n < frames && !abort.failed(); ++n) {
        const double start = thread_cpu_ns();
        const render_step step = render(n);
        t.render_cpu_ns[n] = thread_cpu_ns() - start;
        t.render_wait_cpu_ns[n] = step.wait_cpu_ns;
        if (n >= first_counted) t.vulkan_waits += step.vulkan_waits;
      }
    } catch (const std::exception& e) {
      abort.fail(std::string("render thread: ") + e.what());
    }
  }  // joins the producer and the monitor
  if (abort.failed()) {
    // Let the GPU finish what was queued before the caller destroys the semaphores it uses.
    try {
      drain(s, "the frames queued before the failure");
    } catch (const std::exception& e) {
      std::fprintf(stderr, "[frame_loop] after the failure: %s\n", e.what());
    }
  }
  abort.rethrow_if_failed();
  t.cuda_waits = cuda_waits.load();
  return t;
}

/// Values [first, end) of `per_frame`, scaled by `scale`.
std::vector<double> measured(const std::vector<double>& per_frame, std::uint64_t first, double scale) {
  std::vector<double> out;
  for (std::uint64_t n = first; n < per_frame.size(); ++n) out.push_back(per_frame[n] * scale);
  return out;
}

/// A command buffer with no commands, for the round trip and the handoff floor (SIMULTANEOUS_USE: it
/// is pending in several submits at once). Owns its pool.
class empty_commands {
 public:
  explicit empty_commands(const session& s) : s_(&s) {
    const VolkDeviceTable& vk = s.context.functions();
    VkCommandPoolCreateInfo pool_info{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
    pool_info.queueFamilyIndex = s.context.graphics_queue().family;
    MEMBRIDGE_FRAME_LOOP_VK(vk.vkCreateCommandPool(s.context.device(), &pool_info, nullptr, &pool_));
    VkCommandBufferAllocateInfo alloc{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
    alloc.commandPool = pool_;
    alloc.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    alloc.commandBufferCount = 1;
    MEMBRIDGE_FRAME_LOOP_VK(vk.vkAllocateCommandBuffers(s.context.device(), &alloc, &commands_));
    VkCommandBufferBeginInfo begin{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    begin.flags = VK_COMMAND_BUFFER_USAGE_SIMULTANEOUS_USE_BIT;
    MEMBRIDGE_FRAME_LOOP_VK(vk.vkBeginCommandBuffer(commands_, &begin));
    MEMBRIDGE_FRAME_LOOP_VK(vk.vkEndCommandBuffer(commands_));
  }
  empty_commands(const empty_commands&) = delete;
  empty_commands& operator=(const empty_commands&) = delete;
  ~empty_commands() {
    if (pool_ != VK_NULL_HANDLE) s_->context.functions().vkDestroyCommandPool(s_->context.device(), pool_, nullptr);
  }
  [[nodiscard]] const VkCommandBuffer& get() const noexcept { return commands_; }

 private:
  const session* s_;
  VkCommandPool pool_ = VK_NULL_HANDLE;
  VkCommandBuffer commands_ = VK_NULL_HANDLE;
};

/// A fence per slot for submits made outside the renderer (drain() waits for the renderer's fences
/// only): the destructor waits (at most wait_timeout) for every fence submitted since its last reset,
/// so no such submit is pending when what it uses goes away.
class slot_fences {
 public:
  explicit slot_fences(const session& s) : s_(&s) {
    try {
      for (VkFence& fence : fences_) {
        const VkFenceCreateInfo info{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
        MEMBRIDGE_FRAME_LOOP_VK(s.context.functions().vkCreateFence(s.context.device(), &info, nullptr, &fence));
      }
    } catch (...) {
      destroy();
      throw;
    }
  }
  slot_fences(const slot_fences&) = delete;
  slot_fences& operator=(const slot_fences&) = delete;
  ~slot_fences() {
    const VolkDeviceTable& vk = s_->context.functions();
    const auto ns = static_cast<std::uint64_t>(std::chrono::nanoseconds(wait_timeout).count());
    for (std::uint32_t slot = 0; slot < ring_slots; ++slot)
      if (pending_[slot]) (void)vk.vkWaitForFences(s_->context.device(), 1, &fences_[slot], VK_TRUE, ns);
    destroy();
  }
  [[nodiscard]] VkFence get(std::uint32_t slot) const noexcept { return fences_[slot]; }
  /// Makes the fence of `slot` unsignalled again (its last submit must have completed).
  void reset(std::uint32_t slot) {
    MEMBRIDGE_FRAME_LOOP_VK(s_->context.functions().vkResetFences(s_->context.device(), 1, &fences_[slot]));
    pending_[slot] = false;
  }
  /// Says that a submit signalling the fence of `slot` was made.
  void submitted(std::uint32_t slot) noexcept { pending_[slot] = true; }

 private:
  void destroy() noexcept {
    for (VkFence& fence : fences_)
      if (fence != VK_NULL_HANDLE) s_->context.functions().vkDestroyFence(s_->context.device(), fence, nullptr);
  }

  const session* s_;
  std::array<VkFence, ring_slots> fences_{};
  std::array<bool, ring_slots> pending_{};
};

double measure_sim_ms(session& s, const scene& sc, int steps) {
  const cudaStream_t stream = s.stream.get();
  const cuda_event start;
  const cuda_event stop;
  std::vector<double> samples;
  for (int r = 0; r < floor_repeats; ++r) {
    MEMBRIDGE_FRAME_LOOP_CUDA(cudaEventRecord(start.get(), stream));
    for (int k = 0; k < floor_frames; ++k) enqueue_sim(s, sc, static_cast<std::uint64_t>(k), steps, stream);
    MEMBRIDGE_FRAME_LOOP_CUDA(cudaEventRecord(stop.get(), stream));
    wait_event(stop, "the sim floor frames");
    samples.push_back(elapsed_ms(start, stop) / floor_frames);
    heartbeat();
  }
  return median(samples);
}

double measure_draw_ms(session& s, const scene& sc) {
  const auto count = static_cast<std::uint32_t>(sc.count);
  std::vector<double> samples;
  ok_or_fail(s.renderer.wait_idle(), "particle_renderer::wait_idle");
  for (int r = 0; r < floor_repeats; ++r) {
    const auto start = steady::now();
    for (int k = 0; k < floor_frames; ++k) {
      const std::uint32_t slot = scene::slot_of(static_cast<std::uint64_t>(k));
      (void)value_or_fail(s.renderer.record(slot, sc.vk_buffer, sc.slot_offset(slot), count, s.view_proj),
                          "particle_renderer::record (draw floor)");
      ok_or_fail(s.renderer.submit(slot), "particle_renderer::submit (draw floor)");
    }
    ok_or_fail(s.renderer.wait_idle(), "particle_renderer::wait_idle (draw floor)");
    samples.push_back(ms_between(start, steady::now()) / floor_frames);
    heartbeat();
  }
  return median(samples);
}

double measure_round_trip_ms(session& s) {
  const auto timeline = value_or_fail(sync::frame_timeline::create(s.context, s.device, {.slots = 1}),
                                      "frame_timeline::create (1 slot)");
  const empty_commands commands(s);
  const cudaStream_t stream = s.stream.get();
  const VkQueue queue = s.queue();
  constexpr auto total = static_cast<std::uint64_t>(round_trip_warmup + round_trip_iterations);
  // Both sides stay at most ring_slots iterations ahead of the consumed value (as in the frame loop),
  // so the GPU always has the next handoff queued but queues stay short.
  const auto produce = [&](std::uint64_t n) -> std::uint64_t {
    if (n >= ring_slots)
      ok_or_fail(timeline.wait_produced(n - ring_slots, wait_timeout), "round trip: producer throttle");
    ok_or_fail(timeline.cuda_acquire(stream, n), "frame_timeline::cuda_acquire (round trip)");
    ok_or_fail(timeline.cuda_release(stream, n), "frame_timeline::cuda_release (round trip)");
    return 0;
  };
  const auto render = [&](std::uint64_t n) -> render_step {
    if (n >= ring_slots)
      ok_or_fail(timeline.wait_consumed(n - ring_slots, wait_timeout), "round trip: submit throttle");
    ok_or_fail(timeline.submit(queue, std::span<const VkCommandBuffer>(&commands.get(), 1), n,
                               VK_PIPELINE_STAGE_ALL_COMMANDS_BIT),
               "frame_timeline::submit (round trip)");
    return {1, 0.0};
  };
  const loop_trace t = run_timeline_loop(s, timeline, total, total, produce, render);
  drain(s, "the round trip loop");
  return ms_between(t.consumed_at[round_trip_warmup - 1], t.consumed_at[total - 1]) / round_trip_iterations;
}

/// Whose calls hand each frame over in the pipelined loop.
enum class handoff_calls : std::uint8_t {
  membridge,  ///< frame_timeline's cuda_acquire, cuda_release (and submit, in the floor's draw).
  raw,        ///< The same driver calls made directly on the timeline's semaphores (raw_cuda_acquire...).
};

/// frame_timeline::cuda_acquire(stream, frame) without membridge: cuWaitExternalSemaphoresAsync on
/// the timeline's CUDA import of `consumed` through the driver table (no context check), from frame
/// slots() on. The calling thread's current context must be the session's (cudaSetDevice).
void raw_cuda_acquire(const session& s, const sync::frame_timeline& t, CUstream stream, std::uint64_t frame) {
  if (frame < t.slots()) return;
  const CUexternalSemaphore consumed = t.cuda_consumed().native();
  CUDA_EXTERNAL_SEMAPHORE_WAIT_PARAMS params{};
  params.params.fence.value = sync::frame_timeline::consumed_value(frame - t.slots());
  const cuda::driver& d = s.device.get_driver();
  check_cu(d, d.api().cuWaitExternalSemaphoresAsync(&consumed, &params, 1, stream),
           "cuWaitExternalSemaphoresAsync (raw handoff floor)");
}

/// frame_timeline::cuda_release(stream, frame) without membridge: cuSignalExternalSemaphoresAsync on
/// the CUDA import of `produced`.
void raw_cuda_release(const session& s, const sync::frame_timeline& t, CUstream stream, std::uint64_t frame) {
  const CUexternalSemaphore produced = t.cuda_produced().native();
  CUDA_EXTERNAL_SEMAPHORE_SIGNAL_PARAMS params{};
  params.params.fence.value = sync::frame_timeline::produced_value(frame);
  const cuda::driver& d = s.device.get_driver();
  check_cu(d, d.api().cuSignalExternalSemaphoresAsync(&produced, &params, 1, stream),
           "cuSignalExternalSemaphoresAsync (raw handoff floor)");
}

/// frame_timeline::submit without membridge: one vkQueueSubmit of `commands` on the session's queue
/// waiting for `produced` at `stage` and signalling `consumed` (VkTimelineSemaphoreSubmitInfo) and `fence`.
void raw_submit(const session& s, const sync::frame_timeline& t, const VkCommandBuffer& commands,
                std::uint64_t frame, VkPipelineStageFlags stage, VkFence fence) {
  const VkSemaphore produced = t.produced().get();
  const VkSemaphore consumed = t.consumed().get();
  const std::uint64_t produced_value = sync::frame_timeline::produced_value(frame);
  const std::uint64_t consumed_value = sync::frame_timeline::consumed_value(frame);
  const VkTimelineSemaphoreSubmitInfo values{.sType = VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO,
                                             .pNext = nullptr,
                                             .waitSemaphoreValueCount = 1,
                                             .pWaitSemaphoreValues = &produced_value,
                                             .signalSemaphoreValueCount = 1,
                                             .pSignalSemaphoreValues = &consumed_value};
  const VkSubmitInfo info{.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
                          .pNext = &values,
                          .waitSemaphoreCount = 1,
                          .pWaitSemaphores = &produced,
                          .pWaitDstStageMask = &stage,
                          .commandBufferCount = 1,
                          .pCommandBuffers = &commands,
                          .signalSemaphoreCount = 1,
                          .pSignalSemaphores = &consumed};
  MEMBRIDGE_FRAME_LOOP_VK(s.context.functions().vkQueueSubmit(s.queue(), 1, &info, fence));
}

/// One frame's work in the pipelined loop, between the same handoffs whatever it is.
struct frame_work {
  /// Enqueues frame `frame`'s CUDA work on the session's stream (after cuda_acquire, before cuda_release).
  std::function<void(std::uint64_t frame)> sim;
  /// The fence the draw of `slot` signals (the render thread waits for it before the slot's next frame).
  std::function<VkFence(std::uint32_t slot)> fence;
  /// Records and submits frame `frame`'s draw of `slot`: waits for timeline.wait_info(frame), signals
  /// timeline.signal_info(frame) and fence(slot).
  std::function<void(std::uint64_t frame, std::uint32_t slot)> draw;
};

/// The pipelined loop (run_pipelined's description) with `work` as each frame's sim and draw, on
/// `timeline` (ring_slots slots), the producer's handoffs made by `calls`; drains the session's
/// stream and renderer before it returns.
mode_run pipelined_frames(session& s, const sync::frame_timeline& timeline, const loop_config& cfg,
                          const frame_work& work, handoff_calls calls, std::string_view what) {
  const std::uint64_t frames = cfg.total();
  const cudaStream_t stream = s.stream.get();
  std::vector<cuda_event> sim_done(frames);

  const auto produce = [&](std::uint64_t n) -> std::uint64_t {
    // cuda_acquire enqueues a wait on Vulkan's `consumed` from frame slots() on (the slot's last reader).
    const std::uint64_t waits = n >= timeline.slots() ? 1 : 0;
    if (calls == handoff_calls::raw)
      raw_cuda_acquire(s, timeline, stream, n);
    else
      ok_or_fail(timeline.cuda_acquire(stream, n), "frame_timeline::cuda_acquire");
    work.sim(n);
    if (calls == handoff_calls::raw)
      raw_cuda_release(s, timeline, stream, n);
    else
      ok_or_fail(timeline.cuda_release(stream, n), "frame_timeline::cuda_release");
    MEMBRIDGE_FRAME_LOOP_CUDA(cudaEventRecord(sim_done[n].get(), stream));
    return waits;
  };
  const auto render = [&](std::uint64_t n) -> render_step {
    const std::uint32_t slot = scene::slot_of(n);
    render_step step;
    if (n >= ring_slots) {
      // The draw would wait for the slot's previous frame (n - ring_slots); wait here first so the
      // CPU time of this throttling wait is known apart from recording and submitting.
      const double start = thread_cpu_ns();
      wait_fence(s, work.fence(slot), "the draw of the slot's previous frame");
      step.wait_cpu_ns = thread_cpu_ns() - start;
    }
    work.draw(n, slot);
    step.vulkan_waits = 1;
    return step;
  };
  const loop_trace t = run_timeline_loop(s, timeline, frames, cfg.warmup, produce, render);
  drain(s, what);

  mode_run out;
  for (std::uint64_t n = std::max<std::uint64_t>(cfg.warmup, 1); n < frames; ++n) {
    out.frame_ms.push_back(ms_between(t.consumed_at[n - 1], t.consumed_at[n]));
    out.gpu_frame_ms.push_back(elapsed_ms(sim_done[n - 1], sim_done[n]));
  }
  out.thread_cpu_us = measured(t.render_cpu_ns, cfg.warmup, 1.0 / ns_per_us);
  for (std::uint64_t n = cfg.warmup; n < frames; ++n)
    out.render_work_cpu_us.push_back((t.render_cpu_ns[n] - t.render_wait_cpu_ns[n]) / ns_per_us);
  out.producer_cpu_us = measured(t.producer_cpu_ns, cfg.warmup, 1.0 / ns_per_us);
  out.cuda_waits = t.cuda_waits;
  out.vulkan_waits = t.vulkan_waits;
  out.measured_frames = cfg.frames;
  return out;
}

/// The handoff floor (floor_parts::handoff_floor_ms, with `calls` raw: handoff_floor_raw_ms):
/// pipelined_frames with the least work that still runs a kernel and submits to the queue. Returns
/// {mean, median} frame interval.
std::pair<double, double> measure_handoff_floor_ms(session& s, const scene& sc, handoff_calls calls) {
  // Declared first: destroyed after the fences below waited for every submit that uses it.
  const auto timeline = value_or_fail(sync::frame_timeline::create(s.context, s.device, {.slots = ring_slots}),
                                      "frame_timeline::create (handoff floor)");
  const empty_commands commands(s);
  slot_fences fences(s);
  const cudaStream_t stream = s.stream.get();
  const VkQueue queue = s.queue();
  const frame_work work{
      .sim =
          [&](std::uint64_t n) {
            MEMBRIDGE_FRAME_LOOP_CUDA(particles::step_cuda(sc.slot_data(scene::slot_of(n)), 1, s.params, 1, stream));
          },
      .fence = [&](std::uint32_t slot) { return fences.get(slot); },
      .draw =
          [&](std::uint64_t n, std::uint32_t slot) {
            fences.reset(slot);
            if (calls == handoff_calls::raw)
              raw_submit(s, timeline, commands.get(), n, s.renderer.particle_stages(), fences.get(slot));
            else
              ok_or_fail(timeline.submit(queue, std::span<const VkCommandBuffer>(&commands.get(), 1), n,
                                         s.renderer.particle_stages(), fences.get(slot)),
                         "frame_timeline::submit (handoff floor)");
            fences.submitted(slot);
          },
  };
  const mode_run run = pipelined_frames(s, timeline, {handoff_floor_warmup, handoff_floor_frames, 1}, work, calls,
                                       "the handoff floor frames");
  return {mean(run.frame_ms), median(run.frame_ms)};
}

}  // namespace

mode_run run_pipelined(session& s, const scene& sc, const loop_config& cfg) {
  reset_particles(s, sc);
  const auto timeline = value_or_fail(sync::frame_timeline::create(s.context, s.device, {.slots = ring_slots}),
                                      "frame_timeline::create");
  const cudaStream_t stream = s.stream.get();
  const auto count = static_cast<std::uint32_t>(sc.count);
  const frame_work work{
      .sim = [&](std::uint64_t n) { enqueue_sim(s, sc, n, cfg.steps, stream); },
      .fence = [&](std::uint32_t slot) { return s.renderer.fence(slot); },
      .draw =
          [&](std::uint64_t n, std::uint32_t slot) {
            (void)value_or_fail(s.renderer.record(slot, sc.vk_buffer, sc.slot_offset(slot), count, s.view_proj),
                                "particle_renderer::record");
            const sync::semaphore_op produced = timeline.wait_info(n);
            const sync::semaphore_op consumed = timeline.signal_info(n);
            const particles::semaphore_wait waits[] = {
                {produced.semaphore, produced.value, s.renderer.particle_stages()}};
            const particles::semaphore_signal signals[] = {{consumed.semaphore, consumed.value}};
            ok_or_fail(s.renderer.submit(slot, {waits, signals, {}}), "particle_renderer::submit");
          },
  };
  return pipelined_frames(s, timeline, cfg, work, handoff_calls::membridge, "the pipelined frames");
}

namespace {

// The blocking modes' loop: per frame n (warm-up first), frame(n, slot of n) waits for everything it
// queued; the frame's wall time and thread CPU time are recorded after the warm-up. Inline: frame()
// is the timed region of both modes, as in the loops each had.
template <class Frame>
mode_run blocking_frames(session& s, const loop_config& cfg, std::string_view what, Frame&& frame) {
  mode_run out;
  for (std::uint64_t n = 0; n < cfg.total(); ++n) {
    const auto start = steady::now();
    const double cpu_start = thread_cpu_ns();
    frame(n, scene::slot_of(n));
    if (n >= cfg.warmup) {
      out.frame_ms.push_back(ms_between(start, steady::now()));
      out.thread_cpu_us.push_back((thread_cpu_ns() - cpu_start) / ns_per_us);
    }
    heartbeat();
  }
  drain(s, what);
  out.measured_frames = cfg.frames;
  return out;
}

}  // namespace

mode_run run_naive(session& s, const scene& sc, const loop_config& cfg) {
  reset_particles(s, sc);
  const cudaStream_t stream = s.stream.get();
  const auto count = static_cast<std::uint32_t>(sc.count);
  const VolkDeviceTable& vk = s.context.functions();
  return blocking_frames(s, cfg, "the naive frames", [&](std::uint64_t n, std::uint32_t slot) {
    enqueue_sim(s, sc, n, cfg.steps, stream);
    MEMBRIDGE_FRAME_LOOP_CUDA(cudaStreamSynchronize(stream));
    (void)value_or_fail(s.renderer.record(slot, sc.vk_buffer, sc.slot_offset(slot), count, s.view_proj),
                        "particle_renderer::record");
    ok_or_fail(s.renderer.submit(slot), "particle_renderer::submit");
    MEMBRIDGE_FRAME_LOOP_VK(vk.vkQueueWaitIdle(s.queue()));
  });
}

mode_run run_staging(session& s, const scene& sc, const loop_config& cfg) {
  reset_particles(s, sc);
  const cudaStream_t stream = s.stream.get();
  const auto count = static_cast<std::uint32_t>(sc.count);
  const std::span<const particles::particle> host(static_cast<const particles::particle*>(sc.host.get()), sc.count);
  return blocking_frames(s, cfg, "the staging frames", [&](std::uint64_t n, std::uint32_t slot) {
    enqueue_sim(s, sc, n, cfg.steps, stream);
    MEMBRIDGE_FRAME_LOOP_CUDA(
        cudaMemcpyAsync(sc.host.get(), sc.slot_data(slot), sc.slot_bytes, cudaMemcpyDeviceToHost, stream));
    MEMBRIDGE_FRAME_LOOP_CUDA(cudaStreamSynchronize(stream));
    ok_or_fail(s.renderer.upload_particles(host), "particle_renderer::upload_particles");
    (void)value_or_fail(s.renderer.record(slot, s.renderer.particle_buffer(), 0, count, s.view_proj),
                        "particle_renderer::record");
    ok_or_fail(s.renderer.submit(slot), "particle_renderer::submit");
    ok_or_fail(s.renderer.wait_idle(), "particle_renderer::wait_idle");
  });
}

void drain(session& s, std::string_view what) {
  const cuda_event done;
  MEMBRIDGE_FRAME_LOOP_CUDA(cudaEventRecord(done.get(), s.stream.get()));
  wait_event(done, what);
  ok_or_fail(s.renderer.wait_idle(), "particle_renderer::wait_idle (" + std::string(what) + ")");
}

floor_parts measure_floor(session& s, const scene& sc, int steps) {
  drain(s, "the frames before the floor");
  floor_parts out;
  out.sim_ms = measure_sim_ms(s, sc, steps);
  out.draw_ms = measure_draw_ms(s, sc);
  out.round_trip_ms = measure_round_trip_ms(s);
  std::tie(out.handoff_floor_ms, out.handoff_floor_median_ms) =
      measure_handoff_floor_ms(s, sc, handoff_calls::membridge);
  out.handoff_floor_raw_ms = measure_handoff_floor_ms(s, sc, handoff_calls::raw).first;
  return out;
}

}  // namespace membridge::bench::frame_loop
