// samples/03_ipc_viewer/attachment.hpp: one connection of the viewer to a producer: the subscriber, the
// Vulkan imports of the published particle buffer and frame timeline, which frame to draw next, and the
// buffer's growth followed on a worker thread.
#pragma once

#include <membridge/core/result.hpp>
#include <membridge/ipc/subscriber.hpp>
#include <membridge/sync/frame_timeline.hpp>
#include <membridge/vulkan/chunked_buffer.hpp>
#include <membridge/vulkan/device_context.hpp>

#include <vulkan/vulkan_core.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace particles::ipc_viewer {

using clock_type = std::chrono::steady_clock;

/// What to draw for one producer frame: `count` particles at byte `offset` of `buffer`.
struct draw_target {
  std::uint64_t frame = 0;             ///< The producer's frame number.
  std::uint32_t count = 0;             ///< Particles.
  VkBuffer buffer = VK_NULL_HANDLE;    ///< The imported buffer (sparse: the whole view). Owned by the attachment.
  VkDeviceSize offset = 0;             ///< Byte offset of the frame's first particle in `buffer`.
};

/// How long attaching took.
struct attach_times {
  double connect_ms = 0.0;          ///< ipc::subscriber::connect: connection, handshake and the whole state.
  double resources_ms = 0.0;        ///< Waiting for the buffer and semaphores when they came after the state (0 normally).
  double vulkan_import_ms = 0.0;    ///< sync::import_into_vulkan of the particle buffer.
  double timeline_import_ms = 0.0;  ///< frame_timeline::import of the two semaphores.
};

/// One growth the viewer followed (reported when its chunks are bound).
struct growth_report {
  std::uint64_t count = 0;       ///< Particles per frame after it.
  std::uint64_t generation = 0;  ///< The buffer's generation now bound.
  std::size_t bytes = 0;         ///< Bytes now bound in Vulkan.
  std::size_t chunks = 0;        ///< Chunks now imported.
  double import_ms = 0.0;        ///< sync::follow_growth on the worker thread.
  double announced_ms = 0.0;     ///< From the buffer_changed event to the new range bound (swapped in).
};

/// Runs sync::follow_growth(view, snapshot) on a thread of its own (a Vulkan import takes ~10 ms per
/// GiB: not on the render thread). The render thread must not touch the view until wait() returned,
/// and submits nothing meanwhile (see attachment::next_frame), so the sparse binds never share a queue
/// with a submit or present in flight on the host, whichever queue the context's sparse queue is.
class growth_worker {
 public:
  growth_worker() = default;
  growth_worker(const growth_worker&) = delete;
  growth_worker& operator=(const growth_worker&) = delete;
  /// Joins the thread.
  ~growth_worker();

  /// Starts bringing `view` in step with a copy of `buffer` (its fds duplicated, so later subscriber
  /// events cannot change what the thread reads).
  /// Errors: os_error / out_of_memory duplicating fds; os_error when the thread cannot start.
  [[nodiscard]] membridge::result<void> start(membridge::vulkan::chunked_buffer& view,
                                              const membridge::ipc::received_buffer& buffer);
  /// True between start() and wait().
  [[nodiscard]] bool busy() const noexcept { return thread_.joinable(); }
  /// True when the thread has finished (wait() then returns at once).
  [[nodiscard]] bool finished() const noexcept { return done_.load(); }

  /// What the thread did.
  struct outcome {
    std::optional<membridge::result<bool>> changed;  ///< follow_growth's result (empty: nothing ran).
    double import_ms = 0.0;                          ///< How long it took.
    std::uint64_t generation = 0;                    ///< The generation it brought the view to.
  };
  /// Joins the thread and returns its outcome.
  outcome wait();

 private:
  std::thread thread_;
  std::atomic<bool> done_{false};
  outcome outcome_;
};

/// A connection to a producer (subscriber role consumer or observer) and what the viewer made of it.
///
/// Which layout a frame has: the buffer description the subscriber holds when the frame's event is
/// handled (see particle_layout.hpp). The viewer draws the newest announced frame after
/// frame_at_join() whose particles are bound in Vulkan, never the same frame twice.
class attachment {
 public:
  /// Connects (one attempt) as `role` with `timeout` for the connection, handshake and state.
  /// Errors: as ipc::subscriber::connect (os_error ENOENT / ECONNREFUSED: no producer listens).
  [[nodiscard]] static membridge::result<std::unique_ptr<attachment>> connect(
      const std::string& name, membridge::ipc::subscriber_role role, std::chrono::milliseconds timeout);

  attachment(const attachment&) = delete;
  attachment& operator=(const attachment&) = delete;
  /// Joins the growth worker, then releases the imports and says goodbye. The GPU must be done with them.
  ~attachment();

  /// Waits until the producer published the particle buffer and both frame semaphores (they are in the
  /// initial state unless the producer is still starting). False when it disconnected first.
  /// Errors: timeout at `deadline`.
  [[nodiscard]] membridge::result<bool> wait_for_resources(clock_type::time_point deadline);

