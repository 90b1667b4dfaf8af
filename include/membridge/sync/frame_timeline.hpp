// membridge/sync/frame_timeline.hpp: the per-frame handoff between a producer (CUDA kernels, or the
// host) and a Vulkan consumer, with timeline semaphores and no host wait in the loop.
#pragma once

#include <membridge/core/result.hpp>
#include <membridge/cuda/device.hpp>
#include <membridge/cuda/external_semaphore.hpp>
#include <membridge/os/shareable_handle.hpp>
#include <membridge/vulkan/device_context.hpp>
#include <membridge/vulkan/timeline_semaphore.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>

namespace membridge::sync {

/// Options for frame_timeline.
struct frame_timeline_options {
  std::uint32_t slots = 2;  ///< Ring size N: the producer may write frame n while frame n-1 (up to n-N+1) is drawn.
  /// false: one `consumed` semaphore, signalled by one consumer. true (create and
  /// create_host_producer only): no shared `consumed`; every consumer gets a semaphore of its own
  /// (add_consumer), the producer waits for all current ones, and with none it runs free.
  bool consumer_slots = false;
};

/// The two semaphores of a frame_timeline as fds, for another process (ipc) or API.
/// Ownership: the holder owns both fds.
struct frame_timeline_fds {
  os::shareable_handle produced;  ///< The `produced` semaphore's opaque fd.
  os::shareable_handle consumed;  ///< The `consumed` semaphore's opaque fd (empty with consumer_slots).
};

/// One semaphore operation for a Vulkan submit.
struct semaphore_op {
  VkSemaphore semaphore = VK_NULL_HANDLE;  ///< Ownership: owned by the frame_timeline.
  std::uint64_t value = 0;                 ///< The timeline value to wait for or signal.
};

/// The per-frame protocol between a producer that writes slot `frame % slots()` and a Vulkan consumer
/// that draws it, on two timeline semaphores:
///
///   produced: the producer signals produced_value(n) = n + 1 when frame n is written;
///   consumed: Vulkan signals consumed_value(n) = n + 1 when it has finished reading frame n.
///
/// Frame n's producer waits (on the GPU) for consumed >= n - slots + 1, i.e. the last reader of
/// the same slot; Vulkan's submit for frame n waits for produced >= n + 1. So the producer writes
/// slot k while Vulkan draws slot k-1, nothing waits on the host, and one CUDA->Vulkan->CUDA round
/// trip happens per drawn frame however many kernels the producer runs between acquire and release.
///
/// create() makes both semaphores in Vulkan (exportable) and imports them into CUDA;
/// create_host_producer() is for a producer on the CPU (no CUDA: the demo's CPU path and CI), which
/// waits and signals from the host.
///
/// Several consumers (options.consumer_slots): each consumer has a `consumed` semaphore of its own
/// (add_consumer, made when it joins, starting at consumed_value(its join frame)), and the
/// producer's acquire waits for every current one: cuda_acquire enqueues ONE
/// cuWaitExternalSemaphoresAsync over the N current semaphores (none when N is 0), host_acquire
/// waits on each. remove_consumer takes a consumer out of the wait set at once (later acquires never
/// wait on it), raises its semaphore to the last value any enqueued acquire waits for, and retires
/// it: each later acquire (and host_release, wait_consumed) raises it again if GPU work of a dead
/// consumer set it back, and destroys it (CUDA import first) once `produced` shows the stream passed
/// the last acquire that included it. No thread of its own and no timer are involved. docs/synchronization.md,
/// "Several consumers", says what it costs.
///
/// Thread use: the producer calls (cuda_acquire/cuda_release or host_*) may run on one thread and the
/// consumer calls (submit, wait_info, signal_info) on another; add_consumer / remove_consumer may
/// run on a third (they share a mutex with the acquires). Move-only; destruction destroys the
/// imports and semaphores: first wait until the last frame was consumed (wait_consumed), or drain().
class frame_timeline {
 public:
  /// Two exportable timeline semaphores on `context`, imported into `cuda_device`.
  /// Errors: invalid_argument when the devices are not the same GPU or slots is 0; unsupported
  /// without exportable timeline semaphores (VK_KHR_external_semaphore_fd) or CUDA timeline interop.
  /// Ownership: owns the semaphores and their CUDA imports (the exported fds are closed after import).
  [[nodiscard]] static result<frame_timeline> create(const vulkan::device_context& context,
                                                     const cuda::device& cuda_device,
                                                     const frame_timeline_options& options = {});

