// Part (v): the sim viewed by GL in the same process (issue 12 (c), GL half). The design is the
// frame-loop benchmark's viewed part (bench/frame_loop/viewed.hpp) with a GL viewer:
//   sim thread: per step, a copy of the source slot into a free slot (32 MiB at 1M particles) and a
//     stamp of the step number into every particle (realtime::stamp_particles), as fast as the GPU runs
//     them, at most sim_depth steps in flight (CUDA events). When the viewer asked for a frame, the
//     step after the request publishes it: cuda_release(f) (produced = f + 1) and (frame, step, slot).
//     A slot the viewer may still read (consumed < its frame + 1, read on the host) is never written;
//     only when neither other slot is free does CUDA wait for `consumed` on the GPU.
//   render thread (this one, GL current), at each tick of a pacer: asks for a frame, waits on the host
//     for its publication, then gl_frame_consumer::acquire(f) (GL waits for the step on the GPU), a GL
//     timestamp, a copy of the whole slot into a GL buffer of its own (what a renderer reads), the stamp
//     of one probe particle of that copy into a history, a GL timestamp, release(f) (consumed = f + 1).
// The window is timed on the sim's stream with CUDA events. Every drawn frame's probe must read the
// step it was told it draws; the sim's last slot must hold its last step.
#include "viewed.hpp"

#include "realtime/kernels.cuh"
#include "support/pacing.hpp"
#include "support/viewed_run.hpp"

#include <membridge/cuda/growable_buffer.hpp>
#include <membridge/sync/frame_timeline.hpp>
#include <membridge/sync/gl_bridge.hpp>
#include <membridge/sync/gl_frame_consumer.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <iostream>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace membridge::bench::gl_bench {

namespace {

namespace rt = realtime;

constexpr std::uint32_t mailbox_slots = 3;              ///< The mailbox's slots.
constexpr std::uint32_t initial_slot = mailbox_slots - 1;
constexpr std::size_t particle_bytes = 32;
constexpr std::size_t stamp_offset = 28;                ///< velocity.w: what stamp_particles writes.
constexpr std::uint64_t sim_depth = 16;                 ///< Sim steps in flight at most.
constexpr double goal_ratio = 0.97;
constexpr int goal_rate_hz = 144;

struct viewed_config {
  std::size_t count = std::size_t{1} << 20U;
  double seconds = 2.0;         ///< Window per viewed run (sim alone: 0.6x, >= 0.5 s).
  double warmup_seconds = 0.5;
  std::vector<int> rates_hz = {60, 144};
};

/// The 3 slots in one growable_buffer, imported once into GL.
struct mailbox {
  cuda::growable_buffer buffer;
  gl::chunked_buffer view;
  gl::buffer_segment segment{};
  std::size_t slot_bytes = 0;
  std::size_t count = 0;
  [[nodiscard]] char* slot_data(std::uint32_t s) const noexcept { return buffer.data<char>() + s * slot_bytes; }
  [[nodiscard]] std::size_t gl_offset(std::uint32_t s) const noexcept {
    return segment.buffer_offset + (s * slot_bytes - segment.offset);
  }
};

/// A CUDA event (timing or not), owned.
class event {
 public:
  explicit event(bool timing) {
    MEMBRIDGE_GL_BENCH_CUDA(cudaEventCreateWithFlags(&e_, timing ? cudaEventDefault : cudaEventDisableTiming));
  }
  event(const event&) = delete;
  event& operator=(const event&) = delete;
  event(event&& other) noexcept : e_(std::exchange(other.e_, nullptr)) {}
  event& operator=(event&&) = delete;
  ~event() {
    if (e_ != nullptr) (void)cudaEventDestroy(e_);
  }
  [[nodiscard]] cudaEvent_t get() const noexcept { return e_; }

