// The producer of sample 03: sample 01's CUDA particle simulation, published to other processes.
//
//   setup   cuda::device 0, a Vulkan device on the same GPU (for the timeline semaphores only),
//           one growable_buffer of S slots x N particles (ipc_layout: "membridge.particles.v1"),
//           a sync::frame_publisher (socket, frames.produced / frames.consumed), publish_buffer
//   frame n host: wait consumed >= n - S + 1 (throttle: the slot's last reader is done), or sleep to
//           --idle-fps while no consumer is attached
//           cuda_acquire(stream, n); copy slot (n-1) % S -> n % S; K steps; cuda_release(stream, n)
//           publish_frame(n): viewers learn that frame n is coming (they wait for produced on the GPU)
//   growth  before frame g: wait until frame g-1 was consumed (no frame in flight uses the old layout),
//           grow() (maps a chunk more: no copy, same address), move frame g-1 to its slot in the new
//           layout, spawn the new particles (kernel), publish_growth(); frames from g on have N' particles
//
// With --sim-device B other than --render-device A, the buffer, the Vulkan device and the frame timeline
// stay on A (what viewers import, on A, as on one GPU) and the kernels run on B through a
// sync::cross_gpu_link: begin_frame/end_frame replace cuda_acquire/cuda_release, the steps write the
// link's write target (B's buffer, copied into A's slot by B's copy engine; A's slot through the peer
// mapping; or through pinned host memory when the GPUs cannot peer). No host wait is added to the loop.
// A growth makes a new link for the new layout (the slots move) and moves frame g-1 into its write target.
#include "producer.hpp"

#include "cuda_runtime_check.hpp"  // samples/common
#include "particle_growth.hpp"
#include "particle_layout.hpp"
#include "particle_sim.hpp"
#include "particle_sim_cuda.hpp"
#include "frame_stats.hpp"

#include <membridge/core/units.hpp>
#include <membridge/cuda/device.hpp>
#include <membridge/cuda/growable_buffer.hpp>
#include <membridge/ipc/publisher.hpp>
#include <membridge/sync/cross_gpu_link.hpp>
#include <membridge/sync/frame_publisher.hpp>
#include <membridge/sync/ipc_buffers.hpp>
#include <membridge/sync/same_gpu.hpp>

#include <cuda_runtime_api.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <optional>
#include <ostream>
#include <string>
#include <thread>
#include <vector>

