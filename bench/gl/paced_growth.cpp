// Part (p): growth while GL draws at a paced rate (issue 12 (b), GL). Particles (32 bytes each) double
// from 1M to 16M every `frames_per_step` frames in a growable_buffer that GL sees one buffer per chunk
// (the per-chunk path; sparse GL growth is blocked on NVIDIA). Threads:
//   producer: per frame cuda_acquire, a stamp of the frame number into every particle, cuda_release;
//     at each growth, growable_buffer::grow under the buffer mutex.
//   follower (a GL context sharing the render context's objects): sync::follow_step in a loop, at need
//     (no headroom) or ahead of need (headroom_fraction 1); after each change a GL fence and the new
//     segments for the render thread.
//   render: at tick n, takes up the newest followed view (glWaitSync on its fence), acquires frame n
//     (gl_frame_consumer), copies the stamp of one probe particle (every other frame in the newest
//     doubling) into a history, releases; draws min(frame n's particles, what the view covers).
//   watcher: when consumed(n) is reached (frame_timeline::wait_consumed): the frame's completion.
// Every probe must read its frame's stamp.
#include "parts.hpp"
#include "paced_growth.hpp"

#include "realtime/kernels.cuh"

#include <membridge/core/units.hpp>
#include <membridge/cuda/growable_buffer.hpp>
#include <membridge/sync/frame_timeline.hpp>
#include <membridge/sync/gl_bridge.hpp>
#include <membridge/sync/gl_frame_consumer.hpp>

#include <algorithm>
#include <atomic>
#include <iomanip>
#include <map>
#include <optional>
#include <thread>

