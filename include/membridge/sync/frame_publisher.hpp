// membridge/sync/frame_publisher.hpp: a CUDA producer's frame timeline shared with viewer processes
// through an ipc::publisher, paced by its consumers (each with a `consumed` semaphore of its own) and
// never stalled by a dead one.
#pragma once

#include <membridge/core/result.hpp>
#include <membridge/cuda/device.hpp>
#include <membridge/ipc/publisher.hpp>
#include <membridge/sync/frame_timeline.hpp>
#include <membridge/vulkan/device_context.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace membridge::sync {

/// How to create a frame_publisher.
struct frame_publisher_options {
  ipc::publisher_options ipc;       ///< Where to listen (on_event is called after the publisher's own handling).
  frame_timeline_options timeline;  ///< The ring of slots.
  /// `produced` is published as `<timeline_name>.produced`; each consumer receives its own
  /// semaphore as `<timeline_name>.consumed`; both with `parameter` = the number of slots.
  std::string timeline_name = "frames";
  /// How many consumers may pace the producer at once (replaces ipc.max_consumers); a subscriber
  /// asking for the consumer role past this is granted observer.
  std::size_t max_consumers = 8;
};

/// A frame_timeline (CUDA producer, consumer_slots) whose semaphores are published to other processes.
///
/// Pacing: every subscriber granted ipc::subscriber_role::consumer receives a `consumed` semaphore
/// of its own (made when it joins, starting at the frame it joined at: frame_at_join()) and signals
/// it after it has drawn a frame; the producer's cuda_acquire waits for all current consumers, so it
/// never overwrites a slot one of them is still reading. Observers receive no `consumed` and never
/// hold the producer up; with no consumer the producer runs free. When a consumer leaves or dies,
/// the publisher's thread removes it from the wait set (frame_timeline::remove_consumer): later
/// acquires no longer wait for it and nothing its process queued can reach the producer: while its
/// semaphore is retired, a thread of the frame_publisher raises it again whenever GPU work of the dead
/// process set it back (frame_timeline::tend_retired), until the producer's stream passed every wait
/// that used it, even while the producer's thread is blocked on its stream.
/// A consumer must only consume frames after ipc::subscriber::frame_at_join().
///
/// Thread use: as frame_timeline; publish_frame() from the producer's thread.
/// Move-only. Destruction stops the publisher first (subscribers see goodbye), then destroys the
/// timeline (wait for the last frame, or frame_timeline::drain(), first).
class frame_publisher {
 public:
  /// Creates the timeline on `context` (imported into `cuda_device`), starts the publisher and
  /// publishes `produced` (each consumer gets its `consumed` when it joins).
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

  /// Announces frame `frame` (after frame_timeline::cuda_release was enqueued for it).
  /// Errors: as ipc::publisher::announce_frame.
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