namespace particles::ipc_producer {

using membridge::errc;
using membridge::error;
using membridge::result;
using namespace std::chrono_literals;
using apps::frame_stats;
using apps::frame_summary;
using clock_type = std::chrono::steady_clock;

namespace {

/// Largest chunk a growth maps: Vulkan's import time grows faster than the size (ARCHITECTURE.md 7),
/// and every viewer imports each chunk.
constexpr std::size_t max_chunk_bytes = std::size_t{256} << 20;
/// How long the end of a run waits for the consumer to draw the last frame.
constexpr auto final_wait = 2s;
/// A throttle wait longer than this is reported (once per wait).
constexpr auto stall_note = 5s;
/// The statistics line's period.
constexpr auto progress_period = 1s;
/// Angle between the generations of spawned particles (the golden angle: copies never line up).
constexpr float golden_angle = 2.39996323f;

std::atomic<bool> stop_flag{false};
std::atomic<int> stop_signal{0};
static_assert(std::atomic<bool>::is_always_lock_free && std::atomic<int>::is_always_lock_free,
              "request_stop() runs in a signal handler");

using samples::cuda_error;

/// Copies `count` particles from `source` to `destination` on `stream`: move_particles where the ranges
/// overlap (a slot moving up in one buffer), one cudaMemcpyAsync where they do not.
cudaError_t copy_particles(particle* destination, const particle* source, std::size_t count, cudaStream_t stream) {
  const auto to = reinterpret_cast<std::uintptr_t>(destination);
  const auto from = reinterpret_cast<std::uintptr_t>(source);
  const std::uintptr_t bytes = count * sizeof(particle);
  if (to < from + bytes && from < to + bytes) return move_particles(destination, source, count, stream);
  return cudaMemcpyAsync(destination, source, bytes, cudaMemcpyDeviceToDevice, stream);
}

double to_ms(clock_type::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

std::string ms_text(double ms) {
  char text[32];
  (void)std::snprintf(text, sizeof text, "%.2f ms", ms);
  return text;
}

/// Whole lines to one stream from several threads (the loop and the publisher's on_event).
class console {
 public:
  explicit console(std::ostream& out) : out_(out) {}
  void line(const std::string& text) {
    const std::scoped_lock hold(lock_);
    out_ << text << '\n' << std::flush;
  }

 private:
  std::ostream& out_;
  std::mutex lock_;
};

const char* role_name(membridge::ipc::subscriber_role role) {
  return role == membridge::ipc::subscriber_role::consumer ? "consumer" : "observer";
}

/// One line per subscriber event, e.g. `subscriber 1 joined as consumer (pid 4242, "membridge_ipc_viewer") at frame 17`.
std::string describe(const membridge::ipc::publisher_event& e) {
  using kind = membridge::ipc::publisher_event::kind;
  std::string who = "pid " + std::to_string(e.peer.pid);
  if (!e.client_name.empty()) who += ", \"" + e.client_name + "\"";
  const std::string at = e.last_frame ? " at frame " + std::to_string(*e.last_frame) : " before the first frame";
  switch (e.what) {
    case kind::joined:
      return "subscriber " + std::to_string(e.subscriber) + " joined as " + role_name(e.role) + " (" + who + ")" + at;
    case kind::left:
      return "subscriber " + std::to_string(e.subscriber) + " (" + role_name(e.role) + ", " + who + ") left" + at +
             (e.reason.empty() ? "" : ": " + e.reason);
    case kind::refused:
      return "refused a connection (" + who + ", uid " + std::to_string(e.peer.uid) + ")" +
             (e.reason.empty() ? "" : ": " + e.reason);
  }
  return "subscriber event";
}

const char* signal_name(int number) {
  switch (number) {
    case 2:
      return "SIGINT";
    case 15:
      return "SIGTERM";
    default:
      return "a signal";
  }
}

/// Owns a CUDA stream; synchronises it before destroying it.
class stream_owner {
 public:
  stream_owner() = default;
  stream_owner(const stream_owner&) = delete;
  stream_owner& operator=(const stream_owner&) = delete;
  ~stream_owner() {
    if (stream_ == nullptr) return;
    (void)cudaStreamSynchronize(stream_);
    (void)cudaStreamDestroy(stream_);
  }
  result<void> create() {
    if (const cudaError_t rc = cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking); rc != cudaSuccess)
      return cuda_error(rc, "cudaStreamCreateWithFlags", "the producer's stream");
    return membridge::ok();
  }
  [[nodiscard]] cudaStream_t get() const noexcept { return stream_; }
  [[nodiscard]] result<void> synchronize(const std::string& what) const {
    if (const cudaError_t rc = cudaStreamSynchronize(stream_); rc != cudaSuccess)
      return cuda_error(rc, "cudaStreamSynchronize", what);
    return membridge::ok();
  }

 private:
  cudaStream_t stream_ = nullptr;
};

/// The publishing simulation: buffer, publisher, stream and the frame loop.
class producer {
 public:
  producer(const producer_options& o, console& con)
      : o_(o), con_(con), count_(o.particles), max_count_(o.max_particles) {}

