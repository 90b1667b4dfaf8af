// Parts (a) and (c): frames of CUDA kernels that GL reads, legacy interop against membridge.
//
// Per drawn frame, every path: k kernels write the whole frame (an RGBA-sized slot of the ring)
// with a fresh pattern, then GL copies one word of it into a history buffer
// (glCopyNamedBufferSubData), writes a GL timestamp and a fence, and flushes. At the end the history
// must hold, for every frame, the word that frame's last kernel wrote, and every slot, read whole by
// GL, the last frame written there.
//   legacy:      render thread: cudaGraphicsMapResources / GetMappedPointer / kernel / Unmap (per CUDA
//                step; legacy_once: one map for all k kernels), then the GL work; buffers registered once.
//   membridge:   a CUDA producer thread: frame_timeline::cuda_acquire / k kernels / cuda_release; the
//                render thread: gl_frame_consumer::acquire / the GL work / release. Memory: one
//                growable_buffer imported once (sync::mirror_in_gl).
//   host order:  (no GL timeline semaphores) render thread: k kernels, cudaStreamSynchronize, GL work.
// Both paths keep `slots` frames in flight (a GL fence per frame, waited `slots` frames later).
#include "parts.hpp"

#include "kernels.cuh"

#include <membridge/cuda/growable_buffer.hpp>
#include <membridge/sync/frame_timeline.hpp>
#include <membridge/sync/gl_bridge.hpp>
#include <membridge/sync/gl_frame_consumer.hpp>

// after epoxy (support.hpp): <GL/gl.h> is then a no-op
#include <cuda_gl_interop.h>

#include <algorithm>
#include <array>
#include <memory>
#include <thread>
#include <utility>

namespace membridge::bench::gl_bench {

namespace gpu = testing::gpu;

const char* path_name(path p) noexcept {
  switch (p) {
    case path::legacy: return "legacy map/unmap";
    case path::legacy_once: return "legacy, one map per frame";
    case path::membridge: return "membridge";
  }
  return "?";
}

std::vector<frame_size> frame_sizes(bool quick) {
  if (quick) return {{"256x256", 256, 256}, {"512x512", 512, 512}};
  return {{"1080p", 1920, 1080}, {"4K", 3840, 2160}};
}

namespace {

// The end of a block of frames (after its timed loop): waits for the GL and CUDA work it queued,
// checks GL's error state (naming `what`) and fills the block's GPU figures from `clock`.
frame_block finish_frames(frame_block block, gpu_clock& clock, frame_throttle& throttle, const cuda_stream& stream,
                          const bench_env& env, const char* what) {
  throttle.drain();
  stream.synchronize();
  check_gl(what);
  const gpu_intervals g = intervals_from(clock.finish(), static_cast<std::size_t>(env.warmup));
  block.gpu_frame_us = g.mean_us;
  block.gpu_interval_us = g.intervals_us;
  block.frames = static_cast<std::uint64_t>(env.frames);
  return block;
}

/// Per-frame bookkeeping common to both lanes.
struct frame_plan {
  std::uint64_t frame = 0;     ///< The lane's frame number.
  std::uint32_t slot = 0;      ///< Ring slot.
  std::size_t word = 0;        ///< The word GL copies into the history.
  std::uint32_t last_seed = 0; ///< The seed of the frame's last kernel.
};

/// Legacy interop: `slots` plain GL buffers, each registered once (WriteDiscard: every frame
/// rewrites the whole buffer), mapped per CUDA step or per frame.
class legacy_lane {
 public:
  legacy_lane(const bench_env& env, std::size_t frame_bytes, std::size_t history_frames, std::uint32_t lane_id)
      : env_(env), frame_bytes_(frame_bytes), lane_id_(lane_id), history_(history_frames),
        last_seed_(env.slots, 0U) {
    for (std::uint32_t s = 0; s < env.slots; ++s) {
      buffers_.push_back(gl_buffer::with_data(frame_bytes));
      cudaGraphicsResource_t res = nullptr;
      MEMBRIDGE_GL_BENCH_CUDA(
          cudaGraphicsGLRegisterBuffer(&res, buffers_.back().name(), cudaGraphicsRegisterFlagsWriteDiscard));
      resources_.push_back(res);
    }
  }
  legacy_lane(const legacy_lane&) = delete;
  legacy_lane& operator=(const legacy_lane&) = delete;
  ~legacy_lane() {
    for (cudaGraphicsResource_t r : resources_) (void)cudaGraphicsUnregisterResource(r);
  }