  /// Two (non-exported) timeline semaphores for a producer on the host.
  /// Errors: invalid_argument when slots is 0; unsupported without timeline semaphores.
  [[nodiscard]] static result<frame_timeline> create_host_producer(const vulkan::device_context& context,
                                                                   const frame_timeline_options& options = {});

  /// The same protocol on semaphores another process (or API) created and exported: imports
  /// `produced` and `consumed` into `context` and, when `cuda_device` is given, into CUDA too (then
  /// cuda_acquire/cuda_release work as well). `options.slots` must be the exporter's.
  /// `consumed` may be empty: an observer that waits for frames and signals nothing (submit() is
  /// then an error, signal_info() names no semaphore).
  /// Errors: invalid_argument for an empty `produced`, slots 0, consumer_slots, or a CUDA device
  /// that is not the context's GPU; unsupported without timeline semaphore fd import; the imports' errors.
  /// Ownership: borrows both fds (each import takes its own duplicate).
  [[nodiscard]] static result<frame_timeline> import(const vulkan::device_context& context, os::borrowed_shareable_handle produced,
                                                     os::borrowed_shareable_handle consumed, const frame_timeline_options& options,
                                                     const cuda::device* cuda_device = nullptr);
  /// An empty object.
  frame_timeline() noexcept;
  frame_timeline(const frame_timeline&) = delete;
  frame_timeline& operator=(const frame_timeline&) = delete;
  /// Takes over `other`'s semaphores; `other` becomes empty.
  frame_timeline(frame_timeline&& other) noexcept;
  /// Releases the held semaphores, then takes over `other`'s.
  frame_timeline& operator=(frame_timeline&& other) noexcept;
  /// Destroys the CUDA imports, then the semaphores.
  ~frame_timeline();

  /// The ring size.
  [[nodiscard]] std::uint32_t slots() const noexcept { return slots_; }
  /// The slot frame `frame` uses.
  [[nodiscard]] std::uint32_t slot(std::uint64_t frame) const noexcept {
    return static_cast<std::uint32_t>(frame % slots_);
  }
  /// The value `produced` reaches when frame `frame` is written.
  [[nodiscard]] static constexpr std::uint64_t produced_value(std::uint64_t frame) noexcept { return frame + 1; }
  /// The value `consumed` reaches when frame `frame` has been drawn.
  [[nodiscard]] static constexpr std::uint64_t consumed_value(std::uint64_t frame) noexcept { return frame + 1; }

  // ------------------------------------------------------------------------ producer: CUDA ---
  /// Enqueues on `stream` a wait until the slot of `frame` is free (consumed >= frame - slots + 1;
  /// with consumer_slots: every current consumer's, in one driver call); nothing for the first
  /// `slots` frames or without consumers. Errors: invalid_argument without CUDA (host producer).
  [[nodiscard]] result<void> cuda_acquire(CUstream stream, std::uint64_t frame) const;
  /// Enqueues on `stream` the signal produced = produced_value(frame), after the frame's kernels.
  [[nodiscard]] result<void> cuda_release(CUstream stream, std::uint64_t frame) const;