 private:
  cudaEvent_t e_ = nullptr;
};

/// What the sim and render threads of one run share: the shared viewed-run state, signalling the
/// timeline's produced and consumed semaphores (`t`, null without a GL viewer) on a failure.
class run_state : public viewed_run_state {
 public:
  run_state(std::size_t capacity, const sync::frame_timeline* t)
      : viewed_run_state(capacity, {t != nullptr ? &t->produced() : nullptr, t != nullptr ? &t->consumed() : nullptr},
                         "[gl part v] stopping the run: ") {}
};

struct sim_outcome {
  std::uint64_t k0 = 0, k1 = 0;  ///< Steps done when the window opened / closed.
  std::uint64_t f0 = 0, f1 = 0;  ///< Frames published when the window opened / closed.
  std::uint64_t steps = 0;
  std::uint32_t last_slot = initial_slot;
  std::uint64_t gpu_waits = 0;
  std::uint64_t host_checks = 0;
};

/// Polls `e` until it completed (the sim's throttle).
void spin_event(cudaEvent_t e, const run_state& st) {
  const auto deadline = steady::now() + wait_timeout;
  for (std::uint32_t i = 0;; ++i) {
    const cudaError_t rc = cudaEventQuery(e);
    if (rc == cudaSuccess) return;
    if (rc != cudaErrorNotReady) check_cuda(rc, "cudaEventQuery (sim throttle)");
    if ((i & 63U) == 0) {
      if (st.failed()) throw bench_failure("stopped: the render thread failed");
      if (steady::now() > deadline) throw bench_failure("timeout: a sim step did not finish within 20 s");
    }
  }
}

/// The sim: steps as fast as the GPU runs them, answering the viewer's requests (`t` null: no viewer).
void sim_loop(int ordinal, const mailbox& mb, run_state& st, const sync::frame_timeline* t, cudaStream_t stream,
              const event& start, const event& stop, sim_outcome& out) {
  MEMBRIDGE_GL_BENCH_CUDA(cudaSetDevice(ordinal));
  std::vector<event> ring;
  for (std::uint64_t i = 0; i < sim_depth; ++i) ring.emplace_back(false);
  std::uint32_t src = initial_slot;
  std::array<std::uint64_t, mailbox_slots> release_at{};  // `consumed` value before the slot may be written
  std::uint64_t viewer_done = 0;                           // last `consumed` value read
  std::uint64_t n = 0;
  while (!st.stop_sim.load(std::memory_order_relaxed) && !st.failed()) {
    const std::uint64_t step = n + 1;
    if (step > sim_depth) spin_event(ring[step % sim_depth].get(), st);
    const bool publish = t != nullptr && st.request.exchange(false, std::memory_order_acq_rel);
    const std::uint32_t a = (src + 1) % mailbox_slots;
    const std::uint32_t b = (src + 2) % mailbox_slots;
    const auto is_free = [&](std::uint32_t x) { return release_at[x] <= viewer_done; };
    if (t != nullptr && !is_free(a) && !is_free(b)) {
      viewer_done = value_or_fail(t->consumed().value(), "reading the viewer's consumed value");
      ++out.host_checks;
    }
    std::uint32_t dst = is_free(a) ? a : b;
    if (!is_free(a) && !is_free(b)) {
      dst = release_at[a] <= release_at[b] ? a : b;
      ok_or_fail(t->cuda_consumed().wait(stream, release_at[dst]), "CUDA wait on the viewer's consumed value");
      ++out.gpu_waits;
    }
    MEMBRIDGE_GL_BENCH_CUDA(
        cudaMemcpyAsync(mb.slot_data(dst), mb.slot_data(src), mb.slot_bytes, cudaMemcpyDeviceToDevice, stream));
    check_cuda(rt::stamp_particles(mb.slot_data(dst), mb.count, static_cast<std::uint32_t>(step), stream),
               "stamp_particles (sim step)");
    if (publish) {
      const std::uint64_t f = st.published.load(std::memory_order_relaxed);
      if (f >= st.pubs.size()) throw bench_failure("the sim published more frames than there is room for");
      ok_or_fail(t->cuda_release(stream, f), "frame_timeline::cuda_release (publish)");
      release_at[dst] = f + 1;
      st.pubs[f] = {step, dst};
      st.published.store(f + 1, std::memory_order_release);
    }
    MEMBRIDGE_GL_BENCH_CUDA(cudaEventRecord(ring[step % sim_depth].get(), stream));
    const int mark = st.mark.load(std::memory_order_acquire);
    if (mark == 1 && st.marked.load(std::memory_order_relaxed) == 0) {
      MEMBRIDGE_GL_BENCH_CUDA(cudaEventRecord(start.get(), stream));
      out.k0 = step;
      out.f0 = st.published.load(std::memory_order_relaxed);
      st.marked.store(1, std::memory_order_release);
    } else if (mark == 2 && st.marked.load(std::memory_order_relaxed) == 1) {
      MEMBRIDGE_GL_BENCH_CUDA(cudaEventRecord(stop.get(), stream));
      out.k1 = step;
      out.f1 = st.published.load(std::memory_order_relaxed);
      st.marked.store(2, std::memory_order_release);
    }
    src = dst;
    n = step;
  }
  out.steps = n;
  out.last_slot = src;
}

/// One run: the sim alone (rate_hz 0) or with the GL viewer at rate_hz.
struct viewed_run {
  int rate_hz = 0;
  std::uint64_t steps = 0;          ///< Sim steps in the window.
  double window_ms = 0.0;           ///< CUDA events.
  std::uint64_t frames = 0;         ///< Frames published (and drawn) in the window.
  std::uint64_t frames_total = 0;   ///< Frames drawn in the whole run (all checked).
  std::vector<double> frame_gpu_us; ///< Per frame in the window: the GL work (timestamps after the wait and after the copies).
  std::vector<double> tick_to_submit_us;
  std::uint64_t missed_ticks = 0;
  std::uint64_t sim_gpu_waits = 0;
  std::uint64_t sim_host_checks = 0;
  [[nodiscard]] double steps_per_s() const noexcept {
    return window_ms > 0.0 ? static_cast<double>(steps) * 1e3 / window_ms : 0.0;
  }
};

std::size_t probe_particle(std::uint64_t frame, std::size_t count) {
  return static_cast<std::size_t>((frame * 104729U + 7U) % count);
}

steady::duration seconds_of(double s) {
  return std::chrono::duration_cast<steady::duration>(std::chrono::duration<double>(s));
}

viewed_run run_one(const bench_env& env, const mailbox& mb, const gl_buffer& own, const viewed_config& c, int rate_hz) {
  const std::string what = rate_hz == 0 ? std::string("sim alone") : "GL viewer at " + std::to_string(rate_hz) + " Hz";
  std::optional<sync::frame_timeline> timeline;
  std::optional<sync::gl_frame_consumer> consumer;
  if (rate_hz > 0) {
    timeline.emplace(value_or_fail(sync::frame_timeline::create(*env.vk, *env.cu, {.slots = mailbox_slots}),
                                   "frame_timeline::create (part v)"));
    consumer.emplace(value_or_fail(sync::gl_frame_consumer::import(env.gl->gl(), *timeline),
                                   "gl_frame_consumer::import (part v)"));
  }
  const std::size_t capacity =
      rate_hz > 0 ? static_cast<std::size_t>(std::ceil((c.warmup_seconds + c.seconds) * rate_hz * 1.25)) + 64 : 1;
  run_state st(capacity, timeline ? &*timeline : nullptr);
  history probes(capacity);
  gpu_clock begin_clock(capacity);
  gpu_clock end_clock(capacity);
  frame_throttle throttle(2);
  const event start(true);
  const event stop(true);
  const cuda_stream stream;
  sim_outcome so;
  std::uint64_t frames = 0;
  std::uint64_t missed = 0;
  std::vector<double> tick_to_submit;
  const std::array<unsigned int, 1> names{mb.segment.buffer};
  const gl::semaphore_objects objects{.buffers = names, .textures = {}};

  std::thread sim([&] {
    try {
      sim_loop(env.cu->ordinal(), mb, st, timeline ? &*timeline : nullptr, stream.get(), start, stop, so);
    } catch (const std::exception& e) {
      st.fail(std::string("sim thread: ") + e.what());
    }
  });
  try {
    const auto warm_end = steady::now() + seconds_of(c.warmup_seconds);
    const auto window = seconds_of(rate_hz == 0 ? std::max(0.5, 0.6 * c.seconds) : c.seconds);
    steady::time_point window_end{};
    int phase = 0;
    std::optional<pacer> pace;
    if (rate_hz > 0) {
      pace.emplace(static_cast<double>(rate_hz));
      pace->start();
    }
    std::size_t k = 0;
    while (!st.failed()) {
      const auto now = steady::now();
      if (phase == 0 && now >= warm_end) {
        st.mark.store(1, std::memory_order_release);
        phase = 1;
        window_end = now + window;
      } else if (phase == 1 && now >= window_end && st.marked.load(std::memory_order_acquire) >= 1) {
        st.mark.store(2, std::memory_order_release);
        phase = 2;
      } else if (phase == 2 && st.marked.load(std::memory_order_acquire) >= 2) {
        break;
      }
      if (phase > 0 && now > window_end + wait_timeout) throw bench_failure("timeout: the sim did not mark the window");
      if (!pace) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
        continue;
      }
      pace->wait(k);
      const auto tick = pace->tick(k);
      ++k;
      for (const auto t = steady::now(); pace->tick(k) <= t; ++k) ++missed;  // fell behind: keep the grid
      const std::uint64_t f = frames;
      if (f >= capacity) throw bench_failure("the viewer ran out of frames (capacity " + std::to_string(capacity) + ")");
      const std::optional<publication> requested = st.request_frame(f, wait_timeout);
      if (!requested || st.failed()) break;
      const publication p = *requested;
      throttle.wait(f);
      begin_clock.prepare(f);
      end_clock.prepare(f);
      ok_or_fail(consumer->acquire(f, objects), "gl_frame_consumer::acquire");
      begin_clock.record(f);
      glCopyNamedBufferSubData(mb.segment.buffer, own.name(), static_cast<GLintptr>(mb.gl_offset(p.slot)), 0,
                               static_cast<GLsizeiptr>(mb.slot_bytes));
      probes.copy_from(own.name(), probe_particle(f, mb.count) * particle_bytes + stamp_offset,
                       static_cast<std::uint32_t>(p.step));
      end_clock.record(f);
      ok_or_fail(consumer->release(f, objects), "gl_frame_consumer::release");
      throttle.fence(f);
      tick_to_submit.push_back(us_between(tick, steady::now()));
      frames = f + 1;
    }
  } catch (const std::exception& e) {
    st.fail(std::string("render thread: ") + e.what());
  }
  st.stop_sim.store(true);
  sim.join();
  stream.synchronize();
  throttle.drain();
  glFinish();
  check_gl("part (v), " + what);
  st.rethrow_if_failed();

