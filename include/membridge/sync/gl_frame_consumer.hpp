// membridge/sync/gl_frame_consumer.hpp: OpenGL as the consumer of a frame_timeline.
#pragma once

#include <membridge/core/result.hpp>
#include <membridge/gl/context.hpp>
#include <membridge/gl/semaphore.hpp>
#include <membridge/os/shareable_handle.hpp>
#include <membridge/sync/frame_timeline.hpp>

#include <cstdint>

namespace membridge::sync {

/// The consumer side of a frame_timeline's protocol in GL: the timeline's `produced` and `consumed`
/// semaphores imported into GL as timeline semaphores (GL_NV_timeline_semaphore), so GL waits for
/// produced_value(n) on the GPU before drawing frame n and signals consumed_value(n) after it. With a
/// CUDA producer that is one CUDA->GL->CUDA round trip per drawn frame, however many kernels run
/// between acquire and release; nothing waits on the host.
///
/// Per frame n (context current): acquire(n, objects) ... draw from slot n % slots ... release(n, objects).
/// Move-only; destruction deletes the GL semaphores (context current); wait until the last frame was
/// consumed first (frame_timeline::wait_consumed).
class gl_frame_consumer {
 public:
  /// Imports `timeline`'s semaphores (export_fds) into `context`.
  /// Errors: unsupported without GL_EXT_semaphore_fd or GL_NV_timeline_semaphore, or when the timeline
  /// cannot export; the import's GL errors.
  /// Ownership: the fds are exported, imported by GL (duplicated) and closed; nothing is borrowed.
  [[nodiscard]] static result<gl_frame_consumer> import(const gl::context& context, const frame_timeline& timeline);
  /// The same from the two semaphores' fds (e.g. received from another process), with `slots` slots.
  /// Ownership: borrows both fds (duplicated).
  [[nodiscard]] static result<gl_frame_consumer> import(const gl::context& context, os::borrowed_shareable_handle produced,
                                                        os::borrowed_shareable_handle consumed, std::uint32_t slots);

  /// An empty object.
  gl_frame_consumer() noexcept = default;
  gl_frame_consumer(const gl_frame_consumer&) = delete;
  gl_frame_consumer& operator=(const gl_frame_consumer&) = delete;
  /// Takes over `other`'s semaphores; `other` becomes empty.
  gl_frame_consumer(gl_frame_consumer&&) noexcept = default;
  /// Takes over `other`'s semaphores; `other` becomes empty.
  gl_frame_consumer& operator=(gl_frame_consumer&&) noexcept = default;
  /// Deletes the GL semaphores.
  ~gl_frame_consumer() = default;

  /// GL work submitted after this waits until frame `frame` was produced. `objects` are the buffers
  /// and textures the producer wrote, with the layouts textures are in.
  [[nodiscard]] result<void> acquire(std::uint64_t frame, const gl::semaphore_objects& objects = {}) const;
  /// Signals consumed_value(frame) after the GL work submitted so far, and flushes.
  [[nodiscard]] result<void> release(std::uint64_t frame, const gl::semaphore_objects& objects = {}) const;

  /// The slot frame `frame` uses.
  [[nodiscard]] std::uint32_t slot(std::uint64_t frame) const noexcept {
    return static_cast<std::uint32_t>(frame % slots_);
  }
  /// Ring size.
  [[nodiscard]] std::uint32_t slots() const noexcept { return slots_; }
  /// True when imported.
  [[nodiscard]] bool valid() const noexcept { return produced_.valid(); }

 private:
  gl::semaphore produced_;
  gl::semaphore consumed_;
  std::uint32_t slots_ = 0;
};

}  // namespace membridge::sync
