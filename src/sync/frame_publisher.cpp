#include <membridge/core/log.hpp>
#include <membridge/os/start_thread.hpp>
#include <membridge/sync/frame_publisher.hpp>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <stop_token>
#include <thread>
#include <string>
#include <utility>

namespace membridge::sync {

namespace {

using clock = std::chrono::steady_clock;

// How long, after a consumer left, `consumed` is watched and raised again if it went back (below).
constexpr auto guard_time = std::chrono::seconds(2);
constexpr auto guard_period = std::chrono::milliseconds(2);

// What the producer's thread, the publisher's thread (on_event) and the guard thread share. The
// mutex serialises the host signals of `consumed` (a timeline value must only go up) and guards the
// fields; it is never held while calling into the ipc::publisher, so whatever locks the publisher
// holds while it calls on_event, the threads cannot deadlock.
//
// The guard: when a consumer dies, GPU work its process queued before (wait for frame m, then signal
// `consumed` for m) can still run while the driver tears the process down, after the publisher has
// raised `consumed` past m, and a signal of a lower value sets the semaphore back (the producer
// stalled once on an H100 with `consumed` raised to the last frame at the drop). So for guard_time
// after a consumer left, until another one joins, a thread raises `consumed` to the last announced
// frame again whenever it finds it lower, and logs when it went back.
struct pacing {
  std::mutex mutex;
  std::optional<std::uint64_t> last_frame;             // the last frame publish_frame() announced
  std::uint64_t raised = 0;                            // the highest value the host signalled
  const vulkan::timeline_semaphore* consumed = nullptr;  // the timeline's; outlives this object's thread
  clock::time_point guard_until{};                     // watch `consumed` until then
  std::condition_variable_any guard_wake;
  std::jthread guard;  // last: stopped and joined first, while the rest is alive

  result<void> start_guard() {
    MEMBRIDGE_TRY_ASSIGN(guard, os::start_thread<std::jthread>("the frame publisher's guard thread",
                                                               [this](const std::stop_token& stop) { run_guard(stop); }));
    return ok();
  }
  void run_guard(const std::stop_token& stop) noexcept;
};

// Raises `consumed` to `value` from the host unless it is there already. Call with the mutex held.
result<void> signal_at_least(pacing& p, std::uint64_t value) {
  MEMBRIDGE_TRY_ASSIGN(const std::uint64_t current, p.consumed->value());
  if (current >= value) return ok();
  if (current < p.raised)
    log(log_level::warning, "frame_publisher: 'consumed' went back from " + std::to_string(p.raised) + " to " +
                                std::to_string(current) + " (GPU work of a consumer that left); raising it to " +
                                std::to_string(value));
  MEMBRIDGE_TRY(p.consumed->signal(value));
  p.raised = std::max(p.raised, value);
  return ok();
}

void pacing::run_guard(const std::stop_token& stop) noexcept {
  std::unique_lock lock(mutex);
  while (!stop.stop_requested()) {
    if (clock::now() >= guard_until) {
      guard_wake.wait(lock, stop, [this] { return clock::now() < guard_until; });
      continue;
    }
    if (last_frame && consumed != nullptr) {
      if (auto raised_again = signal_at_least(*this, frame_timeline::consumed_value(*last_frame)); !raised_again)
        log(log_level::error, std::move(raised_again).error().add_context("keeping 'consumed' up after a consumer left").message());
    }
    guard_wake.wait_for(lock, stop, guard_period, [] { return false; });
  }
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
      // From now on the new consumer paces the producer: its signals must not be overtaken.
      p.guard_until = clock::now();
    } else if (event.what == ipc::publisher_event::kind::left) {
      // A producer waiting on the GPU for the consumer that went away goes on; the guard keeps it so.
      frame = p.last_frame;
      p.guard_until = clock::now() + guard_time;
      p.guard_wake.notify_all();
    }
    if (!frame || p.consumed == nullptr) return;
    if (auto signalled = signal_at_least(p, frame_timeline::consumed_value(*frame)); !signalled)
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
  MEMBRIDGE_TRY(s->shared->start_guard());

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
  return signal_at_least(*s.shared, frame_timeline::consumed_value(frame))
      .with_context("counting frame " + std::to_string(frame) + " as consumed (no consumer attached)");
}

const frame_timeline& frame_publisher::timeline() const noexcept { return state_->timeline; }

ipc::publisher& frame_publisher::publisher() noexcept { return state_->publisher; }

}  // namespace membridge::sync