  viewed_run r;
  r.rate_hz = rate_hz;
  r.steps = so.k1 - so.k0;
  float ms = 0.0F;
  MEMBRIDGE_GL_BENCH_CUDA(cudaEventElapsedTime(&ms, start.get(), stop.get()));
  r.window_ms = ms;
  r.frames = so.f1 - so.f0;
  r.frames_total = frames;
  r.missed_ticks = missed;
  r.sim_gpu_waits = so.gpu_waits;
  r.sim_host_checks = so.host_checks;
  if (rate_hz > 0) {
    const std::vector<std::uint64_t> b = begin_clock.finish();
    const std::vector<std::uint64_t> e = end_clock.finish();
    for (std::uint64_t f = so.f0; f < so.f1 && f < frames; ++f) {
      r.frame_gpu_us.push_back(static_cast<double>(e[f] - b[f]) / 1e3);
      r.tick_to_submit_us.push_back(tick_to_submit[f]);
    }
    if (st.published.load() != frames)
      throw bench_failure("part (v), " + what + ": " + std::to_string(st.published.load()) + " frames published but " +
                          std::to_string(frames) + " drawn");
    if (frames == 0) throw bench_failure("part (v), " + what + ": the viewer drew no frame");
    probes.verify("part (v), " + what + ": the step stamp each drawn frame read");
  }
  // The sim's last step, read back from its slot (first and last particle).
  if (so.steps == 0) throw bench_failure("part (v), " + what + ": the sim ran no step");
  for (const std::size_t i : {std::size_t{0}, mb.count - 1}) {
    std::uint32_t stamp = 0;
    MEMBRIDGE_GL_BENCH_CUDA(cudaMemcpy(&stamp, mb.slot_data(so.last_slot) + i * particle_bytes + stamp_offset, 4,
                                       cudaMemcpyDeviceToHost));
    if (stamp != static_cast<std::uint32_t>(so.steps))
      throw bench_failure("data check failed: part (v), " + what + ": particle " + std::to_string(i) +
                          " of the sim's last slot holds stamp " + std::to_string(stamp) + ", not its last step " +
                          std::to_string(so.steps));
  }
  std::cerr << "[gl part v] " << what << ": " << fixed(r.steps_per_s(), 0) << " sim steps/s, " << r.frames
            << " frames in " << fixed(r.window_ms, 1) << " ms\n";
  return r;
}

