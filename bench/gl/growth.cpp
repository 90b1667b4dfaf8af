// Part (b): a buffer that doubles every `frames_per_step` frames (64 MiB -> 2 GiB) while frames run.
//
// Layout of the growing buffer, both paths: `slots` frame windows (1080p RGBA) at the start, then a
// persistent region filled once with a pattern (each new half filled right after the growth that
// made it). Per frame: a kernel rewrites the frame's window; GL copies one word of the window and one
// word of the persistent region (every other frame from the newest half) into two history buffers.
// The frame before each growth and the last frame also count, on the GPU, every persistent word that
// differs from the pattern. So every growth must keep the data (legacy: its copy) and GL must see
// the new memory once it uses the new size.
//   legacy:    on the render thread, at the growth frame: cudaGraphicsUnregisterResource, a new GL
//              buffer (glNamedBufferData), glCopyNamedBufferSubData old -> new, delete the old one,
//              cudaGraphicsGLRegisterBuffer; then map / kernels / unmap / GL work as every frame.
//   membridge: the CUDA producer thread grows the growable_buffer in place (no copy) and fills the
//              new half; a thread with a shared GL context imports the new chunk (sync::follow_growth)
//              and fences; the render thread waits on that fence on the GPU (glWaitSync) and uses
//              the new size from then on. With --import-on-render-thread (or no shared context), the
//              render thread calls follow_growth itself.
// Memory: cudaMemGetInfo sampled right after each allocation step (not timed), peak above the
// round's baseline, taken after the round's fixed setup (streams, histories, semaphores, the import
// thread's GL context): what the growing buffer and its GL view cost.
#include "parts.hpp"

#include "gl_kernels.cuh"
#include "kernels.cuh"

#include <membridge/core/units.hpp>
#include <membridge/cuda/growable_buffer.hpp>
#include <membridge/sync/frame_timeline.hpp>
#include <membridge/sync/gl_bridge.hpp>
#include <membridge/sync/gl_frame_consumer.hpp>

#include <cuda_gl_interop.h>

#include <algorithm>
#include <deque>
#include <future>
#include <mutex>
#include <optional>
#include <sstream>
#include <thread>

namespace membridge::bench::gl_bench {

namespace gpu = testing::gpu;
using namespace membridge::literals;

namespace {

/// The sizes and frame plan of one run of part (b).
struct growth_plan {
  std::size_t start = 64_MiB;
  std::size_t final_size = 2_GiB;
  int frames_per_step = 60;
  int steps = 5;
  std::size_t frame_bytes = 0;   ///< A window (one 1080p RGBA frame).
  std::size_t stride = 0;        ///< Window stride.
  std::size_t region = 0;        ///< Where the persistent region starts.
  std::uint32_t slots = 2;
  [[nodiscard]] std::size_t total_frames() const { return static_cast<std::size_t>((steps + 1) * frames_per_step); }
  [[nodiscard]] bool grows_at(std::size_t n) const {
    return n > 0 && n % static_cast<std::size_t>(frames_per_step) == 0 &&
           n / static_cast<std::size_t>(frames_per_step) <= static_cast<std::size_t>(steps);
  }
  [[nodiscard]] bool checks_at(std::size_t n) const { return grows_at(n + 1) || n + 1 == total_frames(); }
};

growth_plan make_plan(const bench_env& env) {
  growth_plan p;
  if (env.quick) {
    p.start = 8_MiB;
    p.final_size = 64_MiB;
    p.frames_per_step = 12;
    p.steps = 3;
  }
  p.frame_bytes = frame_sizes(env.quick).front().bytes();
  p.stride = round_up(p.frame_bytes, 256);
  p.slots = env.slots;
  p.region = round_up(p.stride * p.slots, 4096);
  if (p.region >= p.start) throw bench_failure("part (b): the frame windows do not fit in the first size");
  return p;
}

/// The persistent word frame `n` probes through GL when `visible` bytes are visible: every other
/// frame one from the newest half (the memory the last growth added), else one anywhere.
std::size_t persistent_word(std::size_t n, std::size_t visible, const growth_plan& p) {
  const std::size_t low = (n % 2 == 0 && visible > p.start) ? visible / 2 : p.region;
  const std::size_t words = (visible - low) / 4;
  return low / 4 + static_cast<std::size_t>((n * 104729U + 7U) % words);
}

/// The most memory in use seen, from any thread.
class peak_memory {
 public:
  explicit peak_memory(std::size_t baseline) : baseline_(baseline) {}
  void sample() {
    const std::size_t used = memory_in_use();
    const std::lock_guard lock(mutex_);
    peak_ = std::max(peak_, used);
  }
  /// Drains GL and CUDA and takes the memory in use now as the baseline (after a round's fixed setup).
  void rebase();
  [[nodiscard]] std::size_t above_baseline() const {
    const std::lock_guard lock(mutex_);
    return peak_ > baseline_ ? peak_ - baseline_ : 0;
  }

