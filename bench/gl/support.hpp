// bench/gl/support.hpp: what the parts of the GL benchmark share: checks of CUDA, GL and membridge
// results, host clocks (wall and thread CPU time), small CUDA and GL RAII types, the per-frame
// GL timestamps, the frames-in-flight throttle, the history buffer that checks every frame's data,
// and the hand-off between the CUDA producer thread and the render thread.
#pragma once

// epoxy first: it replaces <GL/gl.h>, which cuda_gl_interop.h would include.
#include <epoxy/egl.h>
#include <epoxy/gl.h>

#include "cuda_support.hpp"
#include "stats.hpp"

#include <membridge/core/result.hpp>

#include <cuda_runtime.h>

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <mutex>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace membridge::bench::gl_bench {

using bench::bench_failure;
using bench::check_cuda;
using bench::device_unavailable;
using bench::ok_or_fail;
using bench::value_or_fail;

/// Every host wait of the benchmark (a fence, the other thread) gives up after this long.
inline constexpr std::chrono::seconds wait_timeout{20};

// ------------------------------------------------------------------------------------ failures ---

/// Runs `check` (a data check that throws bench_failure) for the legacy peer: a wrong word in the peer's
/// frames is recorded (peer_data_failures(), printed with the report; the run then exits 1) instead of
/// ending the run, so membridge's figures and the peer's failure are both reported.
void check_peer(const std::function<void()>& check);
/// The peer data checks that failed so far.
[[nodiscard]] const std::vector<std::string>& peer_data_failures();



/// Throws bench_failure naming `what` and every pending GL error (glGetError until GL_NO_ERROR).
void check_gl(std::string_view what);

/// Throws bench_failure ("data check failed: ...") when `wrong` != 0.
void check_data(unsigned long long wrong, unsigned long long of, std::string_view what);

/// Checks a CUDA runtime call: on failure the benchmark ends with status 1 and a message naming
/// file:line, the call and the error.
#define MEMBRIDGE_GL_BENCH_CUDA(...) ::membridge::bench::check_cuda((__VA_ARGS__), #__VA_ARGS__)

// -------------------------------------------------------------------------------------- clocks ---

using steady = std::chrono::steady_clock;

/// Microseconds from `a` to `b`.
[[nodiscard]] inline double us_between(steady::time_point a, steady::time_point b) {
  return std::chrono::duration<double, std::micro>(b - a).count();
}

/// CPU time this thread has used (CLOCK_THREAD_CPUTIME_ID), ns.
[[nodiscard]] std::int64_t thread_cpu_ns() noexcept;

/// Wall and CPU time of one region of one thread.
class region_timer {
 public:
  void begin() noexcept {
    cpu0_ = thread_cpu_ns();
    wall0_ = steady::now();
  }
  /// Ends the region: sets wall_us and cpu_us (minus what exclude() took out).
  void end() noexcept {
    const auto wall1 = steady::now();
    const std::int64_t cpu1 = thread_cpu_ns();
    wall_us = us_between(wall0_, wall1) - excluded_wall_us_;
    cpu_us = static_cast<double>(cpu1 - cpu0_) / 1000.0 - excluded_cpu_us_;
    excluded_wall_us_ = 0.0;
    excluded_cpu_us_ = 0.0;
  }
  /// Runs `f` inside the region without counting its time (a measurement, not the frame's work).
  template <class F>
  void exclude(F f) {
    const std::int64_t c0 = thread_cpu_ns();
    const auto w0 = steady::now();
    f();
    const auto w1 = steady::now();
    excluded_wall_us_ += us_between(w0, w1);
    excluded_cpu_us_ += static_cast<double>(thread_cpu_ns() - c0) / 1000.0;
  }
  double wall_us = 0.0;  ///< The last region's wall time.
  double cpu_us = 0.0;   ///< The last region's thread CPU time.

 private:
  steady::time_point wall0_{};
  std::int64_t cpu0_ = 0;
  double excluded_wall_us_ = 0.0;
  double excluded_cpu_us_ = 0.0;
};

// -------------------------------------------------------------------------------- CUDA objects ---


/// One unsigned long long of device memory (cudaMalloc), for mismatch counts. Move-only.
class device_counter {
 public:
  device_counter();
  device_counter(const device_counter&) = delete;
  device_counter& operator=(const device_counter&) = delete;
  ~device_counter();
  [[nodiscard]] unsigned long long* get() const noexcept { return p_; }
  /// Its value (cudaMemcpy: waits for the device's work before it).
  [[nodiscard]] unsigned long long read() const;

 private:
  unsigned long long* p_ = nullptr;
};

/// Bytes of device memory in use now (cuda_support.hpp): GL's and CUDA's, any process.
using bench::memory_in_use;

/// `value` rounded up to a multiple of `multiple`.
[[nodiscard]] constexpr std::size_t round_up(std::size_t value, std::size_t multiple) noexcept {
  return (value + multiple - 1) / multiple * multiple;
}

/// The seed of step `step` of frame `frame` of a lane (distinct for every lane, frame and step).
[[nodiscard]] std::uint32_t frame_seed(std::uint32_t lane, std::uint64_t frame, unsigned step) noexcept;

/// The word a frame's GL work copies out of a frame of `words` words.
[[nodiscard]] std::size_t probe_word(std::uint64_t frame, std::size_t words) noexcept;

// ---------------------------------------------------------------------------------- GL objects ---

/// A GL buffer with immutable storage (glNamedBufferStorage) or mutable data (glNamedBufferData).
class gl_buffer {
 public:
  gl_buffer() noexcept = default;
  /// glCreateBuffers + glNamedBufferData(`bytes`, GL_DYNAMIC_DRAW): what legacy interop registers.
  static gl_buffer with_data(std::size_t bytes);
  /// glCreateBuffers + glNamedBufferStorage(`bytes`, GL_DYNAMIC_STORAGE_BIT).
  static gl_buffer with_storage(std::size_t bytes);
  gl_buffer(const gl_buffer&) = delete;
  gl_buffer& operator=(const gl_buffer&) = delete;
  gl_buffer(gl_buffer&& other) noexcept : name_(std::exchange(other.name_, 0U)) {}
  gl_buffer& operator=(gl_buffer&& other) noexcept;
  ~gl_buffer();
  [[nodiscard]] GLuint name() const noexcept { return name_; }
  /// glDeleteBuffers now.
  void reset() noexcept;

 private:
  GLuint name_ = 0;
};

/// glGetNamedBufferSubData of `words` words at byte `offset` of `buffer`.
[[nodiscard]] std::vector<std::uint32_t> read_words(GLuint buffer, std::size_t offset, std::size_t words);

/// Counts the words of `words` that differ from testing::gpu::pattern(first_word + k, seed).
[[nodiscard]] unsigned long long pattern_mismatches(const std::vector<std::uint32_t>& words, std::uint32_t seed,
                                                    std::uint64_t first_word = 0);

/// A GL buffer that collects one 32-bit word per frame (glCopyNamedBufferSubData from the frame's
/// memory), and the word each frame's kernel wrote there: read back at the end, entry i must equal
/// what frame i's kernel wrote, which checks that GL read every frame after its kernel and before
/// the next frame's kernel overwrote it.
class history {
 public:
  history() noexcept = default;
  /// Room for `capacity` frames, every entry poisoned (0xFFFFFFFF is never a pattern word we expect
  /// without also checking the others).
  explicit history(std::size_t capacity);
  /// Enqueues the copy of the word at byte `offset` of `source` into the next entry and records the
  /// `expected` value. Returns the entry's index.
  std::size_t copy_from(GLuint source, std::size_t offset, std::uint32_t expected);
  /// Reads the entries back (waits for GL) and throws bench_failure naming `what` when any differs.
  void verify(std::string_view what) const;
  [[nodiscard]] std::size_t size() const noexcept { return expected_.size(); }

 private:
  gl_buffer buffer_;
  std::size_t capacity_ = 0;
  std::vector<std::uint32_t> expected_;
};

/// GL timestamps (glQueryCounter(GL_TIMESTAMP)) at the end of each frame's GL work, in a ring of
/// queries read back a ring's length later (never a wait in the loop: with at most `slots` frames in
/// flight the result is long available).
class gpu_clock {
 public:
  explicit gpu_clock(std::size_t frames);
  gpu_clock(const gpu_clock&) = delete;
  gpu_clock& operator=(const gpu_clock&) = delete;
  ~gpu_clock();
  /// Before frame `i`'s timed region: reads the result of the query frame `i` will reuse.
  void prepare(std::size_t i);
  /// Inside frame `i`: glQueryCounter.
  void record(std::size_t i);
  /// After the last frame (GL drained): every timestamp, ns, in frame order.
  [[nodiscard]] std::vector<std::uint64_t> finish();

 private:
  static constexpr std::size_t ring = 64;
  std::vector<GLuint> queries_;
  std::vector<std::uint64_t> stamps_;
  std::vector<bool> pending_;
  std::vector<std::size_t> frame_of_;
};

/// Frames in flight: a GL fence after each frame's GL work; frame i first waits on the host for
/// the fence of frame i - depth (a swapchain's frames-in-flight fence). Both paths use it.
class frame_throttle {
 public:
  explicit frame_throttle(std::size_t depth);
  frame_throttle(const frame_throttle&) = delete;
  frame_throttle& operator=(const frame_throttle&) = delete;
  ~frame_throttle();
  /// Before frame `i`: waits for frame i - depth's fence (host wait, outside the timed region).
  void wait(std::size_t i);
  /// Inside frame `i`, after its GL work: glFenceSync.
  void fence(std::size_t i);
  /// Waits for every fence.
  void drain();

 private:
  void wait_slot(std::size_t slot);
  std::size_t depth_;
  std::vector<GLsync> fences_;
};

/// Intervals (us) between consecutive GL timestamps from index `first` on, and their mean (the GPU
/// frame time: (last - first) / count).
struct gpu_intervals {
  std::vector<double> intervals_us;
  double mean_us = 0.0;
};
[[nodiscard]] gpu_intervals intervals_from(const std::vector<std::uint64_t>& stamps, std::size_t first);

// ------------------------------------------------------------------------- shared context ---

/// A GL context sharing objects with the render thread's, for an import thread.
struct shared_context {
  EGLDisplay display = EGL_NO_DISPLAY;
  EGLContext context = EGL_NO_CONTEXT;
  std::string error;  ///< Why there is none.
  shared_context() = default;
  shared_context(const shared_context&) = delete;
  shared_context& operator=(const shared_context&) = delete;
  ~shared_context() {
    if (context != EGL_NO_CONTEXT) eglDestroyContext(display, context);
  }
};

/// "CALL failed, EGL error 0x..." for the last EGL error.
[[nodiscard]] std::string egl_error_text(std::string_view call);

/// Makes a GL 4.5 core context in the current one's share group (on the render thread); on failure
/// `out.error` says why.
void make_shared_context(shared_context& out);

// ---------------------------------------------------------------------------------- hand-off ---

/// Frame counters shared by the CUDA producer thread and the render thread: `produced` = frames
/// whose CUDA work (release included) was enqueued, `released` = frames whose GL release was
/// submitted. Each side waits on the host only for the other side's submissions (never for GPU
/// work), with a timeout; a failure on either side wakes the other, which then throws.
class handoff {
 public:
  /// Producer: frames [0, count) are enqueued.
  void set_produced(std::uint64_t count);
  /// Render thread: releases of frames [0, count) are submitted.
  void set_released(std::uint64_t count);
  /// Waits until produced >= count.
  void wait_produced(std::uint64_t count);
  /// Waits until released >= count.
  void wait_released(std::uint64_t count);
  /// Records a failure (the first) and wakes both sides.
  void fail(std::exception_ptr error) noexcept;
  /// Stops waits (the other side ended early); they throw.
  void abort() noexcept;
  /// Rethrows a recorded failure, if any.
  void rethrow() const;

 private:
  void wait_for(std::uint64_t count, const std::uint64_t& counter, std::string_view what);
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::uint64_t produced_ = 0;
  std::uint64_t released_ = 0;
  bool aborted_ = false;
  std::exception_ptr error_;
};

// ------------------------------------------------------------------------------------- results ---

/// A host-side fraction as JSON-friendly text.
[[nodiscard]] std::string ratio_text(double r);

}  // namespace membridge::bench::gl_bench