double mean_of(const std::vector<double>& v) {
  if (v.empty()) return std::nan("");
  double s = 0.0;
  for (const double x : v) s += x;
  return s / static_cast<double>(v.size());
}

json finite_or_null(double v, int decimals) { return std::isfinite(v) ? json(rounded(v, decimals)) : json(nullptr); }

}  // namespace

json run_viewed(const bench_env& env, std::ostream& out) {
  if (env.order != ordering::semaphores || env.vk == nullptr)
    throw bench_failure("part (v) needs the timeline-semaphore ordering (GL_EXT_semaphore_fd + Vulkan)");
  viewed_config c;
  if (env.quick) {
    c.count = std::size_t{1} << 18U;
    c.seconds = 0.4;
    c.warmup_seconds = 0.2;
  }
  mailbox mb;
  mb.count = c.count;
  mb.slot_bytes = c.count * particle_bytes;
  const std::size_t bytes = round_up(mb.slot_bytes * mailbox_slots, env.cu->granularity());
  mb.buffer = value_or_fail(cuda::growable_buffer::create(*env.cu, {.size = bytes, .max_size = bytes}),
                            "growable_buffer::create (part v mailbox)");
  // CUDA writes the slots before GL imports them (see frames.cpp: GL read stale bytes from a chunk it
  // imported before CUDA first wrote it).
  MEMBRIDGE_GL_BENCH_CUDA(cudaMemset(mb.buffer.data(), 0, mb.buffer.capacity()));
  check_cuda(rt::seed_particles(mb.slot_data(initial_slot), 0, c.count, nullptr), "seed_particles (part v)");
  MEMBRIDGE_GL_BENCH_CUDA(cudaDeviceSynchronize());
  mb.view = value_or_fail(sync::mirror_in_gl(env.gl->gl(), mb.buffer, gl::growth_mode::per_chunk),
                          "sync::mirror_in_gl (part v mailbox)");
  if (mb.view.segments().size() != 1)
    throw bench_failure("part (v): the mailbox's GL view has " + std::to_string(mb.view.segments().size()) +
                        " segments, expected 1");
  mb.segment = mb.view.segments()[0];
  if (mb.segment.offset != 0 || mb.segment.size < mb.slot_bytes * mailbox_slots)
    throw bench_failure("part (v): the mailbox's GL segment does not cover the slots");
  const gl_buffer own = gl_buffer::with_storage(mb.slot_bytes);

  std::vector<viewed_run> alone;
  std::vector<viewed_run> runs;
  alone.push_back(run_one(env, mb, own, c, 0));
  for (const int rate : c.rates_hz) runs.push_back(run_one(env, mb, own, c, rate));
  alone.push_back(run_one(env, mb, own, c, 0));
  glFinish();
  MEMBRIDGE_GL_BENCH_CUDA(cudaDeviceSynchronize());

  std::vector<double> alone_rates;
  for (const viewed_run& a : alone) alone_rates.push_back(a.steps_per_s());
  const double baseline = mean_of(alone_rates);
  const double step_us = 1e6 / baseline;
  out << "\npart (v): the sim viewed by GL in the process: " << (c.count >> 10U) << "K particles (" << (mb.slot_bytes >> 20U)
      << " MiB a slot), the sim (copy + stamp, at most " << sim_depth << " steps in flight) as fast as it runs; the GL "
      << "viewer at a paced rate takes the newest step (" << mailbox_slots << "-slot mailbox, frame timeline "
      << "semaphores), copies the slot into its own buffer and one probe stamp into a history; "
      << fixed(c.seconds, 1) << " s window after " << fixed(c.warmup_seconds, 1) << " s warm-up\n";
  out << "  sim alone: " << fixed(baseline, 0) << " steps/s (" << fixed(step_us, 2) << " us per step; runs "
      << fixed(alone_rates.front(), 0) << ' ' << fixed(alone_rates.back(), 0) << ")\n";
  text_table t({{"viewer"},
                {"frames/s", align::right},
                {"sim steps/s", align::right},
                {"/ alone", align::right},
                {"sim lost/frame us", align::right},
                {"GL GPU us mean", align::right},
                {"med", align::right},
                {"p99", align::right},
                {"handoff/frame us", align::right},
                {"tick->submit us med", align::right},
                {"missed ticks", align::right},
                {"sim GPU waits", align::right}});
  json jruns = json::array();
  double goal_measured = std::nan("");
  for (const viewed_run& r : runs) {
    const double ratio = r.steps_per_s() / baseline;
    const double drawn_per_s = r.window_ms > 0.0 ? static_cast<double>(r.frames) * 1e3 / r.window_ms : 0.0;
    const double lost = r.frames == 0 ? std::nan("")
                                      : (r.window_ms * 1e3 - static_cast<double>(r.steps) * step_us) /
                                            static_cast<double>(r.frames);
    const double gpu_mean = mean_of(r.frame_gpu_us);
    const double handoff_us = lost - gpu_mean;
    if (r.rate_hz == goal_rate_hz) goal_measured = ratio;
    t.add_row({"GL @ " + std::to_string(r.rate_hz) + " Hz", fixed(drawn_per_s, 1), fixed(r.steps_per_s(), 0),
               fixed(ratio, 4), fixed(lost, 1), fixed(gpu_mean, 1), fixed(median(r.frame_gpu_us), 1),
               fixed(percentile(r.frame_gpu_us, 0.99), 1), fixed(handoff_us, 1), fixed(median(r.tick_to_submit_us), 1),
               std::to_string(r.missed_ticks), std::to_string(r.sim_gpu_waits)});
    jruns.push_back({{"rate_hz", r.rate_hz},
                     {"sim_steps_per_s", rounded(r.steps_per_s(), 1)},
                     {"ratio", finite_or_null(ratio, 4)},
                     {"drawn_frames_per_s", rounded(drawn_per_s, 2)},
                     {"window_ms", rounded(r.window_ms, 3)},
                     {"steps", r.steps},
                     {"frames", r.frames},
                     {"frames_total", r.frames_total},
                     {"sim_lost_us_per_frame", finite_or_null(lost, 2)},
                     {"gl_gpu_us", {{"mean", finite_or_null(gpu_mean, 2)},
                                    {"median", finite_or_null(median(r.frame_gpu_us), 2)},
                                    {"p99", finite_or_null(percentile(r.frame_gpu_us, 0.99), 2)}}},
                     {"handoff_us_per_frame", finite_or_null(handoff_us, 2)},
                     {"tick_to_submit_us", {{"median", finite_or_null(median(r.tick_to_submit_us), 1)},
                                            {"p99", finite_or_null(percentile(r.tick_to_submit_us, 0.99), 1)}}},
                     {"missed_ticks", r.missed_ticks},
                     {"sim_gpu_waits", r.sim_gpu_waits},
                     {"sim_host_checks", r.sim_host_checks}});
  }
  t.print(out);
  std::uint64_t checked = 0;
  for (const viewed_run& r : runs) checked += r.frames_total;
  out << "  GL GPU = GL timestamps after the semaphore wait and after the copies; handoff/frame = sim lost/frame - "
         "GL GPU mean\n  data: "
      << checked << " drawn frames each read the stamp of the step they were told they draw; the sim's last slot "
      << "holds its last step (every run)\n";
  const bool met = std::isfinite(goal_measured) && goal_measured >= goal_ratio;
  out << "goal gl_sim_throughput_viewed_144hz (informative; the issue's 0.97 is for Vulkan): " << fixed(goal_measured, 4)
      << " (>= " << goal_ratio << "): " << (met ? "met" : "NOT met") << "\n";
  json jalone = json::array();
  for (const viewed_run& a : alone)
    jalone.push_back({{"steps_per_s", rounded(a.steps_per_s(), 1)}, {"window_ms", rounded(a.window_ms, 3)},
                      {"steps", a.steps}});
  return {{"particles", c.count},
          {"slot_bytes", mb.slot_bytes},
          {"seconds", c.seconds},
          {"warmup_seconds", c.warmup_seconds},
          {"depth", sim_depth},
          {"rates_hz", c.rates_hz},
          {"sim_alone", {{"steps_per_s", finite_or_null(baseline, 1)}, {"step_us", finite_or_null(step_us, 3)},
                         {"runs", jalone}}},
          {"runs", jruns},
          {"data", {{"frames_checked", checked}}},
          {"goal", {{"comparison", ">="},
                    {"target", goal_ratio},
                    {"measured", finite_or_null(goal_measured, 4)},
                    {"met", met},
                    {"note", "informative: the issue's goal >= 0.97 is for the in-process Vulkan viewer"}}}};
}

}  // namespace membridge::bench::gl_bench