  result<void> setup() {
    MEMBRIDGE_TRY_ASSIGN(device_, membridge::cuda::device::open(o_.render_device)
                                      .with_context("opening the render GPU, CUDA device " +
                                                    std::to_string(o_.render_device)));
    if (cross_gpu()) {
      MEMBRIDGE_TRY_ASSIGN(sim_, membridge::cuda::device::open(device_.shared_driver(), o_.sim_device)
                                     .with_context("opening the simulation's GPU, CUDA device " +
                                                   std::to_string(o_.sim_device)));
      align_counts_for_the_link();
    }
    // The Vulkan device only makes the timeline semaphores (exportable, imported into CUDA): the producer
    // draws nothing.
    MEMBRIDGE_TRY_ASSIGN(context_, membridge::sync::create_vulkan_context_for(device_).with_context(
                                       "creating a Vulkan device on the CUDA device's GPU (for the frame semaphores)"));
    const auto reserved = membridge::round_up(ipc_layout::bytes_for(max_count_, o_.slots), device_.granularity());
    if (!reserved) return error(errc::invalid_argument, "membridge_ipc_producer", "the reserved size overflows");
    membridge::cuda::growable_buffer_options bo;
    bo.size = ipc_layout::bytes_for(count_, o_.slots);
    bo.max_size = *reserved;
    bo.chunks.growth_factor = 1.0;  // the producer grows geometrically itself: map what it asks for
    bo.chunks.max_chunk = max_chunk_bytes;
    MEMBRIDGE_TRY_ASSIGN(buffer_, membridge::cuda::growable_buffer::create(device_, bo)
                                      .with_context("allocating " + membridge::format_bytes(bo.size) +
                                                    " for the particles (" + membridge::format_bytes(bo.max_size) +
                                                    " reserved)"));
    if (cross_gpu()) {
      MEMBRIDGE_TRY_ASSIGN(link_, make_link(count_));
    }
    // The simulation's GPU is current from here on: its stream, its kernels, and the upload into the
    // first frame's write target (B's buffer, or A's slot through the peer mapping).
    if (const cudaError_t rc = cudaSetDevice(o_.sim_device); rc != cudaSuccess)
      return cuda_error(rc, "cudaSetDevice", "device " + std::to_string(o_.sim_device));
    {
      const auto initial = initial_particles(static_cast<std::size_t>(count_), o_.seed, params_);
      if (const cudaError_t rc = cudaMemcpy(target(0), initial.data(), initial.size() * sizeof(particle),
                                            cudaMemcpyHostToDevice);
          rc != cudaSuccess)
        return cuda_error(rc, "cudaMemcpy", "uploading the initial particles into slot 0");
    }

    membridge::sync::frame_publisher_options fo;
    fo.ipc.listen.name = o_.name;
    fo.ipc.publisher_name = "membridge_ipc_producer";
    fo.ipc.on_event = [this](const membridge::ipc::publisher_event& e) {
      if (e.what == membridge::ipc::publisher_event::kind::joined) served_.fetch_add(1);
      con_.line(describe(e));
    };
    fo.timeline.slots = o_.slots;
    fo.timeline_name = std::string(ipc_layout::timeline_name);
    MEMBRIDGE_TRY_ASSIGN(publisher_, membridge::sync::frame_publisher::create(context_, device_, std::move(fo))
                                         .with_context("publishing the frame timeline as '" + o_.name + "'"));
    MEMBRIDGE_TRY(membridge::sync::publish_buffer(publisher_.publisher(), std::string(ipc_layout::buffer_name), buffer_,
                                                  device_,
                                                  {std::string(ipc_layout::format_name), ipc_layout::stride})
                      .with_context("publishing the particle buffer"));
    return stream_.create();
  }

