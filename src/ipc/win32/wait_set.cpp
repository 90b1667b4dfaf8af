// Windows: the publisher thread's wait: WaitForMultipleObjects on the listener's connect event and
// the channels' read events (each watched channel has a read pending), an auto-reset event to wake it.
#include "../detail/wait_set.hpp"

#include "pipe_detail.hpp"

#include <membridge/core/log.hpp>

#include <algorithm>
#include <vector>

namespace membridge::ipc::detail {

namespace {

using clock = std::chrono::steady_clock;

/// A pipe tells no room to write: a round that waits for it looks again after this long.
constexpr DWORD send_retry_ms = 10;

bool signalled(HANDLE event) { return event != nullptr && ::WaitForSingleObject(event, 0) == WAIT_OBJECT_0; }

}  // namespace

struct wait_set::state {
  struct watched {
    HANDLE event = nullptr;  // the channel's read event (null: not watched for messages)
    bool failed = false;     // starting its read failed: a receive tells why
    bool ready = false;
  };
  os::unique_handle wake;
  HANDLE listener_event = nullptr;
  bool listener_ready = false;
  bool want_send = false;
  std::vector<watched> channels;
};

wait_set::wait_set() noexcept = default;
wait_set::wait_set(wait_set&& other) noexcept = default;
wait_set& wait_set::operator=(wait_set&& other) noexcept = default;
wait_set::~wait_set() = default;

result<wait_set> wait_set::create() {
  os::unique_handle event(::CreateEventA(nullptr, FALSE, FALSE, nullptr));  // auto-reset
  if (!event.valid()) return error::from_win32(::GetLastError(), "CreateEventA", "the publisher's wake-up event");
  wait_set out;
  out.state_ = std::make_unique<state>();
  out.state_->wake = std::move(event);
  return out;
}

void wait_set::wake() const noexcept { (void)::SetEvent(state_->wake.get()); }

void wait_set::clear() noexcept {
  state_->listener_event = nullptr;
  state_->listener_ready = false;
  state_->want_send = false;
  state_->channels.clear();
}

void wait_set::watch(const listener& l, bool enabled) { state_->listener_event = enabled ? l.native().get() : nullptr; }

std::size_t wait_set::watch(channel& ch, bool receive, bool send) {
  state::watched w;
  if (receive && ch.valid()) {
    if (arm_read(ch.handle_.get(), *ch.platform_) != 0)
      w.failed = true;
    else
      w.event = ch.platform_->read_event.get();
  }
  state_->want_send = state_->want_send || send;
  state_->channels.push_back(w);
  return state_->channels.size() - 1;
}

void wait_set::wait(std::optional<clock::time_point> until) {
  state& s = *state_;
  std::vector<HANDLE> handles{s.wake.get()};
  if (s.listener_event != nullptr) handles.push_back(s.listener_event);
  bool any_failed = false;
  bool truncated = false;
  for (const state::watched& w : s.channels) {
    any_failed = any_failed || w.failed;
    if (w.event == nullptr) continue;
    if (handles.size() < MAXIMUM_WAIT_OBJECTS)
      handles.push_back(w.event);
    else
      truncated = true;  // past 64 handles: the others are looked at every round
  }
  DWORD ms = INFINITE;
  if (until) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(*until - clock::now()).count() + 1;
    ms = static_cast<DWORD>(std::clamp<long long>(left, 0, 60'000));
  }
  if (s.want_send || truncated) ms = std::min(ms, send_retry_ms);
  if (any_failed) ms = 0;
  if (::WaitForMultipleObjects(static_cast<DWORD>(handles.size()), handles.data(), FALSE, ms) == WAIT_FAILED) {
    log(log_level::error, "ipc::publisher: WaitForMultipleObjects failed, error " + std::to_string(::GetLastError()));
    ::Sleep(send_retry_ms);
  }
  (void)::WaitForSingleObject(s.wake.get(), 0);  // consumes the wake-up (auto-reset)
  s.listener_ready = signalled(s.listener_event);
  for (state::watched& w : s.channels) w.ready = w.failed || signalled(w.event);
}

bool wait_set::connection_ready() const noexcept { return state_->listener_ready; }

bool wait_set::ready(std::size_t index) const noexcept { return state_->channels[index].ready; }

std::string describe(const peer_credentials& peer) {
  return "pid " + std::to_string(peer.pid) + ", SID " + peer.user_sid;
}

bool is_backpressure(const error& e) noexcept { return e.code() == errc::timeout; }

}  // namespace membridge::ipc::detail
