// membridge/sync/frame_publisher.hpp: a CUDA producer's frame timeline shared with viewer processes
// through an ipc::publisher, paced by at most one consumer and never stalled by a dead one.
#pragma once

#include <membridge/core/result.hpp>
#include <membridge/cuda/device.hpp>
#include <membridge/ipc/publisher.hpp>
#include <membridge/sync/frame_timeline.hpp>
#include <membridge/vulkan/device_context.hpp>

#include <cstdint>
#include <memory>
#include <string>

namespace membridge::sync {

/// How to create a frame_publisher.
struct frame_publisher_options {
  ipc::publisher_options ipc;       ///< Where to listen (on_event is called after the publisher's own handling).
  frame_timeline_options timeline;  ///< The ring of slots.
  /// The semaphores are published as `<timeline_name>.produced` and `<timeline_name>.consumed`,
  /// each with `parameter` = the number of slots.
  std::string timeline_name = "frames";
};

/// A frame_timeline (CUDA producer) whose semaphores are published to other processes.
///
/// Pacing: a subscriber that joins as ipc::subscriber_role::consumer signals `consumed` after it has
/// drawn a frame, so the producer never overwrites a slot it is still reading (frame_timeline's
/// rule). While no consumer is attached, publish_frame() counts each frame as consumed at once
/// (host signal), so the producer runs free; when the consumer leaves or dies, the publisher's
/// thread signals `consumed` up to the last announced frame, so a producer waiting on the GPU for
/// the dead consumer goes on. GPU work the dead consumer queued can still signal a lower value while
/// its process is torn down, so for 2 s after a consumer leaves (until another one joins) a thread
/// of this object raises `consumed` again whenever it finds it below the last announced frame (and
/// logs a warning).
/// A consumer must only consume frames after ipc::subscriber::frame_at_join().
///
/// Thread use: as frame_timeline; publish_frame() from the producer's thread.
/// Move-only. Destruction stops the publisher first (subscribers see goodbye), then destroys the timeline.
class frame_publisher {
 public:
  /// Creates the timeline on `context` (imported into `cuda_device`), starts the publisher and
  /// publishes both semaphores.
  /// Errors: as frame_timeline::create, ipc::publisher::start and publish_semaphore.
  /// Ownership: owns the timeline and the publisher.
  [[nodiscard]] static result<frame_publisher> create(const vulkan::device_context& context,
                                                      const cuda::device& cuda_device,
                                                      frame_publisher_options options);

  /// An empty object.
  frame_publisher() noexcept;
  frame_publisher(const frame_publisher&) = delete;
  frame_publisher& operator=(const frame_publisher&) = delete;
  /// Takes over `other`'s publisher and timeline; `other` becomes empty.
  frame_publisher(frame_publisher&& other) noexcept;
  /// Destroys the held ones, then takes over `other`'s.
  frame_publisher& operator=(frame_publisher&& other) noexcept;
  /// Stops the publisher, then destroys the timeline (wait for the last frame first).
  ~frame_publisher();

  /// Announces frame `frame` (after frame_timeline::cuda_release was enqueued for it). With no
  /// consumer attached, also signals `consumed` for it from the host.
  /// Errors: as ipc::publisher::announce_frame and timeline_semaphore::signal.
  [[nodiscard]] result<void> publish_frame(std::uint64_t frame);

  /// The timeline (cuda_acquire / cuda_release for the producer). Ownership: owned by this object.
  [[nodiscard]] const frame_timeline& timeline() const noexcept;
  /// The publisher (publish buffers on it). Ownership: owned by this object.
  [[nodiscard]] ipc::publisher& publisher() noexcept;
  /// True when created.
  [[nodiscard]] bool valid() const noexcept { return state_ != nullptr; }

 private:
  struct state;
  explicit frame_publisher(std::unique_ptr<state> s) noexcept;
  std::unique_ptr<state> state_;
};

}  // namespace membridge::sync