  void print_header() {
    std::string growth;
    if (o_.grow_every == 0 || max_count_ <= count_) {
      growth = o_.grow_every == 0 ? "no growth" : "no growth (--max-particles is the start count)";
    } else {
      char factor[32];
      (void)std::snprintf(factor, sizeof factor, "%g", o_.grow_factor);
      growth = "x" + std::string(factor) + " every " + std::to_string(o_.grow_every) + " frames up to " +
               std::to_string(max_count_);
    }
    char idle[64];
    if (o_.idle_fps > 0)
      (void)std::snprintf(idle, sizeof idle, "%g FPS while no consumer is attached", o_.idle_fps);
    else
      (void)std::snprintf(idle, sizeof idle, "unlimited FPS while no consumer is attached");
    con_.line("membridge_ipc_producer: publishing '" + o_.name + "' on " + device_.name() + ": " +
              std::to_string(count_) + " particles (" + growth + "), " + std::to_string(o_.steps) +
              (o_.steps == 1 ? " step" : " steps") + "/frame, " + std::to_string(o_.slots) + " slots, " +
              (o_.frames > 0 ? std::to_string(o_.frames) + " frames" : std::string("until stopped")) + ", " + idle);
    if (link_.valid()) {
      con_.line("across GPUs: simulating on CUDA device " + std::to_string(o_.sim_device) + " (" + sim_->name() +
                "), publishing from CUDA device " + std::to_string(o_.render_device) + " (" + device_.name() +
                "); each frame crosses by " + std::string(membridge::sync::to_string(link_.mode())) +
                " (sync::cross_gpu_link); viewers: --render-device " + std::to_string(o_.render_device));
      if (!alignment_note_.empty()) con_.line(alignment_note_);
    }
    con_.line("socket: " + publisher_.publisher().path() + "  (membridge_ipc_viewer --name " + o_.name + ")");
    con_.line("memory: " + std::string(ipc_layout::format_name) + ": " + std::to_string(o_.slots) + " slots x " +
              membridge::format_bytes(ipc_layout::bytes_for(count_, 1)) + " back to back in one growable_buffer (" +
              membridge::format_bytes(buffer_.capacity()) + " mapped in " + chunks_text() + ", " +
              membridge::format_bytes(buffer_.max_size()) + " reserved); frame f at byte (f % " +
              std::to_string(o_.slots) + ") * N * 32, N = size / " + std::to_string(o_.slots * ipc_layout::stride));
    con_.line("sync: semaphores " + std::string(ipc_layout::produced_name) + " / " +
              std::string(ipc_layout::consumed_name) + " (parameter " + std::to_string(o_.slots) +
              " = slots); a consumer paces the producer, observers do not");
  }

  /// The frame loop, then the end of the run (wait for the last frame, statistics).
  result<void> run() {
    const result<void> looped = loop();
    const result<void> finished = finish();
    if (!looped) {
      error e = looped.error();
      if (!finished) e.add_context("and then: " + finished.error().message());
      return e;
    }
    return finished;
  }

 private:
  [[nodiscard]] particle* slot(std::uint64_t frame) const noexcept {
    return buffer_.data<particle>() + (frame % o_.slots) * count_;
  }

  [[nodiscard]] bool cross_gpu() const noexcept { return o_.sim_device != o_.render_device; }

  /// Where frame `frame`'s kernels write: its slot in the published buffer, or the link's write target.
  [[nodiscard]] particle* target(std::uint64_t frame) const noexcept {
    return link_.valid() ? reinterpret_cast<particle*>(link_.write_target(frame)) : slot(frame);
  }

  /// `count` rounded up to the counts this run uses (8, or ipc_layout::cross_gpu_count_alignment()).
  [[nodiscard]] std::uint64_t aligned(std::uint64_t count) const noexcept {
    return (count + count_alignment_ - 1) / count_alignment_ * count_alignment_;
  }

  /// Across GPUs, counts become multiples of ipc_layout::cross_gpu_count_alignment() (1M and the other
  /// powers of two from 64K up already are); the header says so when that changed them.
  void align_counts_for_the_link() {
    count_alignment_ = ipc_layout::cross_gpu_count_alignment(device_.granularity(), o_.slots);
    const std::uint64_t count = aligned(count_);
    const std::uint64_t max = std::max(aligned(max_count_), count);
    if (count != count_ || max != max_count_)
      alignment_note_ = "note: particle counts rounded up to multiples of " + std::to_string(count_alignment_) +
                        " across GPUs (" + std::to_string(count) + " at the start, at most " + std::to_string(max) +
                        "): the slots must end where the buffer's mapped memory does";
    count_ = count;
    max_count_ = max;
  }

  /// A link from the simulation's GPU to the slots of `count` particles in the buffer on the render GPU.
  [[nodiscard]] result<membridge::sync::cross_gpu_link> make_link(std::uint64_t count) const {
    const std::size_t bytes = static_cast<std::size_t>(ipc_layout::bytes_for(count, 1));
    std::vector<CUdeviceptr> slots;
    for (std::uint32_t k = 0; k < o_.slots; ++k) slots.push_back(buffer_.address() + k * bytes);
    return membridge::sync::cross_gpu_link::create(device_, *sim_, slots, bytes)
        .with_context("linking the simulation's GPU (CUDA device " + std::to_string(o_.sim_device) +
                      ") to the render GPU (CUDA device " + std::to_string(o_.render_device) + ") for " +
                      std::to_string(count) + " particles per slot");
  }