  frame_block run_block(unsigned steps, bool map_per_step) {
    const auto total = static_cast<std::size_t>(env_.warmup + env_.frames);
    gpu_clock clock(total);
    frame_throttle throttle(env_.slots);
    frame_block block;
    region_timer timer;
    const std::size_t words = frame_bytes_ / 4;
    for (std::size_t i = 0; i < total; ++i) {
      const bool timed = i >= static_cast<std::size_t>(env_.warmup);
      const std::uint64_t n = next_frame_++;
      const auto slot = static_cast<std::uint32_t>(n % env_.slots);
      cudaGraphicsResource_t res = resources_[slot];
      throttle.wait(i);
      clock.prepare(i);
      timer.begin();
      void* p = nullptr;
      const auto map = [&] {
        MEMBRIDGE_GL_BENCH_CUDA(cudaGraphicsMapResources(1, &res, stream_.get()));
        std::size_t mapped = 0;
        MEMBRIDGE_GL_BENCH_CUDA(cudaGraphicsResourceGetMappedPointer(&p, &mapped, res));
        if (p == nullptr || mapped < frame_bytes_) throw bench_failure("legacy: the mapped buffer is too small");
        if (timed) ++block.gl_to_cuda;
      };
      const auto unmap = [&] {
        MEMBRIDGE_GL_BENCH_CUDA(cudaGraphicsUnmapResources(1, &res, stream_.get()));
        if (timed) ++block.cuda_to_gl;
      };
      std::uint32_t seed = 0;
      if (!map_per_step) map();
      for (unsigned s = 0; s < steps; ++s) {
        if (map_per_step) map();
        seed = frame_seed(lane_id_, n, s);
        check_cuda(gpu::fill_pattern(p, frame_bytes_, seed, 0, stream_.get()), "fill_pattern (legacy frame)");
        if (map_per_step) unmap();
      }
      if (!map_per_step) unmap();
      const std::size_t word = probe_word(n, words);
      history_.copy_from(buffers_[slot].name(), word * 4, gpu::pattern(word, seed));
      clock.record(i);
      throttle.fence(i);
      glFlush();
      timer.end();
      last_seed_[slot] = seed;
      if (timed) {
        block.host_us.push_back(timer.wall_us);
        block.host_cpu_us.push_back(timer.cpu_us);
      }
    }
    return finish_frames(std::move(block), clock, throttle, stream_, env_, "legacy frames");
  }

  void verify(const std::string& what) {
    glFinish();
    history_.verify(what + ", every frame's word");
    for (std::uint32_t s = 0; s < env_.slots && s < next_frame_; ++s) {
      const auto seen = read_words(buffers_[s].name(), 0, frame_bytes_ / 4);
      check_data(pattern_mismatches(seen, last_seed_[s]), seen.size(),
                 what + ", slot " + std::to_string(s) + " read whole by GL (words)");
    }
  }

 private:
  const bench_env& env_;
  std::size_t frame_bytes_;
  std::uint32_t lane_id_;
  history history_;
  std::vector<std::uint32_t> last_seed_;
  std::vector<gl_buffer> buffers_;
  std::vector<cudaGraphicsResource_t> resources_;
  cuda_stream stream_;
  std::uint64_t next_frame_ = 0;
};

/// membridge: a growable_buffer holding `slots` frames, imported once into GL; frames ordered by
/// the frame timeline (CUDA producer thread + GL consumer on the render thread), or by the host.
class vmm_lane {
 public:
  vmm_lane(const bench_env& env, std::size_t frame_bytes, std::size_t history_frames, std::uint32_t lane_id,
           one_time_costs* once)
      : env_(env), frame_bytes_(frame_bytes), stride_(round_up(frame_bytes, 256)), lane_id_(lane_id),
        history_(history_frames), last_seed_(env.slots, 0U) {
    const std::size_t bytes = round_up(stride_ * env.slots, env.cu->granularity());
    buffer_ = value_or_fail(cuda::growable_buffer::create(*env.cu, {.size = bytes, .max_size = bytes}),
                            "growable_buffer::create (frame slots)");
    // CUDA touches the slots before GL imports them, and the one chunk that never grows is one plain GL
    // buffer (on the H100, GL read stale bytes from a chunk it imported before CUDA first wrote it).
    check_cuda(cudaMemset(buffer_.data(), 0, buffer_.capacity()), "cudaMemset (frame slots)");
    check_cuda(cudaDeviceSynchronize(), "cudaDeviceSynchronize (frame slots)");
    view_ = value_or_fail(sync::mirror_in_gl(env.gl->gl(), buffer_, membridge::gl::growth_mode::per_chunk),
                          "sync::mirror_in_gl (frame slots)");
    if (view_.segments().size() != 1) throw bench_failure("the frame slots' GL view has more than one segment");
    segment_ = view_.segments()[0];
    if (env.order == ordering::semaphores) {
      auto t0 = steady::now();
      timeline_ = value_or_fail(sync::frame_timeline::create(*env.vk, *env.cu, {.slots = env.slots}),
                                "sync::frame_timeline::create");
      auto t1 = steady::now();
      consumer_ = value_or_fail(sync::gl_frame_consumer::import(env.gl->gl(), timeline_),
                                "sync::gl_frame_consumer::import");
      auto t2 = steady::now();
      if (once != nullptr) {
        once->timeline_us.push_back(us_between(t0, t1));
        once->consumer_us.push_back(us_between(t1, t2));
      }
    }
  }
  vmm_lane(const vmm_lane&) = delete;
  vmm_lane& operator=(const vmm_lane&) = delete;
  ~vmm_lane() {
    // Nothing may be freed while GL or CUDA may still use it: every block ends drained.
    glFinish();
    (void)cudaDeviceSynchronize();
  }