  // ------------------------------------------------------------------------ producer: host ---
  /// Waits on the host until the slot of `frame` is free (with consumer_slots: for every current
  /// consumer; one removed meanwhile is no longer waited for). Errors: timeout.
  [[nodiscard]] result<void> host_acquire(std::uint64_t frame, std::chrono::nanoseconds timeout) const;
  /// Signals produced = produced_value(frame) from the host.
  [[nodiscard]] result<void> host_release(std::uint64_t frame) const;

  // ----------------------------------------------------------------------- consumer: Vulkan ---
  /// What frame `frame`'s Vulkan submit waits for (produced, produced_value(frame)).
  [[nodiscard]] semaphore_op wait_info(std::uint64_t frame) const noexcept;
  /// What frame `frame`'s Vulkan submit signals (consumed, consumed_value(frame)).
  [[nodiscard]] semaphore_op signal_info(std::uint64_t frame) const noexcept;
  /// Submits `command_buffers` for `frame` to `queue`, waiting for wait_info(frame) at `wait_stage`
  /// and signalling signal_info(frame) (and `fence` if given). The caller owns the queue's
  /// synchronisation. Errors: the driver's (device_lost, out_of_memory).
  [[nodiscard]] result<void> submit(VkQueue queue, std::span<const VkCommandBuffer> command_buffers,
                                    std::uint64_t frame, VkPipelineStageFlags wait_stage,
                                    VkFence fence = VK_NULL_HANDLE) const;

  // ------------------------------------------------------------- several consumers (slots) ---
  /// Adds consumer `id` (consumer_slots only): a new timeline semaphore starting at
  /// consumed_value(*frame_at_join) (0 without a frame), exportable and imported into CUDA when the
  /// producer is CUDA. Acquires from now on wait for it. The consumer signals consumed_value(m) for
  /// every frame m > frame_at_join it has drawn. For an `id` already added, raises its semaphore to
  /// consumed_value(*frame_at_join) instead (a join whose frame moved before the consumer got the
  /// semaphore; nobody else may signal it yet).
  /// Errors: invalid_argument without consumer_slots; the semaphore's creation and import errors.
  /// Ownership: the timeline owns the semaphore and its import.
  [[nodiscard]] result<void> add_consumer(std::uint64_t id, std::optional<std::uint64_t> frame_at_join);
  /// Exports consumer `id`'s semaphore as a new fd (to send to that consumer only).
  /// Errors: invalid_argument for an unknown id; unsupported for a host producer's (not exportable).
  /// Ownership: the caller owns the returned fd.
  [[nodiscard]] result<os::shareable_handle> export_consumer(std::uint64_t id) const;
  /// Consumer `id`'s semaphore (for a consumer in this process), or nullptr for an unknown or
  /// removed id. Ownership: owned by the timeline; valid until it is destroyed (after
  /// remove_consumer(id), once `produced` passed the last acquire that included it: retired_count()).
  [[nodiscard]] const vulkan::timeline_semaphore* consumer(std::uint64_t id) const;
  /// Removes consumer `id` (it left or died): later acquires do not wait for it; its semaphore is
  /// raised at once to consumed_value(max(last_frame, the last frame an acquire that included it
  /// waited for)) and retired (see the class comment). Unknown ids are ignored. A consumer in this
  /// process must have no submit pending that signals its semaphore.
  /// Errors: the host signal's (the consumer is removed all the same).
  [[nodiscard]] result<void> remove_consumer(std::uint64_t id, std::optional<std::uint64_t> last_frame);
  /// The number of current consumers.
  [[nodiscard]] std::size_t consumer_count() const;
  /// The number of retired consumer semaphores not destroyed yet.
  [[nodiscard]] std::size_t retired_count() const;
  /// Raises every retired consumer semaphore that went back (GPU work its dead process had queued)
  /// and destroys those the producer's stream passed. The producer's calls do this on their own; a
  /// thread calls it while the producer's thread may be blocked on its stream and make no timeline
  /// call (sync::frame_publisher runs one while retired semaphores exist).
  /// Errors: the semaphores' (reading, signalling).
  [[nodiscard]] result<void> tend_retired() const;