  [[nodiscard]] std::string chunks_text() const {
    return std::to_string(buffer_.chunk_count()) + (buffer_.chunk_count() == 1 ? " chunk" : " chunks");
  }

  /// Waits until frame `frame` was consumed, in slices so a stop request ends the wait (false then).
  result<bool> wait_consumed(std::uint64_t frame) {
    const auto start = clock_type::now();
    bool noted = false;
    for (;;) {
      auto waited = publisher_.timeline().wait_consumed(frame, 50ms);
      if (waited) return true;
      if (waited.error().code() != errc::timeout) return std::move(waited).error();
      if (stop_flag.load()) return false;
      if (!noted && clock_type::now() - start > stall_note) {
        con_.line("waiting for the consumer to draw frame " + std::to_string(frame) + " (5 s so far)");
        noted = true;
      }
    }
  }

  /// Sleeps until `deadline` in slices; false when a stop request came first.
  static bool sleep_until(clock_type::time_point deadline) {
    for (auto now = clock_type::now(); now < deadline; now = clock_type::now()) {
      if (stop_flag.load()) return false;
      std::this_thread::sleep_for(std::min<clock_type::duration>(deadline - now, 50ms));
    }
    return !stop_flag.load();
  }

  [[nodiscard]] bool growth_due(std::uint64_t n) const noexcept {
    return o_.grow_every > 0 && n > 0 && n % o_.grow_every == 0 && count_ < max_count_;
  }

  result<void> loop() {
    const membridge::sync::frame_timeline& timeline = publisher_.timeline();
    const cudaStream_t stream = stream_.get();
    start_ = clock_type::now();
    auto last_frame_end = start_;
    auto last_line = start_;
    auto idle_due = start_;
    for (std::uint64_t n = 0; o_.frames == 0 || n < o_.frames; ++n) {
      if (stop_flag.load()) break;
      if (growth_due(n)) {
        MEMBRIDGE_TRY_ASSIGN(const bool grown, grow(n));
        if (!grown) break;  // stopped while waiting for the consumer
      }
      if (n >= o_.slots) {
        // Throttle on the host: the slot's previous reader (frame n - S) must be done, so the GPU wait
        // that cuda_acquire enqueues is already satisfied and the stream never blocks on a viewer.
        MEMBRIDGE_TRY_ASSIGN(const bool slot_free, wait_consumed(n - o_.slots));
        if (!slot_free) break;
      }
      if (o_.idle_fps > 0 && !publisher_.publisher().has_consumer()) {
        const auto period = std::chrono::duration_cast<clock_type::duration>(std::chrono::duration<double>(1.0 / o_.idle_fps));
        idle_due = std::max(idle_due + period, clock_type::now());  // never a burst to catch up
        if (!sleep_until(idle_due)) break;
      } else {
        idle_due = clock_type::now();
      }
      const std::string frame = "frame " + std::to_string(n);
      if (link_.valid())
        MEMBRIDGE_TRY(link_.begin_frame(timeline, stream, n).with_context(frame));
      else
        MEMBRIDGE_TRY(timeline.cuda_acquire(stream, n).with_context(frame));
      if (n > 0 && o_.slots > 1) {
        if (const cudaError_t rc = cudaMemcpyAsync(target(n), target(n - 1), count_ * sizeof(particle),
                                                   cudaMemcpyDeviceToDevice, stream);
            rc != cudaSuccess)
          return cuda_error(rc, "cudaMemcpyAsync", "copying the previous frame's slot: " + frame);
      }
      if (const cudaError_t rc = step_cuda(target(n), static_cast<std::size_t>(count_), params_, o_.steps, stream);
          rc != cudaSuccess)
        return cuda_error(rc, "step_cuda", frame);
      if (link_.valid())
        MEMBRIDGE_TRY(link_.end_frame(timeline, stream, n).with_context(frame));
      else
        MEMBRIDGE_TRY(timeline.cuda_release(stream, n).with_context(frame));
      MEMBRIDGE_TRY(publisher_.publish_frame(n).with_context(frame));
      last_announced_ = n;
      ++frames_;

      const auto now = clock_type::now();
      window_.add(last_frame_end, now);
      last_frame_end = now;
      if (now - last_line >= progress_period) {
        print_progress(n);
        last_line = now;
      }
    }
    return membridge::ok();
  }

