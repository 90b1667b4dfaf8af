#include <membridge/core/log.hpp>
#include <membridge/sync/frame_publisher.hpp>

#include <mutex>
#include <optional>
#include <string>
#include <utility>

namespace membridge::sync {

namespace {

// What the producer's thread and the publisher's thread (on_event) share. The mutex serialises the
// host signals of `consumed` (a timeline value must only go up) and guards `last_frame`; it is never
// held while calling into the ipc::publisher, so whatever locks the publisher holds while it calls
// on_event, the two threads cannot deadlock.
struct pacing {
  std::mutex mutex;
  std::optional<std::uint64_t> last_frame;             // the last frame publish_frame() announced
  const vulkan::timeline_semaphore* consumed = nullptr;  // the timeline's; outlives the publisher's thread
};

// Raises `consumed` to `value` from the host unless it is there already. Call with the mutex held.
result<void> signal_at_least(const vulkan::timeline_semaphore& consumed, std::uint64_t value) {
  MEMBRIDGE_TRY_ASSIGN(const std::uint64_t current, consumed.value());
  if (current >= value) return ok();
  return consumed.signal(value);
}

// The publisher's own handling of subscriber events (on its thread), before the user's on_event.
void on_subscriber_event(pacing& p, const ipc::publisher_event& event) noexcept {
  if (event.role != ipc::subscriber_role::consumer) return;
  std::optional<std::uint64_t> frame;
  {
    const std::lock_guard lock(p.mutex);
    if (event.what == ipc::publisher_event::kind::joined) {
      // The consumer only signals frames after the one it joined at: those up to it count as consumed
      // now (publish_frame normally did that already; this closes the window where it announced a
      // frame and then saw the new consumer).
      frame = event.last_frame;
    } else if (event.what == ipc::publisher_event::kind::left) {
      // A producer waiting on the GPU for the consumer that went away goes on.
      frame = p.last_frame;
    }
    if (!frame || p.consumed == nullptr) return;
    if (auto signalled = signal_at_least(*p.consumed, frame_timeline::consumed_value(*frame)); !signalled)
      log(log_level::error, std::move(signalled).error()
                                .add_context("signalling 'consumed' for frame " + std::to_string(*frame) +
                                             " after a consumer " +
                                             (event.what == ipc::publisher_event::kind::joined ? "joined" : "left"))
                                .message());
  }
}

}  // namespace

struct frame_publisher::state {
  frame_timeline timeline;
  std::shared_ptr<pacing> shared = std::make_shared<pacing>();
  ipc::publisher publisher;  // declared last: stopped (its thread joined) before the timeline goes
};

frame_publisher::frame_publisher() noexcept = default;
frame_publisher::frame_publisher(std::unique_ptr<state> s) noexcept : state_(std::move(s)) {}
frame_publisher::frame_publisher(frame_publisher&& other) noexcept = default;
frame_publisher& frame_publisher::operator=(frame_publisher&& other) noexcept = default;
frame_publisher::~frame_publisher() = default;

result<frame_publisher> frame_publisher::create(const vulkan::device_context& context, const cuda::device& cuda_device,
                                                frame_publisher_options options) {
  auto s = std::make_unique<state>();
  MEMBRIDGE_TRY_ASSIGN(s->timeline, frame_timeline::create(context, cuda_device, options.timeline));
  MEMBRIDGE_TRY_ASSIGN(auto fds, s->timeline.export_fds());
  s->shared->consumed = &s->timeline.consumed();  // `s` is on the heap: the address stays put

  ipc::publisher_options ipc_options = std::move(options.ipc);
  ipc_options.on_event = [shared = s->shared, user = std::move(ipc_options.on_event)](const ipc::publisher_event& e) {
    on_subscriber_event(*shared, e);
    if (user) user(e);
  };
  MEMBRIDGE_TRY_ASSIGN(s->publisher, ipc::publisher::start(ipc_options));

  const std::uint64_t slots = s->timeline.slots();
  const auto publish = [&](const std::string& suffix, os::unique_fd fd) {
    const std::string name = options.timeline_name + suffix;
    return s->publisher
        .publish_semaphore(ipc::semaphore_description{.name = name,
                                                      .device = cuda_device.uuid(),
                                                      .handles = ipc::handle_kind::opaque_fd,
                                                      .parameter = slots},
                           std::move(fd))
        .with_context("publishing semaphore '" + name + "'");
  };
  MEMBRIDGE_TRY(publish(".produced", std::move(fds.produced)));
  MEMBRIDGE_TRY(publish(".consumed", std::move(fds.consumed)));
  return frame_publisher(std::move(s));
}

result<void> frame_publisher::publish_frame(std::uint64_t frame) {
  if (!valid()) return error(errc::invalid_argument, "frame_publisher::publish_frame", "the frame publisher is empty");
  state& s = *state_;
  MEMBRIDGE_TRY(s.publisher.announce_frame(frame));
  {
    const std::lock_guard lock(s.shared->mutex);
    s.shared->last_frame = frame;
  }
  // Recorded before asking, so a consumer that leaves after this answer finds `frame` in
  // last_frame and signals it on leaving; one that joined after the announcement gets it signalled
  // on joining (its frame_at_join is `frame`).
  if (s.publisher.has_consumer()) return ok();
  const std::lock_guard lock(s.shared->mutex);
  return signal_at_least(s.timeline.consumed(), frame_timeline::consumed_value(frame))
      .with_context("counting frame " + std::to_string(frame) + " as consumed (no consumer attached)");
}

const frame_timeline& frame_publisher::timeline() const noexcept { return state_->timeline; }

ipc::publisher& frame_publisher::publisher() noexcept { return state_->publisher; }

}  // namespace membridge::sync