  frame_block run_block(unsigned steps) {
    return env_.order == ordering::semaphores ? run_semaphores(steps) : run_host(steps);
  }

  void verify(const std::string& what) {
    glFinish();
    history_.verify(what + ", every frame's word");
    for (std::uint32_t s = 0; s < env_.slots && s < next_frame_; ++s) {
      const auto seen = read_words(segment_.buffer, gl_offset(s, 0), frame_bytes_ / 4);
      check_data(pattern_mismatches(seen, last_seed_[s]), seen.size(),
                 what + ", slot " + std::to_string(s) + " read whole by GL (words)");
    }
  }

 private:
  [[nodiscard]] std::size_t gl_offset(std::uint32_t slot, std::size_t byte) const noexcept {
    return segment_.buffer_offset + (slot * stride_ + byte - segment_.offset);
  }
  [[nodiscard]] void* slot_pointer(std::uint32_t slot) const noexcept { return buffer_.data<char>() + slot * stride_; }

  frame_plan plan(std::uint64_t n, unsigned steps) const noexcept {
    frame_plan f;
    f.frame = n;
    f.slot = static_cast<std::uint32_t>(n % env_.slots);
    f.word = probe_word(n, frame_bytes_ / 4);
    f.last_seed = frame_seed(lane_id_, n, steps - 1);
    return f;
  }

  void gl_work(const frame_plan& f, std::size_t i, gpu_clock& clock, frame_throttle& throttle) {
    history_.copy_from(segment_.buffer, gl_offset(f.slot, f.word * 4), gpu::pattern(f.word, f.last_seed));
    clock.record(i);
    throttle.fence(i);
    last_seed_[f.slot] = f.last_seed;
  }

  frame_block finish_block(frame_block block, gpu_clock& clock, frame_throttle& throttle) {
    return finish_frames(std::move(block), clock, throttle, stream_, env_, "membridge frames");
  }