  void print_progress(std::uint64_t n) {
    const frame_summary s = window_.summary();
    const std::size_t subscribers = publisher_.publisher().subscriber_count();
    char text[256];
    (void)std::snprintf(text, sizeof text, "frame %llu  %llu particles  median %.2f ms  p99 %.2f ms  %.0f FPS  %zu %s%s",
                        static_cast<unsigned long long>(n), static_cast<unsigned long long>(count_), s.median_ms,
                        s.p99_ms, s.fps, subscribers, subscribers == 1 ? "subscriber" : "subscribers",
                        publisher_.publisher().has_consumer() ? " (consumer attached)" : "");
    con_.line(text);
    window_.clear();
  }

  /// Grows the ring before frame `n` (see the file comment). False when stopped while draining.
  result<bool> grow(std::uint64_t n) {
    const std::uint64_t old_count = count_;
    const auto wanted = static_cast<std::uint64_t>(std::ceil(static_cast<double>(old_count) * o_.grow_factor));
    const std::uint64_t new_count = std::min(aligned(wanted), max_count_);
    const std::string what = "growing to " + std::to_string(new_count) + " particles before frame " + std::to_string(n);
    const std::size_t chunks_before = buffer_.chunk_count();

    const auto t0 = clock_type::now();
    // No frame in flight may use the old layout: wait until every current consumer consumed the last
    // one (with no consumer there is nothing to wait for) and the stream has finished it.
    MEMBRIDGE_TRY_ASSIGN(const bool drained, wait_consumed(n - 1));
    if (!drained) return false;
    MEMBRIDGE_TRY(stream_.synchronize(what));
    // Across GPUs: the link's copies into the old slots are done too (the new layout overlaps them).
    if (link_.valid()) MEMBRIDGE_TRY(link_.synchronize().with_context(what));
    const auto t1 = clock_type::now();
    MEMBRIDGE_TRY(buffer_.grow(ipc_layout::bytes_for(new_count, o_.slots)).with_context(what));
    const auto t2 = clock_type::now();
    // Frame n-1 moves to its slot in the new layout (slot k from byte k*N*32 to k*N'*32: up, maybe
    // overlapping), then the new particles follow it: turned copies of it, so they start on orbits.
    // Across GPUs the slots changed, so a new link (granting the new chunks too) takes over, and frame
    // n-1 moves from the old link's write target into the new one's (in peer_write both are A's slot).
    particle* source = target(n - 1);
    membridge::sync::cross_gpu_link next;
    if (link_.valid()) {
      MEMBRIDGE_TRY_ASSIGN(next, make_link(new_count));
    }
    const std::uint64_t k = (n - 1) % o_.slots;
    particle* moved = next.valid() ? reinterpret_cast<particle*>(next.write_target(n - 1))
                                   : buffer_.data<particle>() + k * new_count;
    if (const cudaError_t rc = copy_particles(moved, source, old_count, stream_.get()); rc != cudaSuccess)
      return cuda_error(rc, "copy_particles", what);
    ++growths_;
    if (const cudaError_t rc = spawn_particles(moved + old_count, new_count - old_count, moved, old_count,
                                               golden_angle * static_cast<float>(growths_), stream_.get());
        rc != cudaSuccess)
      return cuda_error(rc, "spawn_particles", what);
    MEMBRIDGE_TRY(stream_.synchronize(what));
    if (next.valid()) link_ = std::move(next);  // the old link is idle: its streams, events and buffer go
    const auto t3 = clock_type::now();
    count_ = new_count;  // frames from n on
    MEMBRIDGE_TRY(membridge::sync::publish_growth(publisher_.publisher(), std::string(ipc_layout::buffer_name), buffer_,
                                                  device_)
                      .with_context(what));
    const auto t4 = clock_type::now();
    const std::size_t added = buffer_.chunk_count() - chunks_before;
    con_.line("grew to " + std::to_string(new_count) + " particles before frame " + std::to_string(n) + ": drain " +
              ms_text(to_ms(t1 - t0)) + ", grow " + ms_text(to_ms(t2 - t1)) + ", move + spawn " +
              ms_text(to_ms(t3 - t2)) + ", publish_growth " + ms_text(to_ms(t4 - t3)) + "; " +
              membridge::format_bytes(buffer_.size()) + " in use, " + membridge::format_bytes(buffer_.capacity()) +
              " mapped in " + chunks_text() + " (+" + std::to_string(added) + ")" +
              (new_count >= max_count_ ? "; --max-particles reached" : ""));
    return true;
  }