 private:
  mutable std::mutex mutex_;
  std::size_t baseline_;
  std::size_t peak_ = 0;
};

/// Drains GL and CUDA and reads the memory in use: a round's baseline.
std::size_t drained_baseline() {
  glFinish();
  MEMBRIDGE_GL_BENCH_CUDA(cudaDeviceSynchronize());
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // let deferred frees of the last round land
  return memory_in_use();
}

void peak_memory::rebase() {
  const std::size_t now = drained_baseline();
  const std::lock_guard lock(mutex_);
  baseline_ = now;
}

/// Per-frame render-thread timing of a round.
struct round_clock {
  explicit round_clock(growth_round& r) : round(r) {}
  void frame_done(const region_timer& t) {
    const auto now = steady::now();
    round.region_ms.push_back(t.wall_us / 1000.0);
    if (have_last) round.period_ms.push_back(us_between(last_end, now) / 1000.0);
    last_end = now;
    have_last = true;
  }
  growth_round& round;
  steady::time_point last_end{};
  bool have_last = false;
};

void finish_gpu_intervals(growth_round& r, gpu_clock& clock) {
  const gpu_intervals g = intervals_from(clock.finish(), 0);
  for (const double us : g.intervals_us) r.gpu_interval_ms.push_back(us / 1000.0);
}

/// What a round of part (b) starts with: its record, the device memory above a drained baseline, the
/// pattern of the words that must persist through growth, the lane of its frame seeds, its frame
/// count, a stream and a mismatch counter.
struct round_start {
  growth_round r;
  peak_memory peak;
  std::uint32_t pseed;
  std::uint32_t lane;
  std::size_t total;
  cuda_stream stream;
  device_counter wrong;
};

/// Starts round `round_id` of `which`: persistent pattern gpu::pattern(round_id, pattern_base), frame
/// seed lane lane_base + round_id (the drain for the baseline comes first).
round_start start_round(path which, const growth_plan& p, std::uint32_t round_id, std::uint32_t pattern_base,
                        std::uint32_t lane_base) {
  return {growth_round{.which = which}, peak_memory(drained_baseline()), gpu::pattern(round_id, pattern_base),
          lane_base + round_id, p.total_frames(), cuda_stream{}, device_counter{}};
}

// ---------------------------------------------------------------------------------- legacy ---

growth_round legacy_round(const growth_plan& p, std::uint32_t round_id) {
  auto [r, peak, pseed, lane, total, stream, wrong] = start_round(path::legacy, p, round_id, 0x0b0b0000U, 100);
  history frames_seen(total);
  history persistent_seen(total);
  peak.rebase();  // the fixed setup is in the baseline, as in membridge_round
  gl_buffer buffer = gl_buffer::with_data(p.start);
  cudaGraphicsResource_t res = nullptr;
  MEMBRIDGE_GL_BENCH_CUDA(cudaGraphicsGLRegisterBuffer(&res, buffer.name(), cudaGraphicsRegisterFlagsNone));
  std::size_t size = p.start;
  const auto mapped_pointer = [&]() -> char* {
    MEMBRIDGE_GL_BENCH_CUDA(cudaGraphicsMapResources(1, &res, stream.get()));
    void* ptr = nullptr;
    std::size_t bytes = 0;
    MEMBRIDGE_GL_BENCH_CUDA(cudaGraphicsResourceGetMappedPointer(&ptr, &bytes, res));
    if (ptr == nullptr || bytes < size) throw bench_failure("legacy growth: the mapped buffer is too small");
    return static_cast<char*>(ptr);
  };
  {
    char* ptr = mapped_pointer();
    check_cuda(gpu::fill_pattern(ptr + p.region, p.start - p.region, pseed, p.region / 4, stream.get()), "fill_pattern");
    MEMBRIDGE_GL_BENCH_CUDA(cudaGraphicsUnmapResources(1, &res, stream.get()));
    stream.synchronize();
  }
  peak.sample();
  try {
    gpu_clock clock(total);
    frame_throttle throttle(p.slots);
    region_timer timer;
    round_clock rc(r);
    for (std::size_t n = 0; n < total; ++n) {
      throttle.wait(n);
      clock.prepare(n);
      timer.begin();
      std::size_t old = 0;
      if (p.grows_at(n)) {
        old = size;
        double sampled_us = 0.0;
        const auto sample = [&] {
          const auto s0 = steady::now();
          peak.sample();
          sampled_us += us_between(s0, steady::now());
        };
        const auto t0 = steady::now();
        MEMBRIDGE_GL_BENCH_CUDA(cudaGraphicsUnregisterResource(res));
        res = nullptr;
        gl_buffer bigger = gl_buffer::with_data(2 * size);
        glCopyNamedBufferSubData(buffer.name(), bigger.name(), 0, 0, static_cast<GLsizeiptr>(size));
        timer.exclude(sample);
        buffer = std::move(bigger);  // glDeleteBuffers(old)
        MEMBRIDGE_GL_BENCH_CUDA(cudaGraphicsGLRegisterBuffer(&res, buffer.name(), cudaGraphicsRegisterFlagsNone));
        timer.exclude(sample);
        r.step_ms.push_back((us_between(t0, steady::now()) - sampled_us) / 1000.0);
        size *= 2;
      }
      const auto slot = static_cast<std::uint32_t>(n % p.slots);
      const std::uint32_t seed = frame_seed(lane, n, 0);
      char* ptr = mapped_pointer();
      if (old != 0)
        check_cuda(gpu::fill_pattern(ptr + old, old, pseed, old / 4, stream.get()), "fill_pattern (new half)");
      check_cuda(gpu::fill_pattern(ptr + slot * p.stride, p.frame_bytes, seed, 0, stream.get()), "fill_pattern (frame)");
      if (p.checks_at(n))
        check_cuda(accumulate_pattern_mismatches(ptr + p.region, size - p.region, pseed, p.region / 4, wrong.get(),
                                                 stream.get()),
                   "accumulate_pattern_mismatches");
      MEMBRIDGE_GL_BENCH_CUDA(cudaGraphicsUnmapResources(1, &res, stream.get()));
      const std::size_t word = probe_word(n, p.frame_bytes / 4);
      frames_seen.copy_from(buffer.name(), slot * p.stride + word * 4, gpu::pattern(word, seed));
      const std::size_t pw = persistent_word(n, size, p);
      persistent_seen.copy_from(buffer.name(), pw * 4, gpu::pattern(pw, pseed));
      clock.record(n);
      throttle.fence(n);
      glFlush();
      if (old != 0) timer.exclude([&] { peak.sample(); });
      timer.end();
      rc.frame_done(timer);
    }
    throttle.drain();
    stream.synchronize();
    check_gl("legacy growth frames");
    finish_gpu_intervals(r, clock);
    check_data(wrong.read(), (size - p.region) / 4, "part (b), legacy: persistent words after growth (CUDA check)");
    check_peer([&] { frames_seen.verify("part (b), legacy: frame words"); });
    check_peer([&] { persistent_seen.verify("part (b), legacy: persistent words read by GL across growth"); });
  } catch (...) {
    if (res != nullptr) (void)cudaGraphicsUnregisterResource(res);
    throw;
  }
  MEMBRIDGE_GL_BENCH_CUDA(cudaGraphicsUnregisterResource(res));
  r.peak_bytes = peak.above_baseline();
  r.final_bytes = size;
  r.gl_final_bytes = size;
  r.frames = total;
  return r;
}

// ------------------------------------------------------------------------------- membridge ---

/// A growth the GL view has followed, ready for the render thread.
struct followed_growth {
  std::size_t size = 0;                          ///< The new size.
  std::uint64_t fill_frame = 0;                  ///< The frame whose CUDA work filled the new half.
  GLsync fence = nullptr;                        ///< Signalled when the import's GL commands are done (null: same thread).
  std::vector<gl::buffer_segment> segments;      ///< The view's segments after it.
};

/// What the producer, the importer and the render thread share in a membridge round.
struct growth_state {
  std::mutex mutex;
  std::condition_variable changed;
  std::deque<std::pair<std::size_t, std::uint64_t>> to_import;  ///< (size, fill frame) the producer grew to.
  std::deque<followed_growth> followed;                         ///< Imports done, for the render thread.
  bool stop = false;
  std::mutex buffer_mutex;  ///< growable_buffer: grown by the producer, read by follow_growth.
};

/// GL offset of CUDA offset `offset` in the view `segments`, and the buffer that holds it.
std::pair<GLuint, std::size_t> locate(const std::vector<gl::buffer_segment>& segments, std::size_t offset) {
  for (const gl::buffer_segment& s : segments)
    if (offset >= s.offset && offset < s.offset + s.size) return {s.buffer, s.buffer_offset + (offset - s.offset)};
  throw bench_failure("part (b): offset " + std::to_string(offset) + " lies outside GL's view");
}

growth_round membridge_round(const bench_env& env, const growth_plan& p, std::uint32_t round_id,
                             shared_context* shared, growth_result& result) {
  auto [r, peak, pseed, lane, total, stream, wrong] = start_round(path::membridge, p, round_id, 0x0c0c0000U, 200);
  const bool threads = env.order == ordering::semaphores;
  history frames_seen(total);
  history persistent_seen(total);
  sync::frame_timeline timeline;
  sync::gl_frame_consumer consumer;
  if (threads) {
    timeline = value_or_fail(sync::frame_timeline::create(*env.vk, *env.cu, {.slots = p.slots}),
                             "sync::frame_timeline::create (growth)");
    consumer = value_or_fail(sync::gl_frame_consumer::import(env.gl->gl(), timeline),
                             "sync::gl_frame_consumer::import (growth)");
  }
  // Made after the fixed setup (below), once the import thread runs.
  cuda::growable_buffer buffer;
  gl::chunked_buffer view;
  std::vector<gl::buffer_segment> segments;
  char* base = nullptr;
  std::size_t visible = p.start;
  growth_state state;
  handoff h;
  const bool off_thread = threads && shared != nullptr && shared->context != EGL_NO_CONTEXT;
  std::vector<double> import_ms;  // written by whoever imports, read after joins
  std::mutex import_ms_mutex;
  const auto follow = [&]() -> double {
    const std::lock_guard lock(state.buffer_mutex);
    const auto t0 = steady::now();
    (void)value_or_fail(sync::follow_growth(view, buffer), "sync::follow_growth");
    const double ms = us_between(t0, steady::now()) / 1000.0;
    const std::lock_guard lock2(import_ms_mutex);
    import_ms.push_back(ms);
    return ms;
  };

  // The import thread: a shared GL context, follow_growth for each growth, a fence for the render thread.
  std::thread importer;
  std::promise<std::string> importer_ready;
  if (off_thread) {
    auto ready = importer_ready.get_future();
    importer = std::thread([&] {
      if (eglBindAPI(EGL_OPENGL_API) != EGL_TRUE ||
          eglMakeCurrent(shared->display, EGL_NO_SURFACE, EGL_NO_SURFACE, shared->context) != EGL_TRUE) {
        importer_ready.set_value(egl_error_text("eglMakeCurrent (shared context, import thread)"));
        return;
      }
      importer_ready.set_value({});
      try {
        MEMBRIDGE_GL_BENCH_CUDA(cudaSetDevice(env.cu->ordinal()));
        for (;;) {
          std::pair<std::size_t, std::uint64_t> job;
          {
            std::unique_lock lock(state.mutex);
            state.changed.wait(lock, [&] { return state.stop || !state.to_import.empty(); });
            if (state.to_import.empty()) break;
            job = state.to_import.front();
            state.to_import.pop_front();
          }
          follow();
          followed_growth g;
          g.size = job.first;
          g.fill_frame = job.second;
          g.fence = glFenceSync(GL_SYNC_GPU_COMMANDS_COMPLETE, 0);
          glFlush();
          check_gl("import thread: follow_growth + fence");
          peak.sample();
          g.segments.assign(view.segments().begin(), view.segments().end());
          {
            const std::lock_guard lock(state.mutex);
            state.followed.push_back(std::move(g));
          }
          state.changed.notify_all();
        }
      } catch (...) {
        h.fail(std::current_exception());
      }
      eglMakeCurrent(shared->display, EGL_NO_SURFACE, EGL_NO_SURFACE, EGL_NO_CONTEXT);
    });
    if (std::string why = ready.get(); !why.empty()) {
      importer.join();
      throw bench_failure("part (b): " + why);
    }
  }

  // The fixed setup (semaphores, histories, the import thread's GL context) is in the baseline; the
  // peak is what the buffer and its GL view add.
  peak.rebase();
  buffer = value_or_fail(cuda::growable_buffer::create(*env.cu, {.size = p.start, .max_size = p.final_size}),
                         "growable_buffer::create (growth)");
  base = buffer.data<char>();
  check_cuda(gpu::fill_pattern(base + p.region, p.start - p.region, pseed, p.region / 4, stream.get()), "fill_pattern");
  stream.synchronize();
  peak.sample();
  view = value_or_fail(sync::mirror_in_gl(env.gl->gl(), buffer), "sync::mirror_in_gl (growth)");
  result.sparse = view.is_sparse();
  segments.assign(view.segments().begin(), view.segments().end());

  // The producer thread (semaphore ordering): grows, fills, writes frames.
  std::size_t cuda_size = p.start;
  std::vector<double> grow_ms;
  const auto grow = [&] {
    const std::lock_guard lock(state.buffer_mutex);
    const auto t0 = steady::now();
    ok_or_fail(buffer.grow(2 * cuda_size), "growable_buffer::grow");
    grow_ms.push_back(us_between(t0, steady::now()) / 1000.0);
  };
  const auto cuda_frame = [&](std::size_t n, bool grew, std::size_t old) {
    const auto slot = static_cast<std::uint32_t>(n % p.slots);
    if (grew) check_cuda(gpu::fill_pattern(base + old, old, pseed, old / 4, stream.get()), "fill_pattern (new half)");
    check_cuda(gpu::fill_pattern(base + slot * p.stride, p.frame_bytes, frame_seed(lane, n, 0), 0, stream.get()),
               "fill_pattern (frame)");
    if (p.checks_at(n))
      check_cuda(accumulate_pattern_mismatches(base + p.region, cuda_size - p.region, pseed, p.region / 4, wrong.get(),
                                               stream.get()),
                 "accumulate_pattern_mismatches");
  };
  std::thread producer;
  if (threads) {
    h.set_produced(0);
    h.set_released(0);
    producer = std::thread([&] {
      try {
        MEMBRIDGE_GL_BENCH_CUDA(cudaSetDevice(env.cu->ordinal()));
        for (std::size_t n = 0; n < total; ++n) {
          if (n + 1 > p.slots) h.wait_released(n + 1 - p.slots);
          std::size_t old = 0;
          if (p.grows_at(n)) {
            grow();
            peak.sample();
            old = cuda_size;
            cuda_size *= 2;
          }
          ok_or_fail(timeline.cuda_acquire(stream.get(), n), "frame_timeline::cuda_acquire");
          cuda_frame(n, old != 0, old);
          ok_or_fail(timeline.cuda_release(stream.get(), n), "frame_timeline::cuda_release");
          if (old != 0) {
            const std::lock_guard lock(state.mutex);
            state.to_import.emplace_back(cuda_size, n);
          }
          state.changed.notify_all();
          h.set_produced(n + 1);
        }
      } catch (...) {
        h.fail(std::current_exception());
      }
    });
  }

  const auto stop_threads = [&] {
    {
      const std::lock_guard lock(state.mutex);
      state.stop = true;
    }
    state.changed.notify_all();
    if (producer.joinable()) producer.join();
    if (importer.joinable()) importer.join();
  };

  try {
    gpu_clock clock(total);
    frame_throttle throttle(p.slots);
    region_timer timer;
    round_clock rc(r);
    std::vector<unsigned int> names;
    const auto refresh_names = [&] {
      names.clear();
      for (const gl::buffer_segment& s : segments) names.push_back(s.buffer);
    };
    refresh_names();
    for (std::size_t n = 0; n < total; ++n) {
      throttle.wait(n);
      clock.prepare(n);
      if (threads) h.wait_produced(n + 1);
      timer.begin();
      std::size_t old = 0;
      if (!threads && p.grows_at(n)) {  // host ordering: everything on this thread
        grow();
        timer.exclude([&] { peak.sample(); });
        old = cuda_size;
        cuda_size *= 2;
      }
      // Take up a followed growth (off-thread import), or follow it here.
      if (off_thread) {
        std::optional<followed_growth> g;
        {
          const std::lock_guard lock(state.mutex);
          if (!state.followed.empty() && state.followed.front().fill_frame <= n) {
            g = std::move(state.followed.front());
            state.followed.pop_front();
          }
        }
        if (g) {
          glWaitSync(g->fence, 0, GL_TIMEOUT_IGNORED);
          glDeleteSync(g->fence);
          segments = std::move(g->segments);
          refresh_names();
          for (const unsigned int name : names) glBindBuffer(GL_COPY_READ_BUFFER, name);  // re-attach: see the other context's changes
          glBindBuffer(GL_COPY_READ_BUFFER, 0);
          visible = g->size;
          r.apply_lag_frames.push_back(static_cast<double>(n - g->fill_frame));
        }
      } else {
        std::optional<std::pair<std::size_t, std::uint64_t>> job;
        if (threads) {
          const std::lock_guard lock(state.mutex);
          if (!state.to_import.empty() && state.to_import.front().second <= n) {
            job = state.to_import.front();
            state.to_import.pop_front();
          }
        } else if (old != 0) {
          job = std::make_pair(cuda_size, static_cast<std::uint64_t>(n));
        }
        if (job) {
          follow();
          timer.exclude([&] { peak.sample(); });
          segments.assign(view.segments().begin(), view.segments().end());
          refresh_names();
          visible = job->first;
          r.apply_lag_frames.push_back(static_cast<double>(n - job->second));
        }
      }
      const gl::semaphore_objects objects{.buffers = names, .textures = {}};
      const auto slot = static_cast<std::uint32_t>(n % p.slots);
      if (threads) {
        ok_or_fail(consumer.acquire(n, objects), "gl_frame_consumer::acquire");
      } else {
        cuda_frame(n, old != 0, old);
        stream.synchronize();
      }
      const std::size_t word = probe_word(n, p.frame_bytes / 4);
      const auto [fb, fo] = locate(segments, slot * p.stride + word * 4);
      frames_seen.copy_from(fb, fo, gpu::pattern(word, frame_seed(lane, n, 0)));
      const std::size_t pw = persistent_word(n, visible, p);
      const auto [pb, po] = locate(segments, pw * 4);
      persistent_seen.copy_from(pb, po, gpu::pattern(pw, pseed));
      clock.record(n);
      throttle.fence(n);
      if (threads)
        ok_or_fail(consumer.release(n, objects), "gl_frame_consumer::release");
      else
        glFlush();
      timer.end();
      if (threads) h.set_released(n + 1);
      rc.frame_done(timer);
    }
    throttle.drain();
    stop_threads();
    h.rethrow();
    stream.synchronize();
    MEMBRIDGE_GL_BENCH_CUDA(cudaDeviceSynchronize());
    check_gl("membridge growth frames");
    finish_gpu_intervals(r, clock);
  } catch (...) {
    h.abort();
    stop_threads();
    glFinish();
    (void)cudaDeviceSynchronize();
    throw;
  }
  // Anything the import thread fenced but the render thread never took up.
  for (followed_growth& g : state.followed)
    if (g.fence != nullptr) glDeleteSync(g.fence);
  check_data(wrong.read(), (cuda_size - p.region) / 4, "part (b), membridge: persistent words after growth (CUDA check)");
  frames_seen.verify("part (b), membridge: frame words");
  persistent_seen.verify("part (b), membridge: persistent words read by GL across growth");
  r.step_ms = grow_ms;
  r.import_ms = import_ms;
  r.peak_bytes = peak.above_baseline();
  r.final_bytes = cuda_size;
  r.gl_final_bytes = visible;
  r.frames = total;
  glFinish();
  return r;
}

}  // namespace

growth_result run_growth(const bench_env& env) {
  const growth_plan p = make_plan(env);
  growth_result out;
  out.start_bytes = p.start;
  out.final_bytes = p.final_size;
  out.frames_per_step = p.frames_per_step;
  out.steps = p.steps;
  shared_context shared;
  if (env.order != ordering::semaphores) {
    out.import_note = "host ordering: grow and import on the render thread";
  } else if (env.import_on_render_thread) {
    out.import_note = "--import-on-render-thread";
  } else {
    make_shared_context(shared);
    out.import_note = shared.error;
  }
  out.import_off_render_thread = env.order == ordering::semaphores && shared.context != EGL_NO_CONTEXT;
  for (int round = 0; round < env.growth_rounds; ++round)
    for (int k = 0; k < 2; ++k) {
      const auto id = static_cast<std::uint32_t>(round);
      if ((round + k) % 2 == 0)
        out.legacy.push_back(legacy_round(p, id));
      else
        out.membridge.push_back(membridge_round(env, p, id, out.import_off_render_thread ? &shared : nullptr, out));
    }
  return out;
}

}  // namespace membridge::bench::gl_bench