namespace membridge::bench::gl_bench {

namespace rt = realtime;
using namespace membridge::literals;

namespace {

using rt::mib;

constexpr std::size_t particle_bytes = 32;

struct paced_config {
  rt::follow_mode mode = rt::follow_mode::ahead;
  std::size_t max_chunk = 0;
  std::size_t start_particles = std::size_t{1} << 20U;
  std::size_t final_particles = std::size_t{16} << 20U;
  int frames_per_step = 48;
  double hz = 144.0;
  [[nodiscard]] int steps() const {
    int k = 0;
    for (std::size_t p = start_particles; p < final_particles; p *= 2) ++k;
    return k;
  }
  [[nodiscard]] std::size_t frames() const { return static_cast<std::size_t>((steps() + 1) * frames_per_step); }
  [[nodiscard]] std::string label() const {
    return std::string(mode == rt::follow_mode::ahead ? "ahead" : "at need") + ", max_chunk " +
           (max_chunk == 0 ? std::string("none") : std::to_string(max_chunk >> 20U) + " MiB") + ", " +
           std::to_string(start_particles * particle_bytes >> 20U) + " MiB -> " +
           std::to_string(final_particles * particle_bytes >> 20U) + " MiB";
  }
};

struct paced_run {
  paced_summary frames;
  std::map<std::string, std::vector<double>> costs;
  std::size_t checks = 0;
  std::size_t capacity = 0;
  std::size_t lag_max = 0;
};

// A view the follower published: its segments, the bytes it covers and a fence after its GL work.
struct published_view {
  std::vector<gl::buffer_segment> segments;
  std::size_t covered = 0;
  GLsync fence = nullptr;
};

std::size_t probe_particle(std::size_t n, std::size_t visible, std::size_t start) {
  const std::size_t low = (n % 2 == 0 && visible > start) ? visible / 2 : 0;
  return low + (n * 104729U + 7U) % (visible - low);
}

std::pair<GLuint, std::size_t> locate(const std::vector<gl::buffer_segment>& segments, std::size_t offset) {
  for (const gl::buffer_segment& s : segments)
    if (offset >= s.offset && offset < s.offset + s.size) return {s.buffer, s.buffer_offset + (offset - s.offset)};
  throw bench_failure("part (p): offset " + std::to_string(offset) + " lies outside GL's view");
}

paced_run run_one(const bench_env& env, shared_context& shared, const paced_config& c) {
  paced_run out;
  const std::size_t frames = c.frames();
  const sync::follow_options follow{.headroom = 0, .headroom_fraction = c.mode == rt::follow_mode::ahead ? 1.0 : 0.0};
  auto buffer = value_or_fail(
      cuda::growable_buffer::create(*env.cu, {.size = c.start_particles * particle_bytes,
                                              .max_size = c.final_particles * particle_bytes,
                                              .chunks = {.growth_factor = 2.0, .min_chunk = 0, .max_chunk = c.max_chunk}}),
      "growable_buffer::create");
  cuda_stream stream;
  auto view = value_or_fail(gl::chunked_buffer::create(env.gl->gl(), buffer.max_size(), gl::growth_mode::per_chunk),
                            "gl::chunked_buffer::create");
  for (;;)
    if (value_or_fail(sync::follow_step(view, buffer, follow), "follow_step (setup)") == sync::follow_action::none) break;
  std::vector<gl::buffer_segment> segments(view.segments().begin(), view.segments().end());
  std::size_t covered = view.size();
  auto timeline = value_or_fail(sync::frame_timeline::create(*env.vk, *env.cu, {.slots = 1}), "frame_timeline::create");
  auto consumer = value_or_fail(sync::gl_frame_consumer::import(env.gl->gl(), timeline), "gl_frame_consumer::import");
  history probes(frames);

  std::mutex buffer_mutex;
  std::mutex publish_mutex;
  std::optional<published_view> published;
  std::atomic<bool> stop{false};
  std::atomic<std::size_t> produced{0};
  std::atomic<std::size_t> submitted{0};  // frames the render thread submitted: the producer stays one ahead
  std::vector<std::size_t> counts(frames, 0);
  handoff h;  // carries the first failure of a thread
  work_log log;
  pacer pace(c.hz);
  auto* base = buffer.data<char>();

  std::thread producer([&] {
    try {
      MEMBRIDGE_GL_BENCH_CUDA(cudaSetDevice(env.cu->ordinal()));
      std::size_t count = c.start_particles;
      const rt::growth_target target{buffer, buffer_mutex, log, particle_bytes};
      for (std::size_t n = 0; n < frames && !stop; ++n) {
        rt::wait_submitted(submitted, n, stop);
        if (stop) break;
        count = rt::grow_for_frame(target, n, count, c.frames_per_step, c.final_particles);
        counts[n] = count;
        ok_or_fail(timeline.cuda_acquire(stream.get(), n), "cuda_acquire");
        check_cuda(rt::stamp_particles(base, count, static_cast<std::uint32_t>(n + 1), stream.get()), "stamp_particles");
        ok_or_fail(timeline.cuda_release(stream.get(), n), "cuda_release");
        produced.store(n + 1);
        produced.notify_all();
      }
    } catch (...) {
      h.fail(std::current_exception());
      stop = true;
      produced.notify_all();
    }
  });
  std::thread follower([&] {
    try {
      if (eglBindAPI(EGL_OPENGL_API) != EGL_TRUE ||
          eglMakeCurrent(shared.display, EGL_NO_SURFACE, EGL_NO_SURFACE, shared.context) != EGL_TRUE)
        throw bench_failure(egl_error_text("eglMakeCurrent (shared context, follower)"));
      MEMBRIDGE_GL_BENCH_CUDA(cudaSetDevice(env.cu->ordinal()));
      while (!stop) {
        const auto t0 = steady::now();
        sync::follow_action a = sync::follow_action::none;
        std::string what;
        {
          const std::lock_guard lock(buffer_mutex);
          const std::size_t chunks = view.chunk_count();
          a = value_or_fail(sync::follow_step(view, buffer, follow), "follow_step");
          if (a == sync::follow_action::imported) what = "import " + mib(buffer.chunk(chunks).size);
          if (a == sync::follow_action::reserved) what = "reserve (map) " + mib(buffer.chunk(buffer.chunk_count() - 1).size);
          if (a == sync::follow_action::dropped) what = "drop";
        }
        if (a == sync::follow_action::imported || a == sync::follow_action::dropped) {
          published_view p{{view.segments().begin(), view.segments().end()}, view.size(),
                           glFenceSync(GL_SYNC_GPU_COMMANDS_COMPLETE, 0)};
          glFlush();
          check_gl("follower: follow_step + fence");
          const std::lock_guard lock(publish_mutex);
          if (published && published->fence != nullptr) glDeleteSync(published->fence);
          published = std::move(p);
        }
        const auto t1 = steady::now();
        if (a != sync::follow_action::none) {
          log.add(what, t0, t1);
          out.costs[what].push_back(ms_between(t0, t1));
          // At most one step per drawn frame: a GL import holds up the render context while it runs
          // (seen on the H100), so imports are spread over frames, never back to back.
          for (std::size_t f = submitted.load(); submitted.load() == f && !stop;) submitted.wait(f);
        } else {
          std::this_thread::sleep_for(std::chrono::microseconds(500));
        }
      }
    } catch (...) {
      h.fail(std::current_exception());
      stop = true;
    }
    eglMakeCurrent(shared.display, EGL_NO_SURFACE, EGL_NO_SURFACE, EGL_NO_CONTEXT);
  });
  completion_watcher watcher(frames, [&](std::uint64_t n) {
    return static_cast<bool>(timeline.wait_consumed(n, std::chrono::seconds(10)));
  });

  std::size_t last_count = c.start_particles;
  std::size_t grew_frame = 0;
  bool caught_up = true;
  std::vector<unsigned int> names;
  const auto refresh_names = [&] {
    names.clear();
    for (const gl::buffer_segment& s : segments) names.push_back(s.buffer);
  };
  refresh_names();
  try {
    pace.start();
    for (std::size_t n = 0; n < frames; ++n) {
      pace.wait(n);
      for (std::size_t p = produced.load(); p < n + 1 && !stop; p = produced.load()) produced.wait(p);
      if (stop) break;
      {
        std::optional<published_view> p;
        {
          const std::lock_guard lock(publish_mutex);
          p.swap(published);
        }
        if (p) {
          glWaitSync(p->fence, 0, GL_TIMEOUT_IGNORED);
          glDeleteSync(p->fence);
          segments = std::move(p->segments);
          covered = p->covered;
          refresh_names();
          for (const unsigned int name : names) glBindBuffer(GL_COPY_READ_BUFFER, name);  // see the other context's objects
          glBindBuffer(GL_COPY_READ_BUFFER, 0);
        }
      }
      const std::size_t count = counts[n];
      if (count != last_count) {
        last_count = count;
        grew_frame = n;
        caught_up = false;
      }
      const std::size_t visible = std::min(count, covered / particle_bytes);
      if (!caught_up && visible == count) {
        caught_up = true;
        out.lag_max = std::max(out.lag_max, n - grew_frame);
      }
      const gl::semaphore_objects objects{.buffers = names, .textures = {}};
      ok_or_fail(consumer.acquire(n, objects), "gl_frame_consumer::acquire");
      const std::size_t probe = probe_particle(n, visible, c.start_particles);
      const auto [pb, po] = locate(segments, probe * particle_bytes + 28);
      probes.copy_from(pb, po, static_cast<std::uint32_t>(n + 1));
      ok_or_fail(consumer.release(n, objects), "gl_frame_consumer::release");
      submitted.store(n + 1);
      submitted.notify_all();
    }
  } catch (...) {
    h.fail(std::current_exception());
  }
  const bool watched = watcher.join();
  rt::stop_waits(stop, submitted, produced, frames);
  producer.join();
  follower.join();
  glFinish();
  stream.synchronize();
  {
    const std::lock_guard lock(publish_mutex);
    if (published && published->fence != nullptr) glDeleteSync(published->fence);
  }
  h.rethrow();
  if (!watched) throw bench_failure("part (p): a frame was not consumed within 10 s (" + c.label() + ")");
  probes.verify("part (p): stamps GL read, one per frame (" + c.label() + ")");
  out.checks = frames;
  out.frames = summarise_paced(pace, frames, watcher.done(), log.events(), static_cast<std::size_t>(c.frames_per_step / 2));
  out.capacity = buffer.capacity();
  return out;
}

double median_of(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

json run_paced_growth(const bench_env& env, std::ostream& out, double hz, std::size_t goal_chunk_mib) {
  if (env.order != ordering::semaphores || env.vk == nullptr)
    throw bench_failure("part (p) needs the timeline-semaphore ordering (GL_EXT_semaphore_fd + Vulkan)");
  shared_context shared;
  make_shared_context(shared);
  if (shared.context == EGL_NO_CONTEXT) throw bench_failure("part (p): no shared GL context: " + shared.error);
  std::vector<paced_config> configs;
  const auto add = [&](rt::follow_mode m, std::size_t cap_mib, std::size_t start, std::size_t final_count) {
    paced_config c;
    c.mode = m;
    c.max_chunk = cap_mib * 1_MiB;
    c.hz = hz;
    c.start_particles = start;
    c.final_particles = final_count;
    if (env.quick) {
      c.final_particles = std::min(final_count, start * 4);
      c.frames_per_step = 12;
    }
    configs.push_back(c);
  };
  const std::size_t m1 = std::size_t{1} << 20U;
  add(rt::follow_mode::at_need, 0, m1, 16 * m1);
  add(rt::follow_mode::ahead, 0, m1, 16 * m1);
  add(rt::follow_mode::ahead, 64, m1, 16 * m1);
  add(rt::follow_mode::ahead, 16, m1, 16 * m1);
  if (goal_chunk_mib != 16 && goal_chunk_mib != 64) add(rt::follow_mode::ahead, goal_chunk_mib, m1, 16 * m1);
  // The case issue 12 measured the hitch in: 64 MiB -> 2 GiB.
  add(rt::follow_mode::at_need, 0, 2 * m1, 64 * m1);
  add(rt::follow_mode::ahead, 64, 2 * m1, 64 * m1);
  std::size_t goal_index = 0;
  for (std::size_t i = 0; i < configs.size(); ++i)
    if (configs[i].mode == rt::follow_mode::ahead && configs[i].max_chunk == goal_chunk_mib * 1_MiB &&
        configs[i].start_particles == m1)
      goal_index = i;
  const int rounds = env.quick ? 1 : 2;
  std::vector<std::vector<paced_run>> runs(configs.size());
  for (int r = 0; r < rounds; ++r)
    for (std::size_t i = 0; i < configs.size(); ++i) runs[i].push_back(run_one(env, shared, configs[i]));

  out << "\npart (p): growth while GL draws at a paced " << hz << " Hz (budget " << std::fixed << std::setprecision(2)
      << 1000.0 / hz << " ms), one GL buffer per chunk, " << rounds << " rounds\n";
  out << std::left << std::setw(48) << "configuration" << std::right << std::setw(9) << "lat med" << std::setw(9)
      << "lat max" << std::setw(6) << "over" << std::setw(9) << "per med" << std::setw(9) << "per max" << std::setw(9)
      << "raw m/m" << std::setw(10) << "shown m/m" << std::setw(5) << "lag" << std::setw(9) << "warm-up" << "\n";
  json jconfigs = json::array();
  json costs = json::object();
  double goal_ratio = 0, goal_worst = 0, goal_raw = 0;
  for (std::size_t i = 0; i < configs.size(); ++i) {
    paced_rounds all;
    std::size_t lag = 0;
    json jr = json::array();
    for (const paced_run& g : runs[i]) {
      all.add(g.frames);
      lag = std::max(lag, g.lag_max);
      jr.push_back({{"latency_median_ms", g.frames.latency_median_ms}, {"latency_p99_ms", g.frames.latency_p99_ms},
                    {"latency_worst_ms", g.frames.latency_worst_ms}, {"over_budget", g.frames.over_budget},
                    {"period_median_ms", g.frames.period_median_ms}, {"period_worst_ms", g.frames.period_worst_ms},
                    {"raw_worst_over_median", g.frames.worst_over_median},
                    {"shown_period_worst_ms", g.frames.shown_period_worst_ms},
                    {"shown_worst_over_median", g.frames.shown_worst_over_median},
                    {"warmup_worst_ms", g.frames.warmup_worst_ms}, {"worst_frames", g.frames.worst_overlaps},
                    {"lag_frames_max", g.lag_max}, {"capacity_bytes", g.capacity}, {"data_checks", g.checks}});
      for (const auto& [what, ms] : g.costs)
        for (const double v : ms) costs[configs[i].label()][what].push_back(v);
    }
    out << std::left << std::setw(48) << configs[i].label() << std::right << std::setprecision(3) << std::setw(9)
        << median_of(all.latency_medians) << std::setw(9) << all.latency_worst_ms << std::setw(6) << all.over_budget
        << std::setw(9) << median_of(all.period_medians) << std::setw(9) << all.period_worst_ms << std::setw(9)
        << all.worst_over_median << std::setw(10) << all.shown_worst_over_median << std::setw(5) << lag << std::setw(9)
        << all.warmup_worst_ms << "\n";
    for (const paced_run& g : runs[i])
      for (const std::string& line : g.frames.worst_overlaps) out << "    " << line << "\n";
    jconfigs.push_back({{"config", configs[i].label()}, {"runs", jr}});
    if (i == goal_index) {
      goal_ratio = all.shown_worst_over_median;
      goal_raw = all.worst_over_median;
      goal_worst = all.latency_worst_ms;
    }
  }
  out << "follow work per chunk (median ms, count):\n";
  for (const auto& [config, whats] : costs.items())
    for (const auto& [what, list] : whats.items()) {
      const auto v = list.get<std::vector<double>>();
      out << "  " << std::left << std::setw(48) << config << std::setw(22) << what << std::right << std::setw(9)
          << median_of(v) << " ms  x" << v.size() << "\n";
    }
  const double budget = 1000.0 / hz;
  const bool met = goal_ratio <= 1.2 && goal_worst <= budget;
  out << "goal gl_growth_worst_over_median (" << configs[goal_index].label() << "): " << goal_ratio << " (<= 1.2), worst frame "
      << goal_worst << " ms (<= " << budget << "): " << (met ? "met" : "NOT met") << "\n";
  return {{"hz", hz},
          {"configs", jconfigs},
          {"costs_ms", costs},
          {"goal", {{"comparison", "<="}, {"target", 1.2}, {"measured", goal_ratio},
                    {"raw_completion_worst_over_median", goal_raw}, {"worst_frame_ms", goal_worst},
                    {"budget_ms", budget}, {"met", met}, {"config", configs[goal_index].label()}}}};
}

}  // namespace membridge::bench::gl_bench
