#include "viewed.hpp"

#include "idle_work.hpp"
#include "ipc_viewer.hpp"
#include "modes.hpp"  // drain
#include "particle_sim_cpu.hpp"
#include "particle_sim_cuda.hpp"
#include "report.hpp"  // count_label
#include "viewed_run.hpp"

#include <membridge/cuda/external_semaphore.hpp>
#include <membridge/vulkan/timeline_semaphore.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <exception>
#include <functional>
#include <iostream>
#include <mutex>
#include <optional>
#include <span>
#include <thread>
#include <utility>

namespace membridge::bench::frame_loop {

namespace {

/// The slot the initial particles are in (reset_particles: the slot of frame -1).
constexpr std::uint32_t initial_slot = ring_slots - 1;

/// The mailbox's two timeline semaphores, made in Vulkan and imported into CUDA; fresh per run.
struct mailbox_semaphores {
  vulkan::timeline_semaphore ready;        ///< CUDA signals frame + 1 after the published step.
  vulkan::timeline_semaphore released;     ///< Vulkan signals frame + 1 after the slot's last read.
  cuda::external_semaphore cuda_ready;     ///< Declared after the Vulkan ones: destroyed first.
  cuda::external_semaphore cuda_released;
};

mailbox_semaphores make_semaphores(const session& s) {
  mailbox_semaphores m;
  m.ready = value_or_fail(vulkan::timeline_semaphore::create(s.context, 0, true), "timeline_semaphore::create (ready)");
  m.released =
      value_or_fail(vulkan::timeline_semaphore::create(s.context, 0, true), "timeline_semaphore::create (released)");
  {
    const auto fd = value_or_fail(m.ready.export_fd(), "exporting the ready semaphore");
    m.cuda_ready = value_or_fail(cuda::external_semaphore::import_timeline(s.device, fd), "importing ready into CUDA");
  }
  {
    const auto fd = value_or_fail(m.released.export_fd(), "exporting the released semaphore");
    m.cuda_released =
        value_or_fail(cuda::external_semaphore::import_timeline(s.device, fd), "importing released into CUDA");
  }
  return m;
}

/// What the threads of one run share: the shared viewed-run state, signalling ready and released
/// (`m`, null without a viewer) on a failure.
class run_state : public viewed_run_state {
 public:
  explicit run_state(std::size_t capacity, const mailbox_semaphores* m)
      : viewed_run_state(capacity, {m != nullptr ? &m->ready : nullptr, m != nullptr ? &m->released : nullptr},
                         "[frame_loop] stopping the viewed run: ") {}
};

/// A CUDA event without timing (cheaper to record), owned.
class plain_event {
 public:
  plain_event() { MEMBRIDGE_FRAME_LOOP_CUDA(cudaEventCreateWithFlags(&event_, cudaEventDisableTiming)); }
  plain_event(const plain_event&) = delete;
  plain_event& operator=(const plain_event&) = delete;
  plain_event(plain_event&& other) noexcept : event_(std::exchange(other.event_, nullptr)) {}
  plain_event& operator=(plain_event&&) = delete;
  ~plain_event() {
    if (event_ != nullptr) (void)cudaEventDestroy(event_);
  }
  [[nodiscard]] cudaEvent_t get() const noexcept { return event_; }