  /// Checks the buffer's format and GPU and imports it and the timeline into `context`.
  /// Errors: unsupported for a buffer that is not membridge.particles.v1 or semaphores with different
  /// slot counts; invalid_argument when the buffer lives on another GPU than `context`; import errors.
  [[nodiscard]] membridge::result<void> import(const membridge::vulkan::device_context& context);

  /// Handles the events that arrived, waiting up to `wait` for the first one. A lost connection
  /// (goodbye, crash, malformed message) sets disconnected().
  [[nodiscard]] membridge::result<void> pump(std::chrono::milliseconds wait);

  /// Swaps in a finished growth import (returning its report) and starts the next one when the
  /// published buffer is ahead of the view.
  /// Errors: a failed import (the view keeps what it had).
  [[nodiscard]] membridge::result<std::optional<growth_report>> update_growth();
  /// Waits for a growth import in flight and drops its result (the connection is going away).
  void abandon_growth() { (void)worker_.wait(); }
  /// True while a growth import runs (nothing may be submitted then).
  [[nodiscard]] bool growth_busy() const noexcept { return worker_.busy(); }

  /// The frame to draw now, if any: the newest announced one after the join and the last drawn frame,
  /// if its particles are bound and no growth import runs (frames announced after a growth need its
  /// chunks anyway: the producer publishes a growth only when every earlier frame was consumed). Errors: unsupported when (per-chunk view, no sparse binding) its
  /// particles span two VkBuffers; invalid_argument for a count the renderer cannot take.
  [[nodiscard]] membridge::result<std::optional<draw_target>> next_frame() const;
  /// Records that `frame` was submitted (with the timeline's wait, and signal when consumer).
  void drew(std::uint64_t frame);

  /// The imported timeline (valid after import()).
  [[nodiscard]] const membridge::sync::frame_timeline& timeline() const noexcept { return timeline_; }
  /// True when the publisher granted the consumer role.
  [[nodiscard]] bool consumer() const noexcept;
  /// True once the connection is gone.
  [[nodiscard]] bool disconnected() const noexcept { return disconnected_; }
  /// Why it went (the publisher's goodbye reason or the error).
  [[nodiscard]] const std::string& disconnect_reason() const noexcept { return disconnect_reason_; }
  /// How long attaching took.
  [[nodiscard]] const attach_times& times() const noexcept { return times_; }
  /// The last frame submitted, if any.
  [[nodiscard]] std::optional<std::uint64_t> last_drawn() const noexcept { return last_drawn_; }
  /// Frames submitted.
  [[nodiscard]] std::uint64_t drawn() const noexcept { return drawn_; }
  /// Producer frames between the first and last drawn ones that were not drawn (the viewer draws the newest).
  [[nodiscard]] std::uint64_t skipped() const noexcept;
  /// The particle buffer's description as received (nullptr before wait_for_resources() succeeded).
  [[nodiscard]] const membridge::ipc::buffer_description* description() const noexcept {
    const auto* b = buffer();
    return b != nullptr ? &b->description : nullptr;
  }
  /// The frame ring's slots (the semaphores' parameter).
  [[nodiscard]] std::uint32_t slots() const noexcept { return slots_; }
  /// Particles per frame in the buffer as imported (for brightness and the attach line).
  [[nodiscard]] std::uint64_t imported_count() const noexcept { return imported_count_; }
  /// One line on what was attached: `attached to 'particles' (pid 4242, "membridge_ipc_producer") as consumer ...`.
  [[nodiscard]] std::string describe(const std::string& name) const;

 private:
  attachment() = default;
  void handle(const membridge::ipc::subscriber_event& e);
  [[nodiscard]] const membridge::ipc::received_buffer* buffer() const noexcept;
  [[nodiscard]] std::optional<std::uint64_t> current_count() const noexcept;
  void snapshot_view();

  membridge::ipc::subscriber subscriber_;
  clock_type::time_point connect_start_{};
  attach_times times_;
  std::uint32_t slots_ = 0;
  membridge::vulkan::chunked_buffer view_;
  membridge::sync::frame_timeline timeline_;
  growth_worker worker_;  // declared after view_: joined before the view goes
  std::vector<membridge::vulkan::buffer_segment> segments_;  // the view as the render thread sees it
  std::size_t bound_bytes_ = 0;
  std::uint64_t view_generation_ = 0;
  std::uint64_t imported_count_ = 0;
  std::optional<clock_type::time_point> growth_announced_;  // the first buffer_changed not bound yet
  struct announced {
    std::uint64_t frame = 0;
    std::uint64_t count = 0;
  };
  std::optional<announced> latest_;
  std::optional<std::uint64_t> join_frame_;
  std::optional<std::uint64_t> first_drawn_;
  std::optional<std::uint64_t> last_drawn_;
  std::uint64_t drawn_ = 0;
  bool disconnected_ = false;
  std::string disconnect_reason_;
};

}  // namespace particles::ipc_viewer
