// Private: the state of an ipc::publisher, shared by publisher.cpp (its thread, the producer calls)
// and publisher_handshake.cpp (accepting connections, the handshake and a joiner's state).
#pragma once

#include <membridge/ipc/publisher.hpp>

#include "payload.hpp"
#include "wait_set.hpp"

#include <membridge/core/log.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace membridge::ipc::detail {

using clock = std::chrono::steady_clock;

/// Frames are not queued to a subscriber that has this many messages waiting (it misses them).
inline constexpr std::size_t frame_backlog = 256;
/// A subscriber with this many messages waiting is dropped at once, whatever send_timeout says.
inline constexpr std::size_t max_queue = 1U << 16U;
/// Connections waiting for their hello; past this the oldest is refused.
inline constexpr std::size_t max_pending_handshakes = 256;
/// How long accepting pauses after an accept ran out of fds (EMFILE, ENFILE), handles or memory.
inline constexpr auto accept_pause = std::chrono::milliseconds(100);
/// Refusals after the first are summed up in one log line per interval.
inline constexpr auto refusal_log_interval = std::chrono::seconds(5);
/// Messages a drain takes from a queue per lock.
inline constexpr std::size_t drain_batch = 32;

/// A message to queue (type, payload, fds shared by every subscriber it goes to).
inline outgoing_ptr make_outgoing(message_type type, std::vector<std::byte> payload, std::vector<shared_fd> fds = {}) {
  return std::make_shared<const outgoing>(outgoing{type, std::move(payload), std::move(fds)});
}

/// "subscriber 3 (pid 42, "viewer")" for the log.
inline std::string who(std::uint64_t id, const peer_credentials& peer, const std::string& client_name) {
  return "subscriber " + std::to_string(id) + " (pid " + std::to_string(peer.pid) + ", \"" + printable(client_name) +
         "\")";
}

}  // namespace membridge::ipc::detail

namespace membridge::ipc {

struct publisher::impl {
  using clock = detail::clock;
  using outgoing_ptr = detail::outgoing_ptr;
  using shared_fd = detail::shared_fd;
  struct buffer_entry {
    buffer_description description;
    std::vector<shared_fd> fds;
    std::vector<outgoing_ptr> state;  // its messages for a joiner (built on demand; empty: stale)
  };
  struct semaphore_entry {
    semaphore_description description;
    outgoing_ptr state;
  };
  // A subscriber. The producer only queues messages (under `mutex`); the publisher's thread alone
  // reads and writes its socket / pipe, so no producer call ever waits for a subscriber.
  struct subscriber_entry {
    std::uint64_t id = 0;
    subscriber_role role = subscriber_role::observer;
    std::string client_name;
    peer_credentials peer;
    channel ch;                                   // the thread's only
    std::optional<clock::time_point> stalled;     // the thread's only: since when nothing could be sent
    std::deque<outgoing_ptr> queue;               // guarded by mutex
    std::string doomed;                           // guarded by mutex: non-empty: drop it for this reason
  };
  using subscriber_ptr = std::shared_ptr<subscriber_entry>;
  struct handshake {
    channel ch;
    clock::time_point deadline;
  };

  publisher_options options;
  listener listen;
  detail::wait_set waits;  // the thread's wait; waits.wake() from any thread
  std::thread thread;
  std::atomic<bool> stopping{false};

  mutable std::mutex mutex;  // guards everything below up to the thread's own state
  std::vector<buffer_entry> buffers;
  std::vector<semaphore_entry> semaphores;
  std::vector<subscriber_ptr> subscribers;
  std::optional<std::uint64_t> last_frame;
  std::uint64_t next_id = 1;
  std::vector<publisher_event> events;  // delivered to on_event by the thread, outside the lock

  // The thread's own.
  std::deque<handshake> pending_handshakes;  // connections that have not said hello
  std::optional<clock::time_point> accept_paused_until;
  std::size_t accept_failures = 0;           // in the current episode of failing accepts
  std::optional<clock::time_point> refusal_window_end;
  std::size_t refusals_unlogged = 0;
  std::string last_refusal;

  void run() noexcept;
  void notify() const noexcept { waits.wake(); }
  // Queues `m` to every subscriber (lock held); frames skip subscribers that are far behind.
  void broadcast(const outgoing_ptr& m) {
    for (const subscriber_ptr& s : subscribers) enqueue(*s, m);
  }
  void broadcast(const std::vector<outgoing_ptr>& ms) {
    for (const subscriber_ptr& s : subscribers)
      for (const outgoing_ptr& m : ms) enqueue(*s, m);
  }
  void enqueue(subscriber_entry& s, const outgoing_ptr& m) {
    if (!s.doomed.empty()) return;
    if (m->type == message_type::frame && s.queue.size() >= detail::frame_backlog) return;  // it misses this frame
    if (s.queue.size() >= detail::max_queue) {
      s.doomed = "its queue reached " + std::to_string(detail::max_queue) + " messages";
      return;
    }
    s.queue.push_back(m);
  }
  publisher_event event_for(publisher_event::kind what, const subscriber_entry& s, std::string reason) const {
    publisher_event e;
    e.what = what;
    e.subscriber = s.id;
    e.role = s.role;
    e.peer = s.peer;
    e.client_name = s.client_name;
    e.reason = std::move(reason);
    e.last_frame = last_frame;
    return e;
  }
  void drop(const subscriber_ptr& s, std::string reason);
  void refuse(const peer_credentials& peer, std::string reason, std::string client_name = {});
  void accept_one();
  void finish_handshake(handshake& h);
  void read_subscriber(const subscriber_ptr& s);
  void drain(const subscriber_ptr& s);
  void flush_and_say_goodbye() noexcept;
  void deliver_events();
  // The state queued to a joiner (lock held): every buffer and semaphore, `own` (a consumer's own
  // resources), then the welcome.
  [[nodiscard]] std::vector<outgoing_ptr> state_messages(subscriber_role granted, const std::vector<outgoing_ptr>& own);
  // Subscribers holding the consumer role (lock held).
  [[nodiscard]] std::size_t consumers_locked() const;
  // Calls on_consumer_join and encodes what it returns (one resource message per semaphore).
  [[nodiscard]] result<std::vector<outgoing_ptr>> consumer_messages(const consumer_join& join) const;
  // True when `name` is a published buffer's or semaphore's (lock held).
  [[nodiscard]] bool published_locked(const std::string& name) const;
  // Refuses a joiner after its hello: tells it why (goodbye) and closes it. `had_resources`: the
  // consumer callback made resources for it, so a `left` event (consumer role) reports it.
  void refuse_joiner(subscriber_entry& s, const std::string& reason, bool had_resources);
};

}  // namespace membridge::ipc
