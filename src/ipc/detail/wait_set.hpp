// Private: how the publisher's thread waits for many channels at once, and how other threads wake
// it: poll() and an eventfd on Linux (posix/wait_set.cpp); WaitForMultipleObjects on the channels'
// read events and an auto-reset event on Windows (win32/wait_set.cpp). The publisher's logic
// (publisher.cpp) is the same on both; only this part differs.
#pragma once

#include <membridge/core/result.hpp>
#include <membridge/ipc/channel.hpp>

#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>

namespace membridge::ipc::detail {

/// One round of waiting: clear(), watch what matters now, wait(), then ask what is ready. The
/// wake-up (wake()) may be called from any thread at any time; everything else belongs to the one
/// thread that waits. Move-only.
class wait_set {
 public:
  /// Makes the wake-up (an eventfd / an auto-reset event).
  /// Errors: os_error when the system cannot make it.
  /// Ownership: the wait set owns the wake-up.
  [[nodiscard]] static result<wait_set> create();

  wait_set() noexcept;
  wait_set(const wait_set&) = delete;
  wait_set& operator=(const wait_set&) = delete;
  /// Takes over `other`'s wake-up and watch list.
  wait_set(wait_set&& other) noexcept;
  /// Closes this one's wake-up, then takes over `other`'s.
  wait_set& operator=(wait_set&& other) noexcept;
  /// Closes the wake-up.
  ~wait_set();

  /// Wakes the thread's current or next wait (any thread; never fails, never waits).
  void wake() const noexcept;

  /// Starts a round: watches nothing.
  void clear() noexcept;
  /// Watches `l` for a connection when `enabled` (nothing of it otherwise).
  void watch(const listener& l, bool enabled);
  /// Watches `ch` for a message or its end (`receive`) and for room to send (`send`). Returns its
  /// index for ready(). Windows: watching for a message starts a read on the channel (its next
  /// receive takes it); a pipe tells no room to send, so a round that watches for it waits at most
  /// 10 ms.
  std::size_t watch(channel& ch, bool receive, bool send);
  /// Waits until something watched is ready, the wake-up was signalled, or `until` (none: no
  /// limit), then consumes the wake-up. A failing wait is logged and retried after 10 ms.
  void wait(std::optional<std::chrono::steady_clock::time_point> until);
  /// After wait(): whether the listener has a connection to accept.
  [[nodiscard]] bool connection_ready() const noexcept;
  /// After wait(): whether channel `index` (as watch returned it) has a message or its peer went
  /// away (a receive with a timeout of 0 can tell which).
  [[nodiscard]] bool ready(std::size_t index) const noexcept;

 private:
  struct state;
  std::unique_ptr<state> state_;
};

/// Who a peer is, for the log: "pid 42, uid 1000" / "pid 42, SID S-1-5-21-...".
[[nodiscard]] std::string describe(const peer_credentials& peer);

/// True when a send with a timeout of 0 failed only because the peer is not reading fast enough
/// (a full socket buffer or pipe; Linux: also ETOOMANYREFS, too many fds in flight for this user):
/// the message stays queued and the send is tried again when there is room.
[[nodiscard]] bool is_backpressure(const error& e) noexcept;

}  // namespace membridge::ipc::detail