  frame_block run_semaphores(unsigned steps) {
    const auto total = static_cast<std::size_t>(env_.warmup + env_.frames);
    const std::uint64_t first = next_frame_;
    const auto warmup = static_cast<std::uint64_t>(env_.warmup);
    gpu_clock clock(total);
    frame_throttle throttle(env_.slots);
    frame_block block;
    handoff h;
    h.set_produced(first);
    h.set_released(first);
    std::vector<double> producer_us;
    producer_us.reserve(total);
    const int ordinal = env_.cu->ordinal();
    std::thread producer([&, steps] {
      try {
        MEMBRIDGE_GL_BENCH_CUDA(cudaSetDevice(ordinal));
        region_timer t;
        for (std::uint64_t n = first; n < first + total; ++n) {
          // The slot is free on the GPU once frame n - slots was consumed; wait on the host only until
          // that release was submitted (never for the GPU).
          if (n + 1 > env_.slots) h.wait_released(n + 1 - env_.slots);
          const frame_plan f = plan(n, steps);
          t.begin();
          ok_or_fail(timeline_.cuda_acquire(stream_.get(), n), "frame_timeline::cuda_acquire");
          for (unsigned s = 0; s < steps; ++s)
            check_cuda(gpu::fill_pattern(slot_pointer(f.slot), frame_bytes_, frame_seed(lane_id_, n, s), 0, stream_.get()),
                       "fill_pattern (membridge frame)");
          ok_or_fail(timeline_.cuda_release(stream_.get(), n), "frame_timeline::cuda_release");
          t.end();
          if (n - first >= warmup) producer_us.push_back(t.wall_us);
          h.set_produced(n + 1);
        }
      } catch (...) {
        h.fail(std::current_exception());
      }
    });
    try {
      region_timer timer;
      const std::array<unsigned int, 1> names{segment_.buffer};
      const gl::semaphore_objects objects{.buffers = names, .textures = {}};
      for (std::size_t i = 0; i < total; ++i) {
        const bool timed = i >= static_cast<std::size_t>(env_.warmup);
        const std::uint64_t n = first + i;
        throttle.wait(i);
        clock.prepare(i);
        h.wait_produced(n + 1);
        const frame_plan f = plan(n, steps);
        timer.begin();
        ok_or_fail(consumer_.acquire(n, objects), "gl_frame_consumer::acquire");
        gl_work(f, i, clock, throttle);
        ok_or_fail(consumer_.release(n, objects), "gl_frame_consumer::release");
        timer.end();
        h.set_released(n + 1);
        if (timed) {
          ++block.cuda_to_gl;
          ++block.gl_to_cuda;
          block.host_us.push_back(timer.wall_us);
          block.host_cpu_us.push_back(timer.cpu_us);
        }
      }
    } catch (...) {
      h.abort();
      producer.join();
      throw;
    }
    producer.join();
    h.rethrow();
    next_frame_ = first + total;
    block.producer_us = std::move(producer_us);
    return finish_block(std::move(block), clock, throttle);
  }

  frame_block run_host(unsigned steps) {
    const auto total = static_cast<std::size_t>(env_.warmup + env_.frames);
    gpu_clock clock(total);
    frame_throttle throttle(env_.slots);  // frame n - slots' GL copy is done before frame n's kernels
    frame_block block;
    region_timer timer;
    for (std::size_t i = 0; i < total; ++i) {
      const bool timed = i >= static_cast<std::size_t>(env_.warmup);
      const std::uint64_t n = next_frame_++;
      throttle.wait(i);
      clock.prepare(i);
      const frame_plan f = plan(n, steps);
      timer.begin();
      for (unsigned s = 0; s < steps; ++s)
        check_cuda(gpu::fill_pattern(slot_pointer(f.slot), frame_bytes_, frame_seed(lane_id_, n, s), 0, stream_.get()),
                   "fill_pattern (membridge frame, host order)");
      stream_.synchronize();
      gl_work(f, i, clock, throttle);
      glFlush();
      timer.end();
      if (timed) {
        ++block.cuda_to_gl;  // the stream synchronize
        ++block.gl_to_cuda;  // the fence wait before the slot is rewritten
        block.host_us.push_back(timer.wall_us);
        block.host_cpu_us.push_back(timer.cpu_us);
      }
    }
    return finish_block(std::move(block), clock, throttle);
  }

