// membridge/sync/cuda_vulkan_buffer.hpp: a CUDA growable buffer together with its Vulkan view, kept in
// step by a worker thread it owns ("CUDA sim -> Vulkan draw" in a handful of calls).
#pragma once

#include <membridge/core/result.hpp>
#include <membridge/cuda/device.hpp>
#include <membridge/cuda/growable_buffer.hpp>
#include <membridge/sync/follow_plan.hpp>
#include <membridge/vulkan/chunked_buffer.hpp>
#include <membridge/vulkan/device_context.hpp>

#include <cuda.h>

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>

namespace membridge::sync {

/// Options for cuda_vulkan_buffer::create().
struct cuda_vulkan_buffer_options {
  cuda::growable_buffer_options buffer;  ///< The CUDA buffer (max_size required).
  vulkan::chunked_buffer_info view{};    ///< Vulkan's view; reserved_size 0 means buffer.max_size.
  follow_options follow{};               ///< Headroom the worker keeps mapped and imported past size().
};

/// A cuda::growable_buffer and its Vulkan view (sync::mirror_in_vulkan), with a worker thread that
/// follows every resize (sync::follow_step, one bounded step at a time) off the caller's threads.
///
/// create() checks once that the CUDA device and the Vulkan device are the same GPU (UUID).
///
/// Thread safety: every const member and resize() may be called from any thread at the same time
/// (not the move operations or the destructor, which need the object to themselves). One mutex,
/// owned by the object, guards the buffer and the view; the worker holds it for one follow step at a
/// time (one chunk's import + bind, or one chunk's mapping), so with_view() waits at most that long.
/// The CUDA address never changes; the VkBuffer does not change in sparse mode (several segments
/// otherwise: read them inside with_view()).
///
/// Move-only; the worker and the shared state move with the object. Destruction stops and joins the
/// worker, then destroys the view and the buffer: the GPU (CUDA and Vulkan) must be done with them.
class cuda_vulkan_buffer {
 public:
  /// Checks the GPU, makes the buffer and its view, and starts the worker.
  /// Errors: invalid_argument when `cuda_device` and `context` are different GPUs (the message names
  /// both UUIDs) or for bad options; growable_buffer::create's and mirror_in_vulkan's errors; os_error
  /// when the worker thread cannot start.
  /// Ownership: the object owns the buffer, the view and the worker; it borrows `context`'s state
  /// (shared, see device_context::share) and `cuda_device`'s (the buffer keeps it).
  [[nodiscard]] static result<cuda_vulkan_buffer> create(const cuda::device& cuda_device,
                                                         const vulkan::device_context& context,
                                                         const cuda_vulkan_buffer_options& options);

  /// An empty object.
  cuda_vulkan_buffer() noexcept;
  cuda_vulkan_buffer(const cuda_vulkan_buffer&) = delete;
  cuda_vulkan_buffer& operator=(const cuda_vulkan_buffer&) = delete;
  /// Takes over `other`'s buffer, view and worker; `other` becomes empty.
  cuda_vulkan_buffer(cuda_vulkan_buffer&&) noexcept;
  /// Stops this object's worker (see the destructor), then takes over `other`'s.
  cuda_vulkan_buffer& operator=(cuda_vulkan_buffer&&) noexcept;
  /// Stops and joins the worker, then frees the view and the buffer.
  ~cuda_vulkan_buffer();

  /// True when the object holds a buffer.
  [[nodiscard]] bool valid() const noexcept { return state_ != nullptr; }

  /// Grows or shrinks the CUDA buffer to `new_size` bytes (growable_buffer::resize) and wakes the
  /// worker, which brings the view in step. A shrink needs both APIs to be done with the dropped range.
  /// Errors: invalid_argument for an empty object; growable_buffer::resize's (the buffer is then as
  /// it was).
  [[nodiscard]] result<void> resize(std::size_t new_size);

  /// Waits until the worker has brought the view in step with the last resize (and mapped the
  /// headroom). Errors: timeout; the worker's error since the last resize (the worker tries again
  /// on the next resize); invalid_argument for an empty object.
  [[nodiscard]] result<void> wait_followed(std::chrono::nanoseconds timeout) const;

  /// The CUDA device address of byte 0, fixed for the object's life (0 when empty).
  /// Ownership: owned by the object.
  [[nodiscard]] CUdeviceptr address() const noexcept;
  /// The CUDA buffer's size in bytes (what the last successful resize asked for).
  [[nodiscard]] std::size_t size() const;

  /// Calls `fn(view, cuda_size)` with the mutex held, so the view cannot change during the call:
  /// record the draw or update descriptors there. Draw min(view.size(), the size the frame was
  /// written with). Does nothing for an empty object.
  /// Ownership: the view (and its VkBuffers) stay the object's; do not keep references past the call
  /// unless no resize can drop them.
  void with_view(const std::function<void(const vulkan::chunked_buffer& view, std::size_t cuda_size)>& fn) const;

 private:
  struct state;
  void stop() noexcept;
  std::unique_ptr<state> state_;
};

}  // namespace membridge::sync