  /// The end of a run: waits (a little) for the consumer to draw the last frame, and for the stream.
  result<void> finish() {
    if (stop_flag.load())
      con_.line("stopping after " + std::to_string(frames_) + " frames (" + signal_name(stop_signal.load()) + ")");
    if (last_announced_ && publisher_.publisher().has_consumer()) {
      auto waited = publisher_.timeline().wait_consumed(*last_announced_, final_wait);
      if (!waited && waited.error().code() == errc::timeout)
        con_.line("the consumer did not draw frame " + std::to_string(*last_announced_) + " within 2 s; stopping anyway");
      else if (!waited)
        return std::move(waited).error().add_context("waiting for the consumer to draw the last frame");
    }
    MEMBRIDGE_TRY(stream_.synchronize("the producer's last frames"));
    if (link_.valid()) MEMBRIDGE_TRY(link_.synchronize().with_context("moving the last frames to the render GPU"));
    const double seconds = std::chrono::duration<double>(clock_type::now() - start_).count();
    char text[256];
    (void)std::snprintf(text, sizeof text, "frames %llu in %.1f s (%.0f FPS), %llu particles, %u growth%s, %llu subscriber%s served",
                        static_cast<unsigned long long>(frames_), seconds,
                        seconds > 0 ? static_cast<double>(frames_) / seconds : 0.0,
                        static_cast<unsigned long long>(count_), growths_, growths_ == 1 ? "" : "s",
                        static_cast<unsigned long long>(served_.load()), served_.load() == 1 ? "" : "s");
    con_.line(text);
    return membridge::ok();
  }

  const producer_options& o_;
  console& con_;
  std::uint64_t count_;      // particles per slot of the frames produced now
  std::uint64_t max_count_;  // --max-particles (across GPUs: aligned as count_ is)
  std::uint64_t count_alignment_ = ipc_layout::count_alignment;
  std::string alignment_note_;  // across GPUs, when the counts were rounded up
  sim_params params_ = default_params();
  frame_stats window_{4096};  // frame times since the last statistics line
  clock_type::time_point start_{};
  std::optional<std::uint64_t> last_announced_;
  std::uint64_t frames_ = 0;
  unsigned growths_ = 0;
  std::atomic<std::uint64_t> served_{0};  // written by on_event: declared before the publisher, outlives it
  // Destroyed in reverse: the stream (synchronised), the link (waits for its relay and copy streams),
  // the publisher (goodbye to subscribers, then its timeline), the buffer (waits for the device), the
  // Vulkan context, the CUDA devices.
  membridge::cuda::device device_;                 // A: the render GPU (buffer, timeline, Vulkan)
  std::optional<membridge::cuda::device> sim_;     // B: the simulation's GPU, when not A
  membridge::vulkan::device_context context_;
  membridge::cuda::growable_buffer buffer_;
  membridge::sync::frame_publisher publisher_;
  membridge::sync::cross_gpu_link link_;  // across GPUs only
  stream_owner stream_;
};

}  // namespace

void request_stop(int signal_number) noexcept {
  stop_signal.store(signal_number);
  stop_flag.store(true);
}

std::string cuda_unavailable_reason() { return samples::cuda_unavailable_reason(); }

int cuda_device_count() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) return 0;
  return count;
}

result<void> run(const producer_options& options, std::ostream& out) {
  console con(out);
  producer p(options, con);
  MEMBRIDGE_TRY(p.setup());
  p.print_header();
  return p.run();
}

}  // namespace particles::ipc_producer