  const bench_env& env_;
  std::size_t frame_bytes_;
  std::size_t stride_;
  std::uint32_t lane_id_;
  history history_;
  std::vector<std::uint32_t> last_seed_;
  cuda::growable_buffer buffer_;
  gl::chunked_buffer view_;
  gl::buffer_segment segment_{};
  sync::frame_timeline timeline_;
  sync::gl_frame_consumer consumer_;
  cuda_stream stream_;
  std::uint64_t next_frame_ = 0;
};

/// Registration versus import, `reps` times each, alternating.
void measure_one_time(const bench_env& env, std::size_t frame_bytes, int reps, one_time_costs& once) {
  for (int r = 0; r < reps; ++r) {
    {
      gl_buffer b = gl_buffer::with_data(frame_bytes);
      glFinish();
      cudaGraphicsResource_t res = nullptr;
      const auto t0 = steady::now();
      MEMBRIDGE_GL_BENCH_CUDA(cudaGraphicsGLRegisterBuffer(&res, b.name(), cudaGraphicsRegisterFlagsWriteDiscard));
      const auto t1 = steady::now();
      MEMBRIDGE_GL_BENCH_CUDA(cudaGraphicsUnregisterResource(res));
      const auto t2 = steady::now();
      once.register_us.push_back(us_between(t0, t1));
      once.unregister_us.push_back(us_between(t1, t2));
    }
    {
      const std::size_t bytes = round_up(frame_bytes, env.cu->granularity());
      auto buffer = value_or_fail(cuda::growable_buffer::create(*env.cu, {.size = bytes, .max_size = bytes}),
                                  "growable_buffer::create (one-time cost)");
      const auto t0 = steady::now();
      auto view = value_or_fail(sync::mirror_in_gl(env.gl->gl(), buffer), "sync::mirror_in_gl (one-time cost)");
      const auto t1 = steady::now();
      once.import_us.push_back(us_between(t0, t1));
      glFinish();
    }
  }
  check_gl("one-time costs");
}

/// Frames a lane records in `blocks` blocks.
std::size_t history_frames(const bench_env& env, int blocks) {
  return static_cast<std::size_t>(blocks) * static_cast<std::size_t>(env.warmup + env.frames) + 8;
}

}  // namespace

std::vector<steady_size> run_steady(const bench_env& env) {
  const std::vector<frame_size> sizes = frame_sizes(env.quick);
  std::vector<steady_size> out;
  std::vector<std::unique_ptr<legacy_lane>> legacy;
  std::vector<std::unique_ptr<vmm_lane>> vmm;
  for (std::size_t z = 0; z < sizes.size(); ++z) {
    steady_size s;
    s.name = sizes[z].name;
    s.width = sizes[z].width;
    s.height = sizes[z].height;
    s.frame_bytes = sizes[z].bytes();
    s.legacy.which = path::legacy;
    s.membridge.which = path::membridge;
    measure_one_time(env, s.frame_bytes, env.quick ? 2 : 7, s.once);
    legacy.push_back(std::make_unique<legacy_lane>(env, s.frame_bytes, history_frames(env, env.blocks),
                                                   static_cast<std::uint32_t>(10 + z)));
    vmm.push_back(std::make_unique<vmm_lane>(env, s.frame_bytes, history_frames(env, env.blocks),
                                             static_cast<std::uint32_t>(20 + z), &s.once));
    out.push_back(std::move(s));
  }
  // Interleaved: every block runs every size and both paths, the order rotating per block.
  for (int b = 0; b < env.blocks; ++b)
    for (std::size_t z = 0; z < sizes.size(); ++z)
      for (int k = 0; k < 2; ++k) {
        if ((b + k) % 2 == 0)
          out[z].legacy.blocks.push_back(legacy[z]->run_block(1, true));
        else
          out[z].membridge.blocks.push_back(vmm[z]->run_block(1));
      }
  for (std::size_t z = 0; z < sizes.size(); ++z) {
    check_peer([&] { legacy[z]->verify("part (a), " + sizes[z].name + ", legacy"); });
    vmm[z]->verify("part (a), " + sizes[z].name + ", membridge");
  }
  return out;
}

steps_result run_steps(const bench_env& env) {
  const frame_size size = frame_sizes(env.quick).front();
  constexpr std::array<unsigned, 4> ks{1, 2, 4, 8};
  constexpr std::array<path, 3> paths{path::legacy, path::legacy_once, path::membridge};
  steps_result out;
  out.size_name = size.name;
  out.frame_bytes = size.bytes();
  const int blocks = std::max(1, env.blocks / 2);
  // One lane per path kind (legacy and legacy_once share the registered buffers and the history).
  legacy_lane legacy(env, size.bytes(), history_frames(env, blocks * static_cast<int>(ks.size()) * 2), 30);
  vmm_lane vmm(env, size.bytes(), history_frames(env, blocks * static_cast<int>(ks.size())), 31, nullptr);
  for (const unsigned k : ks)
    for (const path p : paths) out.lanes.push_back({p, k, {}});
  const std::size_t combos = out.lanes.size();
  for (int b = 0; b < blocks; ++b)
    for (std::size_t c = 0; c < combos; ++c) {
      lane_result& lane = out.lanes[(c + static_cast<std::size_t>(b) * 5) % combos];
      switch (lane.which) {
        case path::legacy: lane.blocks.push_back(legacy.run_block(lane.steps, true)); break;
        case path::legacy_once: lane.blocks.push_back(legacy.run_block(lane.steps, false)); break;
        case path::membridge: lane.blocks.push_back(vmm.run_block(lane.steps)); break;
      }
    }
  check_peer([&] { legacy.verify("part (c), legacy"); });
  vmm.verify("part (c), membridge");
  return out;
}

}  // namespace membridge::bench::gl_bench
