// membridge/sync/frame_timeline.hpp: the per-frame handoff between a producer (CUDA kernels, or the
// host) and a Vulkan consumer, with timeline semaphores and no host wait in the loop.
#pragma once

#include <membridge/core/result.hpp>
#include <membridge/cuda/device.hpp>
#include <membridge/cuda/external_semaphore.hpp>
#include <membridge/os/borrowed_fd.hpp>
#include <membridge/os/unique_fd.hpp>
#include <membridge/vulkan/device_context.hpp>
#include <membridge/vulkan/timeline_semaphore.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <span>

namespace membridge::sync {

/// Options for frame_timeline.
struct frame_timeline_options {
  std::uint32_t slots = 2;  ///< Ring size N: the producer may write frame n while frame n-1 (up to n-N+1) is drawn.
};

/// The two semaphores of a frame_timeline as fds, for another process (ipc) or API.
/// Ownership: the holder owns both fds.
struct frame_timeline_fds {
  os::unique_fd produced;  ///< The `produced` semaphore's opaque fd.
  os::unique_fd consumed;  ///< The `consumed` semaphore's opaque fd.
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
/// Thread use: the producer calls (cuda_acquire/cuda_release or host_*) may run on one thread and the
/// consumer calls (submit, wait_info, signal_info) on another. Move-only; destruction destroys the
/// imports and semaphores: first wait until the last frame was consumed (wait_consumed).
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
  /// Errors: invalid_argument for empty fds, slots 0, or a CUDA device that is not the context's GPU;
  /// unsupported without timeline semaphore fd import; the imports' errors.
  /// Ownership: borrows both fds (each import takes its own duplicate).
  [[nodiscard]] static result<frame_timeline> import(const vulkan::device_context& context, os::borrowed_fd produced,
                                                     os::borrowed_fd consumed, const frame_timeline_options& options,
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
  /// Enqueues on `stream` a wait until the slot of `frame` is free (consumed >= frame - slots + 1);
  /// nothing for the first `slots` frames. Errors: invalid_argument without CUDA (host producer).
  [[nodiscard]] result<void> cuda_acquire(CUstream stream, std::uint64_t frame) const;
  /// Enqueues on `stream` the signal produced = produced_value(frame), after the frame's kernels.
  [[nodiscard]] result<void> cuda_release(CUstream stream, std::uint64_t frame) const;

  // ------------------------------------------------------------------------ producer: host ---
  /// Waits on the host until the slot of `frame` is free. Errors: timeout.
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

  // ---------------------------------------------------------------------------- host waits ---
  /// Waits on the host until frame `frame` was consumed (teardown, throttling). Errors: timeout.
  [[nodiscard]] result<void> wait_consumed(std::uint64_t frame, std::chrono::nanoseconds timeout) const;
  /// Waits on the host until frame `frame` was produced. Errors: timeout.
  [[nodiscard]] result<void> wait_produced(std::uint64_t frame, std::chrono::nanoseconds timeout) const;

  /// Exports both semaphores as new fds (for ipc::publisher::publish_semaphore).
  /// Errors: unsupported when they were made without export (create_host_producer).
  /// Ownership: the caller owns the returned fds.
  [[nodiscard]] result<frame_timeline_fds> export_fds() const;
  /// The `produced` semaphore (Vulkan side). Ownership: owned by the frame_timeline.
  [[nodiscard]] const vulkan::timeline_semaphore& produced() const noexcept { return produced_; }
  /// The `consumed` semaphore (Vulkan side). Ownership: owned by the frame_timeline.
  [[nodiscard]] const vulkan::timeline_semaphore& consumed() const noexcept { return consumed_; }
  /// The CUDA import of `produced` (empty for create_host_producer). Ownership: owned by the frame_timeline.
  [[nodiscard]] const cuda::external_semaphore& cuda_produced() const noexcept { return cuda_produced_; }
  /// The CUDA import of `consumed` (empty for create_host_producer). Ownership: owned by the frame_timeline.
  [[nodiscard]] const cuda::external_semaphore& cuda_consumed() const noexcept { return cuda_consumed_; }
  /// True when the producer is CUDA.
  [[nodiscard]] bool has_cuda() const noexcept { return cuda_produced_.valid(); }
  /// True when created.
  [[nodiscard]] bool valid() const noexcept { return produced_.valid(); }

 private:
  std::shared_ptr<const vulkan::detail::context_state> context_;
  vulkan::timeline_semaphore produced_;
  vulkan::timeline_semaphore consumed_;
  cuda::external_semaphore cuda_produced_;  // destroyed before the Vulkan semaphores (declared after)
  cuda::external_semaphore cuda_consumed_;
  std::uint32_t slots_ = 0;
};

}  // namespace membridge::sync