  // ---------------------------------------------------------------------------- host waits ---
  /// For a producer that stops early: makes every Vulkan submit made through submit() or
  /// wait_info() complete by signalling `produced` from the host up to the highest value any of them
  /// waits for (if it is not there yet), then waits until `consumed` reached the value of the last
  /// frame released or waited for (with consumer_slots: until every current consumer's semaphore
  /// reached the last frame released; consumers that stopped consuming make it time out). Call it after the
  /// producer's own work finished (e.g. its CUDA stream synchronised): a host signal must not
  /// overtake a pending GPU signal of `produced`. Then the timeline can be destroyed.
  /// Errors: timeout; invalid_argument for an empty timeline; the signal's errors.
  [[nodiscard]] result<void> drain(std::chrono::nanoseconds timeout) const;
  /// Waits on the host until frame `frame` was consumed (teardown, throttling; with consumer_slots:
  /// by every current consumer). Errors: timeout.
  [[nodiscard]] result<void> wait_consumed(std::uint64_t frame, std::chrono::nanoseconds timeout) const;
  /// Waits on the host until frame `frame` was produced. Errors: timeout.
  [[nodiscard]] result<void> wait_produced(std::uint64_t frame, std::chrono::nanoseconds timeout) const;

  /// Exports both semaphores as new fds (for ipc::publisher::publish_semaphore).
  /// Errors: unsupported when they were made without export (create_host_producer).
  /// Ownership: the caller owns the returned fds.
  [[nodiscard]] result<frame_timeline_fds> export_fds() const;
  /// The `produced` semaphore (Vulkan side). Ownership: owned by the frame_timeline.
  [[nodiscard]] const vulkan::timeline_semaphore& produced() const noexcept { return produced_; }
  /// The `consumed` semaphore (Vulkan side; empty with consumer_slots). Ownership: owned by the frame_timeline.
  [[nodiscard]] const vulkan::timeline_semaphore& consumed() const noexcept { return consumed_; }
  /// The CUDA import of `produced` (empty for create_host_producer). Ownership: owned by the frame_timeline.
  [[nodiscard]] const cuda::external_semaphore& cuda_produced() const noexcept { return cuda_produced_; }
  /// The CUDA import of `consumed` (empty for create_host_producer and with consumer_slots).
  /// Ownership: owned by the frame_timeline.
  [[nodiscard]] const cuda::external_semaphore& cuda_consumed() const noexcept { return cuda_consumed_; }
  /// True when the producer is CUDA.
  [[nodiscard]] bool has_cuda() const noexcept { return cuda_produced_.valid(); }
  /// True when every consumer has a semaphore of its own (options.consumer_slots).
  [[nodiscard]] bool has_consumer_slots() const noexcept { return consumer_slots_; }
  /// True when created.
  [[nodiscard]] bool valid() const noexcept { return produced_.valid(); }

 private:
  struct consumer_set;  // the consumers' semaphores, their mutex, the highest values waited for
  // A timeline without semaphores yet: the context shared, the options' slots, an empty consumer set.
  [[nodiscard]] static frame_timeline with_options(const vulkan::device_context& context, const frame_timeline_options& options);
  [[nodiscard]] result<void> wait_for_consumers(std::uint64_t value, std::chrono::nanoseconds timeout) const;
  void note_wait(std::uint64_t produced_value) const noexcept;

  vulkan::device_context context_;  // a share of the caller's: the device's functions for submit()
  vulkan::timeline_semaphore produced_;
  vulkan::timeline_semaphore consumed_;
  cuda::external_semaphore cuda_produced_;  // destroyed before the Vulkan semaphores (declared after)
  cuda::external_semaphore cuda_consumed_;
  std::unique_ptr<consumer_set> consumers_;  // destroyed first (declared last)
  std::uint32_t slots_ = 0;
  bool consumer_slots_ = false;
};

}  // namespace membridge::sync
