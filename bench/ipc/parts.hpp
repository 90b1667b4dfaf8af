// bench/ipc/parts.hpp: the three measurements of the cross-process benchmark (attach, growth,
// frame handoff), the frame consumers of (c) (the Vulkan one lives in ipc/vulkan_consumer.hpp),
// and the child's main loop.
#pragma once

#include "ipc/support.hpp"

#include <membridge/core/units.hpp>
#include <membridge/cuda/device.hpp>
#include <membridge/cuda/external_semaphore.hpp>
#include <membridge/cuda/imported_buffer.hpp>
#include <membridge/ipc/subscriber.hpp>
#include <membridge/vulkan/device_context.hpp>

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace membridge::bench::ipc_bench {

using namespace membridge::literals;

// ----------------------------------------------------------------------------------- constants ---

/// (a) Every attached buffer: 1 GiB, as one chunk or as `multi_chunks` chunks.
inline constexpr std::size_t attach_bytes = 1_GiB;
inline constexpr std::size_t multi_chunks = 8;
inline constexpr std::size_t multi_chunk_bytes = attach_bytes / multi_chunks;  // 128 MiB
/// (b) Every growth step adds one chunk of this size.
inline constexpr std::size_t growth_step_bytes = 1_GiB;
/// (b) The subscriber's kernel after follow_growth reads one word per this many bytes of the new range.
inline constexpr std::size_t touch_stride = 64_KiB;
/// (c) The frame ring: slots of `slot_bytes`, each a 256-byte header (frame number, producer's
/// %globaltimer stamp) followed by 32-bit words that all hold the frame number.
inline constexpr std::uint32_t frame_slots = 3;
inline constexpr std::size_t slot_bytes = 1_MiB;
inline constexpr std::size_t slot_header_bytes = 256;
inline constexpr std::size_t slot_words = (slot_bytes - slot_header_bytes) / 4;
inline constexpr const char* slots_name = "slots";

/// Goals (from the issue; reported, never enforced).
inline constexpr double attach_ratio_goal = 1.2;         // membridge 1-chunk attach / legacy CUDA IPC attach, <=
inline constexpr double growth_latency_goal_ms = 1.0;    // grow() returned -> subscriber's kernel done, <=
inline constexpr double frame_throughput_goal = 0.9;     // cross-process / single-process frames/s, >=
inline constexpr double latency_p99_goal_ms = 1.0;       // cross-process handoff latency p99 at 144 Hz paced, <=

// ----------------------------------------------------------------------------------- (a) attach ---

/// One round of (a): every method once on fresh buffers, timed in the child (microseconds).
struct attach_round {
  double vmm1_connect_us = 0;  ///< subscriber::connect (socket, handshake, state with the fd)
  double vmm1_import_us = 0;   ///< sync::import_into_cuda of the 1-chunk buffer
  double vmm8_connect_us = 0;
  double vmm8_import_us = 0;   ///< sync::import_into_cuda of the 8-chunk buffer
  double legacy_transfer_us = 0;  ///< connect to the producer's Unix socket + receive the cudaIpcMemHandle
  double legacy_us = 0;           ///< cudaIpcOpenMemHandle of a 1 GiB cudaMalloc buffer
  /// The 1-chunk attach with the child subscribing on another GPU (--attach-peer-device; 0 when not run).
  double other1_connect_us = 0;
  double other1_import_us = 0;  ///< sync::import_into_cuda into the other GPU (peer access to the publisher's)
  [[nodiscard]] double vmm1_total_us() const { return vmm1_connect_us + vmm1_import_us; }
  [[nodiscard]] double vmm8_total_us() const { return vmm8_connect_us + vmm8_import_us; }
  [[nodiscard]] double legacy_total_us() const { return legacy_transfer_us + legacy_us; }
  [[nodiscard]] double other1_total_us() const { return other1_connect_us + other1_import_us; }
};

/// Runs 1 warm-up round (not returned) and `rounds` rounds; the methods' order rotates per round.
/// `other_device` >= 0 adds the 1-chunk attach with the child subscribing on that CUDA device (it
/// must have peer access to `dev`), interleaved with the others; -1: not run.
[[nodiscard]] std::vector<attach_round> run_attach(const cuda::device& dev, const child_process& child,
                                                   const std::string& socket_path, int rounds, int other_device);

// ----------------------------------------------------------------------------------- (b) growth ---

/// One growth step of (b) (microseconds). The latency runs from grow() returning in the producer to
/// the subscriber's steps, all on CLOCK_MONOTONIC.
struct growth_sample {
  double grow_us = 0;         ///< growable_buffer::grow (producer; before the latency starts)
  double publish_us = 0;      ///< sync::publish_growth: export of the new chunk + update message
  double delivery_us = 0;     ///< publish_growth returned -> the subscriber's next_event returned
  double follow_us = 0;       ///< sync::follow_growth (import + map + access of the new chunk)
  double touch_us = 0;        ///< the kernel reading the new range, launch to stream done
  double to_followed_us = 0;  ///< grow() returned -> follow_growth done
  double total_us = 0;        ///< grow() returned -> the kernel on the new range done
};

/// Runs 1 warm-up round (not returned) and `rounds` rounds of `steps` 1 GiB steps each.
[[nodiscard]] std::vector<growth_sample> run_growth(const cuda::device& dev, const child_process& child,
                                                    const std::string& socket_path, int rounds, int steps);

// ---------------------------------------------------------------------------- (c) frame handoff ---

/// How (c) runs.
struct frames_config {
  std::uint64_t frames = 2000;  ///< Measured frames per unpaced run.
  std::uint64_t warmup = 200;   ///< Frames before them (not measured).
  int rounds = 3;               ///< Runs of each pipeline; their order rotates.
  bool cuda_consumers = true;   ///< Also run the CUDA-consumer pipelines (not part of the goal).
  double pace_hz = 144.0;             ///< Paced runs: the producer starts one frame every 1/pace_hz s (0: none).
  std::uint64_t paced_frames = 576;   ///< Measured frames per paced run (576 = 4 s at 144 Hz).
  std::uint64_t paced_warmup = 36;    ///< Frames before them.
};

/// What a consumer saw in one run.
struct consumer_result {
  std::uint64_t frames_seen = 0;
  std::int64_t first_frame = -1;
  std::int64_t last_frame = -1;
  bool increasing = true;
  unsigned long long wrong = 0;       ///< Words (and headers) that did not hold their frame.
  std::int64_t gpu_span_ns = 0;       ///< GPU time of the consumer's last frame - of its first measured one.
  std::uint64_t gpu_span_frames = 0;  ///< Frames in that span (0: no GPU times).
  /// Per frame (index = frame, 0 = not seen), CLOCK_MONOTONIC ns in the consumer's process: when the
  /// consumer was told of the frame (its consume() call began), and when a host wait there returned
  /// after the consumer's work on the frame completed.
  std::vector<std::int64_t> told_ns;
  std::vector<std::int64_t> done_ns;

  /// Counts frame `m` as consumed, checking the order.
  void note(std::uint64_t m);
  /// Sets the span from one GPU time (ns) per frame, 0 for frames without one; frames before
  /// `warmup` are not measured.
  void set_span(const std::vector<std::int64_t>& gpu_ns, std::uint64_t warmup);
};

/// A thread in the consumer's process that, for frames first .. total - 1 in order, waits on the host
/// until the consumer's work on the frame completed and reads CLOCK_MONOTONIC right after the wait
/// returns ("consumer done"). `wait_done(m, stop)` returns true when frame m is done, false when
/// `stop` was set; it throws on an error or when nothing moves for wait_timeout. A thread that falls
/// behind only makes later times larger, never earlier.
class done_monitor {
 public:
  using wait_fn = std::function<bool(std::uint64_t m, const std::atomic<bool>& stop)>;
  done_monitor(std::uint64_t first, std::uint64_t total, wait_fn wait_done);
  done_monitor(const done_monitor&) = delete;
  done_monitor& operator=(const done_monitor&) = delete;
  /// Stops the thread (if still running) and joins it.
  ~done_monitor();
  /// Joins the thread (it ends after frame total - 1) and returns the times (0: frame not seen);
  /// throws bench_failure with the thread's error if it failed.
  [[nodiscard]] std::vector<std::int64_t> take();

 private:
  std::vector<std::int64_t> times_;
  std::atomic<bool> stop_{false};
  std::mutex lock_;
  std::string failure_;  // guarded by lock_
  std::jthread thread_;  // last: joined before the rest goes
};

/// CUDA events, one per frame (cudaEventDisableTiming), destroyed with the object.
class frame_events {
 public:
  explicit frame_events(std::uint64_t count);
  frame_events(const frame_events&) = delete;
  frame_events& operator=(const frame_events&) = delete;
  ~frame_events();
  [[nodiscard]] cudaEvent_t operator[](std::uint64_t i) const { return events_[i]; }

 private:
  std::vector<cudaEvent_t> events_;
};

/// A consumer's subscription to the frame_publisher at `path`: joins as subscriber_role::consumer
/// and checks that the publisher sent the "slots" buffer and both frame semaphores (the references
/// returned stay valid until follow()).
class frame_subscription {
 public:
  explicit frame_subscription(const std::string& path);
  [[nodiscard]] const ipc::received_buffer& slots_buffer() const;
  [[nodiscard]] const ipc::received_semaphore& produced() const;
  [[nodiscard]] const ipc::received_semaphore& consumed() const;
  /// The ring's slot count (the semaphores' parameter).
  [[nodiscard]] std::uint32_t slot_count() const noexcept { return slots_; }
  /// The first frame this consumer may consume (frames announced before the join are not its).
  [[nodiscard]] std::uint64_t first_frame() const noexcept { return first_; }
  /// Calls consume(m) for every frame m the publisher announces from first_frame() on, in order,
  /// until frame total - 1; throws when the publisher goes away or nothing comes for wait_timeout.
  void follow(std::uint64_t total, const std::function<void(std::uint64_t)>& consume);

 private:
  ipc::subscriber sub_;
  std::uint32_t slots_ = 0;
  std::uint64_t first_ = 0;
};

/// The CUDA consumer: imports the subscription's buffer and both semaphores into CUDA;
/// consume(m) enqueues, on its own stream, a wait for produced >= m + 1, check_stamped_frame on
/// slot m % slots (every word, the header; %globaltimer at its start) and the signal consumed = m + 1.
/// No host wait in consume(): it records an event per frame after the signal, which a done_monitor
/// waits for (the consumer's "done" time). finish() waits for its stream and gathers the results.
class cuda_frame_consumer {
 public:
  cuda_frame_consumer(const cuda::device& dev, const frame_subscription& sub, std::uint64_t total, std::uint64_t warmup);
  void consume(std::uint64_t m);
  [[nodiscard]] consumer_result finish();

 private:
  /// The done_monitor's wait for frame m: until consume(m) recorded its event, then until it completed.
  bool wait_done(std::uint64_t m, const std::atomic<bool>& stop);

  cuda::imported_buffer view_;
  cuda::external_semaphore produced_;
  cuda::external_semaphore consumed_;
  cuda_stream stream_;
  device_memory log_;
  device_memory errors_;
  consumer_result r_;
  std::uint64_t total_ = 0;
  std::uint64_t warmup_ = 0;
  std::uint64_t slots_ = 0;
  std::uint64_t first_ = 0;
  int device_ = 0;
  bool device_set_ = false;  // the done monitor's thread made device_ current
  std::vector<std::int64_t> told_;
  frame_events events_;
  std::mutex recorded_lock_;
  std::condition_variable recorded_changed_;
  std::uint64_t recorded_ = 0;  // frames whose event is recorded (guarded by recorded_lock_)
  done_monitor done_;            // last: stopped and joined before the rest goes
};

/// One run of one pipeline. Latency per measured frame n, all CLOCK_MONOTONIC (one clock for every
/// process on the machine), each part >= 0 by causality (checked: a negative one fails the run):
///   release:  the producer thread's clock read right before it enqueues cuda_release(n);
///   told:     the consumer's consume(n) began (it learnt of frame n: announcement or in-memory);
///   done:     the consumer's done_monitor woke from its host wait on frame n's completion.
struct frame_run {
  double frames_per_s = 0;         ///< Measured frames / host time from enqueuing the first one to consumed.
  double gpu_interval_us = 0;      ///< Mean interval between the consumer's per-frame GPU times (0: none).
  std::vector<double> latency_us;  ///< Per measured frame: release -> done.
  std::vector<double> delivery_us; ///< Per measured frame: release -> told (the announcement's way).
  std::vector<double> consumer_us; ///< Per measured frame: told -> done (submit, GPU wait and work, wake).
  std::uint64_t frames_seen = 0;   ///< Frames the consumer consumed (of warmup + frames).
};

/// Adds run's latencies (frame_run's definitions) for the measured frames warmup .. total - 1 from
/// the producer's release times and the consumer's told and done times; throws bench_failure when a
/// part is negative (the method would be wrong) or fewer than 90% of the measured frames have all
/// three times (a frame the consumer skipped has none).
void add_latencies(frame_run& run, const std::vector<std::int64_t>& release_ns, const consumer_result& seen,
                   std::uint64_t warmup, std::uint64_t total, const std::string& what);

/// The pipelines, `rounds` runs each (empty for the CUDA ones when not asked for, and for the paced
/// ones when pace_hz is 0).
struct frames_results {
  std::vector<frame_run> vulkan_cross;   ///< Vulkan consumer in the child process (imported memory and timeline).
  std::vector<frame_run> vulkan_single;  ///< Vulkan consumer in this process (mirror_in_vulkan, the same timeline).
  std::vector<frame_run> cuda_cross;     ///< CUDA consumer in the child process.
  std::vector<frame_run> cuda_single;    ///< CUDA consumer enqueued by the producer's thread, this process.
  std::vector<frame_run> vulkan_cross_paced;   ///< vulkan_cross with the producer paced at pace_hz.
  std::vector<frame_run> vulkan_single_paced;  ///< vulkan_single with the producer paced at pace_hz.
};

/// Runs (c). `vk` is this process's Vulkan device on `dev`'s GPU.
[[nodiscard]] frames_results run_frames(const vulkan::device_context& vk, const cuda::device& dev,
                                        const child_process& child, const std::string& socket_path,
                                        const frames_config& config);

/// The child's side of a cross-process run of (c): subscribes at `path`, calls `on_ready`, consumes
/// frames 0 .. total - 1 with `api` (`vk`: the child's Vulkan device, for the Vulkan consumer).
[[nodiscard]] consumer_result consume_in_child(const cuda::device& dev, const vulkan::device_context& vk,
                                               consumer_api api, const std::string& path, std::uint64_t total,
                                               std::uint64_t warmup, const std::function<void()>& on_ready);

// ------------------------------------------------------------------------------------- the child ---

/// The child process's main(): opens the device, warms up, answers, then serves the parent's
/// requests until quit. Returns the exit status.
[[nodiscard]] int child_main(int device);

}  // namespace membridge::bench::ipc_bench
