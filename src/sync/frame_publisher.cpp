#include <membridge/core/log.hpp>
#include <membridge/os/start_thread.hpp>
#include <membridge/sync/frame_publisher.hpp>

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>

namespace membridge::sync {

namespace {

// Keeps retired consumers' semaphores up while the producer's stream may still wait on them, also
// when the producer's thread is blocked on its stream and makes no timeline call (a dead consumer's
// queued GPU signal can set its semaphore back after the removal raised it; measured on the H100 in
// the 20-kill gpu test). It works only while retired semaphores exist: woken by a removal, it calls
// frame_timeline::tend_retired every millisecond until the stream passed every wait that used them
// (the semaphores are then destroyed and retired_count() is 0). Bounded by the producer's progress,
// not by a clock.
class retired_tender {
 public:
  explicit retired_tender(const frame_timeline& timeline) : timeline_(&timeline) {}
  retired_tender(const retired_tender&) = delete;
  retired_tender& operator=(const retired_tender&) = delete;
  ~retired_tender() {
    {
      const std::lock_guard guard(lock_);
      stopping_ = true;
    }
    wake_.notify_all();
    if (thread_.joinable()) thread_.join();
  }
  result<void> start() {
    MEMBRIDGE_TRY_ASSIGN(thread_, os::start_thread("the retired consumers' tender", [this] { run(); }));
    return ok();
  }
  /// A consumer was removed: its semaphore is retired.
  void wake() noexcept {
    {
      const std::lock_guard guard(lock_);
      pending_ = true;
    }
    wake_.notify_all();
  }

 private:
  void run() noexcept {
    std::unique_lock guard(lock_);
    for (;;) {
      wake_.wait(guard, [this] { return stopping_ || pending_; });
      if (stopping_) return;
      pending_ = false;
      while (!stopping_ && timeline_->retired_count() > 0) {
        guard.unlock();
        if (auto tended = timeline_->tend_retired(); !tended)
          log(log_level::error, std::move(tended).error().add_context("tending retired consumers").message());
        guard.lock();
        wake_.wait_for(guard, std::chrono::milliseconds(1), [this] { return stopping_; });
      }
    }
  }

  const frame_timeline* timeline_;
  std::mutex lock_;
  std::condition_variable wake_;
  bool pending_ = false;
  bool stopping_ = false;
  std::thread thread_;
};

// The publisher's own handling of subscriber events (on its thread), before the user's on_event: a
// consumer that left (goodbye, death, or refused after its semaphore was made) leaves the wait set.
void on_subscriber_event(frame_timeline& timeline, retired_tender& tender, const ipc::publisher_event& event) noexcept {
  if (event.role != ipc::subscriber_role::consumer || event.what != ipc::publisher_event::kind::left) return;
  if (auto removed = timeline.remove_consumer(event.subscriber, event.last_frame); !removed)
    log(log_level::error, std::move(removed).error()
                              .add_context("removing consumer " + std::to_string(event.subscriber) + " that left")
                              .message());
  tender.wake();
}

}  // namespace

struct frame_publisher::state {
  frame_timeline timeline;
  std::unique_ptr<retired_tender> tender;  // stopped before the timeline goes
  ipc::publisher publisher;  // declared last: stopped (its thread joined) before the tender and the timeline go
};

frame_publisher::frame_publisher() noexcept = default;
frame_publisher::frame_publisher(std::unique_ptr<state> s) noexcept : state_(std::move(s)) {}
frame_publisher::frame_publisher(frame_publisher&& other) noexcept = default;
frame_publisher& frame_publisher::operator=(frame_publisher&& other) noexcept = default;
frame_publisher::~frame_publisher() = default;

result<frame_publisher> frame_publisher::create(const vulkan::device_context& context, const cuda::device& cuda_device,
                                                frame_publisher_options options) {
  auto s = std::make_unique<state>();
  frame_timeline_options timeline_options = options.timeline;
  timeline_options.consumer_slots = true;
  MEMBRIDGE_TRY_ASSIGN(s->timeline, frame_timeline::create(context, cuda_device, timeline_options));
  MEMBRIDGE_TRY_ASSIGN(auto fds, s->timeline.export_fds());

  const std::uint64_t slots = s->timeline.slots();
  const device_uuid uuid = cuda_device.uuid();
  const auto describe = [&](const std::string& name) {
    return ipc::semaphore_description{.name = name, .device = uuid, .handles = ipc::native_handle_kind, .parameter = slots};
  };
  frame_timeline* timeline = &s->timeline;  // `s` is on the heap: the address stays put
  s->tender = std::make_unique<retired_tender>(s->timeline);
  MEMBRIDGE_TRY(s->tender->start());
  retired_tender* tender = s->tender.get();
  ipc::publisher_options ipc_options = std::move(options.ipc);
  ipc_options.max_consumers = options.max_consumers;
  ipc_options.on_event = [timeline, tender, user = std::move(ipc_options.on_event)](const ipc::publisher_event& e) {
    on_subscriber_event(*timeline, *tender, e);
    if (user) user(e);
  };
  // Each consumer's own `consumed`, starting at the frame it joins at (the publisher's thread; a
  // second call, when a frame came meanwhile, only raises it: no new semaphore).
  ipc_options.on_consumer_join = [timeline, consumed = describe(options.timeline_name + ".consumed")](
                                     const ipc::consumer_join& join) -> result<ipc::consumer_resources> {
    MEMBRIDGE_TRY(timeline->add_consumer(join.subscriber, join.last_frame));
    auto fd = timeline->export_consumer(join.subscriber);
    if (!fd) {
      (void)timeline->remove_consumer(join.subscriber, join.last_frame);
      return std::move(fd).error();
    }
    ipc::consumer_resources out;
    out.semaphores.push_back(ipc::consumer_semaphore{consumed, std::move(*fd)});
    return out;
  };
  MEMBRIDGE_TRY_ASSIGN(s->publisher, ipc::publisher::start(ipc_options));

  const std::string name = options.timeline_name + ".produced";
  MEMBRIDGE_TRY(s->publisher.publish_semaphore(describe(name), std::move(fds.produced))
                    .with_context("publishing semaphore '" + name + "'"));
  return frame_publisher(std::move(s));
}

result<void> frame_publisher::publish_frame(std::uint64_t frame) {
  if (!valid()) return error(errc::invalid_argument, "frame_publisher::publish_frame", "the frame publisher is empty");
  return state_->publisher.announce_frame(frame);
}

const frame_timeline& frame_publisher::timeline() const noexcept { return state_->timeline; }

ipc::publisher& frame_publisher::publisher() noexcept { return state_->publisher; }

}  // namespace membridge::sync