 private:
  cudaEvent_t event_ = nullptr;
};

/// Polls `event` until it completed (the sim thread's throttle: it keeps a core busy, not the GPU).
void spin_event(cudaEvent_t event, const run_state& st) {
  const auto deadline = steady::now() + wait_timeout;
  for (std::uint32_t i = 0;; ++i) {
    const cudaError_t rc = cudaEventQuery(event);
    if (rc == cudaSuccess) return;
    if (rc != cudaErrorNotReady) throw bench_failure("cudaEventQuery (sim throttle): " + cuda_error_text(rc));
    if ((i & 63U) == 0) {
      if (st.failed()) throw bench_failure("stopped: another thread failed");
      if (steady::now() > deadline)
        throw bench_failure("timeout: a sim step did not finish within " + std::to_string(wait_timeout.count()) + " s");
    }
  }
}

/// What the sim thread reports.
struct sim_outcome {
  std::uint64_t k0 = 0, k1 = 0;  ///< Steps done when the window opened / closed.
  steady::time_point t0{}, t1{};  ///< When the sim opened / closed the window (host).
  std::uint64_t f0 = 0, f1 = 0;  ///< Frames published when the window opened / closed.
  std::uint64_t steps = 0;       ///< Steps done in all.
  std::uint32_t last_slot = initial_slot;
  std::uint64_t gpu_waits = 0;
  std::uint64_t host_checks = 0;
  std::uint64_t deferred = 0;  ///< Steps that left a request for later (the viewer held its last frame).
};

/// Whether this step answers the viewer's request: only once the viewer released every frame
/// published before (`released` >= frames published, read on the host without blocking), so it
/// holds at most one slot and a free slot is always left for the sim. Otherwise the request stays
/// for a later step (counted in out.deferred): the viewer waits, never the sim.
bool take_request(run_state& st, const mailbox_semaphores& m, std::uint64_t& viewer_done, sim_outcome& out) {
  if (!st.request.load(std::memory_order_acquire)) return false;
  const std::uint64_t published = st.published.load(std::memory_order_relaxed);  // only the sim writes it
  if (viewer_done < published) {
    viewer_done = value_or_fail(m.released.value(), "reading the viewer's released value");
    ++out.host_checks;
  }
  if (viewer_done < published) {
    ++out.deferred;
    return false;
  }
  return st.request.exchange(false, std::memory_order_acq_rel);
}

/// The sim: steps as fast as the GPU runs them (at most `depth` in flight), answering the viewer's
/// requests (`m` null: no viewer).
void sim_loop(const session& s, const scene& sc, int depth, bool yields, run_state& st, const mailbox_semaphores* m,
              const cuda_event& start, const cuda_event& stop, sim_outcome& out) {
  MEMBRIDGE_FRAME_LOOP_CUDA(cudaSetDevice(s.ordinal));
  const cudaStream_t stream = s.stream.get();
  const auto d = static_cast<std::uint64_t>(depth);
  std::vector<plain_event> ring(d);
  std::uint32_t src = initial_slot;
  std::array<std::uint64_t, ring_slots> release_at{};  // `released` value before the slot may be written
  std::uint64_t viewer_done = 0;                        // last `released` value read
  std::uint64_t n = 0;                                  // steps done
  while (!st.stop_sim.load(std::memory_order_relaxed) && !st.failed()) {
    const std::uint64_t step = n + 1;
    if (step > d) spin_event(ring[step % d].get(), st);
    const bool publish = m != nullptr && take_request(st, *m, viewer_done, out);

    // The destination: not the source, and not a slot the viewer may still read.
    const std::uint32_t a = (src + 1) % ring_slots;
    const std::uint32_t b = (src + 2) % ring_slots;
    const auto is_free = [&](std::uint32_t x) { return release_at[x] <= viewer_done; };
    if (m != nullptr && !is_free(a) && !is_free(b)) {
      viewer_done = value_or_fail(m->released.value(), "reading the viewer's released value");
      ++out.host_checks;
    }
    std::uint32_t dst = is_free(a) ? a : b;
    if (!is_free(a) && !is_free(b)) {
      dst = release_at[a] <= release_at[b] ? a : b;
      ok_or_fail(m->cuda_released.wait(stream, release_at[dst]), "CUDA wait on the viewer's released value");
      ++out.gpu_waits;
    }

    MEMBRIDGE_FRAME_LOOP_CUDA(cudaMemcpyAsync(sc.slot_data(dst), sc.slot_data(src), sc.slot_bytes,
                                              cudaMemcpyDeviceToDevice, stream));
    MEMBRIDGE_FRAME_LOOP_CUDA(particles::step_cuda(sc.slot_data(dst), sc.count, s.params, 1, stream));
    if (publish) {
      const std::uint64_t f = st.published.load(std::memory_order_relaxed);
      if (f >= st.pubs.size()) throw bench_failure("the sim published more frames than there is room for");
      ok_or_fail(m->cuda_ready.signal(stream, f + 1), "CUDA signal of the ready value");
      if (yields) ok_or_fail(m->cuda_released.wait(stream, f + 1), "CUDA wait for the viewer's draw (sim_yields)");
      release_at[dst] = f + 1;
      st.pubs[f] = {step, dst};
      st.published.store(f + 1, std::memory_order_release);
    }
    MEMBRIDGE_FRAME_LOOP_CUDA(cudaEventRecord(ring[step % d].get(), stream));
    const int mark = st.mark.load(std::memory_order_acquire);
    if (mark == 1 && st.marked.load(std::memory_order_relaxed) == 0) {
      MEMBRIDGE_FRAME_LOOP_CUDA(cudaEventRecord(start.get(), stream));
      out.k0 = step;
      out.t0 = steady::now();
      out.f0 = st.published.load(std::memory_order_relaxed);
      st.marked.store(1, std::memory_order_release);
    } else if (mark == 2 && st.marked.load(std::memory_order_relaxed) == 1) {
      MEMBRIDGE_FRAME_LOOP_CUDA(cudaEventRecord(stop.get(), stream));
      out.k1 = step;
      out.t1 = steady::now();
      out.f1 = st.published.load(std::memory_order_relaxed);
      st.marked.store(2, std::memory_order_release);
    }
    src = dst;
    n = step;
    if ((n & 255U) == 0) heartbeat();
  }
  out.steps = n;
  out.last_slot = src;
}

/// What the viewer thread reports.
struct viewer_outcome {
  std::uint64_t frames = 0;
  std::uint64_t missed_ticks = 0;
  std::vector<double> tick_to_submit_us;  ///< Per frame.
  std::vector<steady::time_point> submitted;  ///< Per frame: when its submit returned.
};

/// The viewer: at each tick of `rate_hz` asks for a frame, waits for its publication (host) and
/// submits it (the GPU waits for the step).
void viewer_loop(const session& s, mailbox_viewer& v, viewer_kind kind, int rate_hz, run_state& st,
                 const mailbox_semaphores& m, viewer_outcome& out) {
  std::optional<idle_cuda_work> idle;
  std::optional<idle_context_work> other_context;
  if (kind == viewer_kind::idle_cuda) idle.emplace(s.ordinal);
  if (kind == viewer_kind::idle_cuda_context) other_context.emplace(s.device, s.params);
  const auto period = std::chrono::duration_cast<steady::duration>(std::chrono::duration<double>(1.0 / rate_hz));
  auto next = steady::now() + period;
  std::uint64_t f = 0;
  while (!st.stop_viewer.load(std::memory_order_relaxed) && !st.failed()) {
    std::this_thread::sleep_until(next);
    const auto tick = next;
    const auto now = steady::now();
    next += period;
    while (next <= now) {  // fell behind by a whole period: keep the grid, count the missed tick
      next += period;
      ++out.missed_ticks;
    }
    if (f >= v.capacity())
      throw bench_failure("the viewer ran out of frames (capacity " + std::to_string(v.capacity()) + ")");
    if (is_control(kind)) {  // no frame taken: only the tick's own work
      if (idle) idle->submit(f);
      else if (other_context) other_context->submit(f);
      else v.submit(kind, f, 0, {}, {});
      out.tick_to_submit_us.push_back(ms_between(tick, steady::now()) * 1e3);
      out.submitted.push_back(steady::now());
      out.frames = ++f;
      continue;
    }
    const std::optional<publication> requested = st.request_frame(f, wait_timeout);
    if (!requested) return;
    const publication p = *requested;
    if (kind == viewer_kind::direct_host)  // the step done first: the submit's GPU wait is already met
      ok_or_fail(m.ready.wait(f + 1, wait_timeout), "waiting on the host for frame " + std::to_string(f) + "'s step");
    v.submit(kind, f, p.slot, {m.ready.get(), f + 1}, {m.released.get(), f + 1});
    out.tick_to_submit_us.push_back(ms_between(tick, steady::now()) * 1e3);
    out.submitted.push_back(steady::now());
    ++f;
    out.frames = f;
  }
  if (idle) idle->finish(f);
  if (other_context) other_context->finish(f);
}

/// The ipc viewer's end in this process: forwards each of the child's requests to the sim, waits for
/// the publication and announces it through the publisher (the child paces itself).
void ipc_forward_loop(ipc_viewer_process& child, run_state& st, viewer_outcome& out) {
  std::uint64_t f = 0;
  while (!st.stop_viewer.load(std::memory_order_relaxed) && !st.failed()) {
    const std::optional<std::uint64_t> asked = child.next_request(std::chrono::milliseconds(20));
    if (!asked) continue;
    if (*asked != f)
      throw bench_failure("the ipc viewer asked for frame " + std::to_string(*asked) + ", expected " +
                          std::to_string(f));
    if (f >= st.pubs.size())
      throw bench_failure("the ipc viewer ran out of frames (capacity " + std::to_string(st.pubs.size()) + ")");
    const std::optional<publication> requested = st.request_frame(f, wait_timeout);
    if (!requested) return;
    const publication p = *requested;
    child.announce(p.step, p.slot);
    out.frames = ++f;
  }
}

/// Sleeps `seconds` in slices, beating the watchdog, unless the run failed.
void sleep_for_run(double seconds, const run_state& st) {
  const auto end = steady::now() + std::chrono::duration_cast<steady::duration>(std::chrono::duration<double>(seconds));
  while (steady::now() < end && !st.failed()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    heartbeat();
  }
}

/// Waits until the sim answered mark `value`.
void wait_marked(const run_state& st, int value) {
  const auto deadline = steady::now() + wait_timeout;
  while (st.marked.load(std::memory_order_acquire) < value && !st.failed()) {
    if (steady::now() > deadline) throw bench_failure("timeout: the sim thread did not mark the window");
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
}

/// The sampled initial particles.
std::vector<particles::particle> sampled_initial(const scene& sc, const std::vector<std::uint64_t>& samples) {
  std::vector<particles::particle> out;
  for (const std::uint64_t i : samples) out.push_back(sc.initial[i]);
  return out;
}

/// Compares `got` with `want` bitwise; adds a failure naming `what` for the first difference.
bool same_particles(std::span<const particles::particle> got, const std::vector<particles::particle>& want,
                    const std::vector<std::uint64_t>& samples, const std::string& what, viewed_result& res) {
  for (std::size_t j = 0; j < want.size() && j < got.size(); ++j)
    if (std::memcmp(&got[j], &want[j], sizeof(particles::particle)) != 0) {
      res.data_failures.push_back(what + ": particle " + std::to_string(samples[j]) +
                                  " differs from the CPU reference (x " + std::to_string(got[j].position.x) + " vs " +
                                  std::to_string(want[j].position.x) + ")");
      return false;
    }
  return true;
}

/// The sampled particles drawn frame f read.
using history_of = std::function<std::span<const particles::particle>(std::uint64_t)>;

/// Checks every drawn frame's sampled particles and the sim's final slot against step_cpu.
void check_run(const session& s, const scene& sc, const history_of& history, const run_state& st,
               std::uint64_t frames, const sim_outcome& so, const std::string& what, viewed_result& res) {
  std::vector<particles::particle> ref = sampled_initial(sc, res.samples);
  std::uint64_t at = 0;
  std::size_t bad = 0;
  for (std::uint64_t f = 0; f < frames; ++f) {
    const publication p = st.pubs[f];
    if (p.step < at) {
      res.data_failures.push_back(what + ": frame " + std::to_string(f) + " shows an older step than the frame before");
      return;
    }
    particles::step_cpu(ref, s.params, static_cast<int>(p.step - at), 1);
    at = p.step;
    if (!same_particles(history(f), ref, res.samples,
                        what + ", frame " + std::to_string(f) + " (step " + std::to_string(p.step) + ")", res))
      if (++bad >= 3) return;  // a few messages are enough
  }
  res.frames_checked += frames;
  // The sim's last step, read back from its slot.
  std::vector<particles::particle> last(res.samples.size());
  for (std::size_t j = 0; j < res.samples.size(); ++j)
    MEMBRIDGE_FRAME_LOOP_CUDA(cudaMemcpyAsync(&last[j], sc.slot_data(so.last_slot) + res.samples[j],
                                              sizeof(particles::particle), cudaMemcpyDeviceToHost, s.stream.get()));
  MEMBRIDGE_FRAME_LOOP_CUDA(cudaStreamSynchronize(s.stream.get()));
  if (so.steps < at) {
    res.data_failures.push_back(what + ": the sim ran fewer steps than a drawn frame showed");
    return;
  }
  particles::step_cpu(ref, s.params, static_cast<int>(so.steps - at), 1);
  (void)same_particles(last, ref, res.samples, what + ", the sim's last step (" + std::to_string(so.steps) + ")", res);
}

/// The ipc viewer drew every announced frame, each with the step the sim published for it.
void check_ipc_report(const ipc_viewer_report& report, const run_state& st, std::uint64_t announced,
                      const std::string& what, viewed_result& res) {
  if (report.frames != announced)
    res.data_failures.push_back(what + ": " + std::to_string(announced) + " frames announced but " +
                                std::to_string(report.frames) + " drawn by the viewer process");
  for (std::uint64_t f = 0; f < report.frames && f < announced && f < report.steps.size(); ++f)
    if (report.steps[f] != st.pubs[f].step) {
      res.data_failures.push_back(what + ": the viewer process drew frame " + std::to_string(f) + " as step " +
                                  std::to_string(report.steps[f]) + ", the sim published step " +
                                  std::to_string(st.pubs[f].step));
      return;
    }
}

/// One run: the sim alone (`rate_hz` 0) or with the viewer of `kind` at `rate_hz`.
viewed_run run_one(session& s, const scene& sc, mailbox_viewer& v, const viewed_options& o, viewer_kind kind,
                   int rate_hz, viewed_result& res) {
  const std::string what = rate_hz == 0 ? std::string("sim alone")
                                        : std::string(viewer_kind_name(kind)) + " viewer at " +
                                              std::to_string(rate_hz) + " Hz";
  set_phase("viewed, " + count_label(sc.count) + " particles: " + what);
  reset_particles(s, sc);
  std::optional<mailbox_semaphores> m;
  if (rate_hz > 0) m.emplace(make_semaphores(s));
  v.begin_run();
  run_state st(v.capacity(), m ? &*m : nullptr);
  std::optional<ipc_viewer_process> child;  // the ipc viewer: subscribed and ready before the sim starts
  if (rate_hz > 0 && kind == viewer_kind::ipc)
    child.emplace(s, sc, m->ready, m->released, rate_hz, v.capacity(), res.samples);
  const cuda_event start;
  const cuda_event stop;
  sim_outcome so;
  viewer_outcome vo;
  const double seconds = rate_hz == 0 ? std::max(0.5, 0.6 * o.seconds) : o.seconds;
  {
    const std::jthread sim([&] {
      try {
        sim_loop(s, sc, o.depth, o.sim_yields, st, m ? &*m : nullptr, start, stop, so);
      } catch (const std::exception& e) {
        st.fail(std::string("sim thread: ") + e.what());
      }
    });
    std::optional<std::jthread> viewer;
    if (rate_hz > 0)
      viewer.emplace([&] {
        try {
          if (child)
            ipc_forward_loop(*child, st, vo);
          else
            viewer_loop(s, v, kind, rate_hz, st, *m, vo);
        } catch (const std::exception& e) {
          st.fail(std::string("viewer thread: ") + e.what());
        }
      });
    try {
      sleep_for_run(o.warmup_seconds, st);
      st.mark.store(1, std::memory_order_release);
      wait_marked(st, 1);
      sleep_for_run(seconds, st);
      st.mark.store(2, std::memory_order_release);
      wait_marked(st, 2);
    } catch (const std::exception& e) {
      st.fail(e.what());
    }
    st.stop_viewer.store(true);
    viewer.reset();  // joins: every frame the viewer asked for was published and submitted
    st.stop_sim.store(true);
  }  // joins the sim
  try {
    drain(s, "the viewed run");
    v.wait_idle();
  } catch (const std::exception& e) {
    st.fail(e.what());
  }
  std::optional<ipc_viewer_report> report;  // the ipc viewer's frames (it draws them, then reports)
  if (child && !st.failed()) {
    try {
      report = child->finish(vo.frames);
    } catch (const std::exception& e) {
      st.fail(e.what());
    }
  }
  st.rethrow_if_failed();

  viewed_run r;
  r.kind = kind;
  r.rate_hz = rate_hz;
  r.steps = so.k1 - so.k0;
  r.window_ms = elapsed_ms(start, stop);
  // The window's frames: published ones, or for a control kind its submits between the sim's marks.
  std::uint64_t w0 = so.f0;
  std::uint64_t w1 = so.f1;
  if (is_control(kind)) {
    const auto first = std::lower_bound(vo.submitted.begin(), vo.submitted.end(), so.t0);
    const auto last = std::lower_bound(vo.submitted.begin(), vo.submitted.end(), so.t1);
    w0 = static_cast<std::uint64_t>(first - vo.submitted.begin());
    w1 = static_cast<std::uint64_t>(last - vo.submitted.begin());
  }
  r.frames = w1 - w0;
  r.frames_total = report ? report->frames : vo.frames;
  if (report) {  // the child's own clocks: its timestamps, its ticks
    vo.tick_to_submit_us = report->tick_to_submit_us;
    vo.missed_ticks = report->missed_ticks;
    for (std::uint64_t f = w0; f < w1 && f < report->frame_gpu_us.size(); ++f)
      r.frame_gpu_us.push_back(report->frame_gpu_us[f]);
  } else if (kind != viewer_kind::idle_cuda && kind != viewer_kind::idle_cuda_context) {  // Vulkan frames only
    r.frame_gpu_us = v.frame_gpu_us(w0, std::min(w1, vo.frames));
  }
  for (std::uint64_t f = w0; f < w1 && f < vo.tick_to_submit_us.size(); ++f)
    r.tick_to_submit_us.push_back(vo.tick_to_submit_us[f]);
  r.missed_ticks = vo.missed_ticks;
  r.sim_gpu_waits = so.gpu_waits;
  r.sim_host_checks = so.host_checks;
  r.sim_deferred = so.deferred;
  r.last_step = so.steps;
  if (!is_control(kind) && vo.frames != st.published.load())
    res.data_failures.push_back(what + ": " + std::to_string(st.published.load()) + " frames published but " +
                                std::to_string(vo.frames) + " drawn");
  if (report) check_ipc_report(*report, st, vo.frames, what, res);
  const history_of history = [&](std::uint64_t f) { return report ? report->frame_history(f) : v.history(f); };
  const std::uint64_t drawn = report ? std::min(vo.frames, report->frames) : vo.frames;
  check_run(s, sc, history, st, is_control(kind) ? 0 : drawn, so, what, res);  // control: the sim's last step
  if (rate_hz > 0 && kind != viewer_kind::handoff && !is_control(kind)) {
    const std::size_t lit = report ? report->lit_pixels : check_last_image(s).lit_pixels;
    res.last_image_lit_pixels = lit;
    if (lit == 0) res.data_failures.push_back(what + ": the last image is blank");
  }
  if (rate_hz > 0 && vo.frames == 0) res.data_failures.push_back(what + ": the viewer drew no frame");
  std::cerr << "[frame_loop] viewed, " << count_label(sc.count) << ": " << what << ": "
            << fixed(r.steps_per_s(), 0) << " sim steps/s, " << r.frames << " frames in "
            << fixed(r.window_ms, 1) << " ms\n";
  return r;
}

/// Back-to-back draws of the initial particles, each checked: the draw's GPU time alone.
void run_draw_alone(session& s, const scene& sc, mailbox_viewer& v, viewed_result& res) {
  set_phase("viewed, " + count_label(sc.count) + " particles: draws alone");
  reset_particles(s, sc);
  v.begin_run();
  for (std::uint64_t f = 0; f < draw_alone_frames; ++f) v.submit(viewer_kind::direct, f, initial_slot, {}, {});
  v.wait_idle();
  res.draw_alone_gpu_us = v.frame_gpu_us(0, draw_alone_frames);
  const std::vector<particles::particle> ref = sampled_initial(sc, res.samples);
  for (std::uint64_t f = 0; f < draw_alone_frames; ++f)
    if (!same_particles(v.history(f), ref, res.samples, "draws alone, frame " + std::to_string(f), res)) break;
}

}  // namespace

void run_viewed(session& s, const viewed_options& o, viewed_result& res) {
  res.options = o;
  set_phase("viewed: making the scene of " + count_label(o.count) + " particles");
  const scene sc = make_scene(s, o.count);
  for (std::size_t j = 0; j + 1 < viewed_samples; ++j) res.samples.push_back(j * (o.count / (viewed_samples - 1)));
  res.samples.push_back(o.count - 1);
  int fastest = 1;
  for (const int r : o.rates_hz) fastest = std::max(fastest, r);
  const auto capacity = static_cast<std::uint64_t>(
      std::max<double>(draw_alone_frames, std::ceil((o.warmup_seconds + o.seconds) * fastest * 1.25) + 64));
  mailbox_viewer v(s, sc, res.samples, capacity);
  res.alone.push_back(run_one(s, sc, v, o, viewer_kind::handoff, 0, res));
  for (const viewer_kind kind : o.kinds) {
    for (const int rate : o.rates_hz) res.runs.push_back(run_one(s, sc, v, o, kind, rate, res));
    res.alone.push_back(run_one(s, sc, v, o, viewer_kind::handoff, 0, res));
  }
  run_draw_alone(s, sc, v, res);
  drain(s, "the viewed part");
}

}  // namespace membridge::bench::frame_loop
