// membridge/ipc/publisher.hpp: shares named buffers (chunk fds) and timeline semaphores with other
// processes, announces growth and frames, and keeps going when subscribers come, go or misbehave.
#pragma once

#include <membridge/core/result.hpp>
#include <membridge/ipc/channel.hpp>
#include <membridge/ipc/resource.hpp>
#include <membridge/os/shareable_handle.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace membridge::ipc {

/// Something that happened to a publisher's subscribers (reported on the publisher's own thread).
struct publisher_event {
  /// What happened.
  enum class kind : std::uint8_t {
    joined = 1,   ///< A subscriber said hello; the current state and the welcome are queued to it.
    left = 2,     ///< A subscriber said goodbye, went away (crash, kill -9) or was dropped (also one
                  ///< that never read its current state, or a consumer refused after
                  ///< on_consumer_join made its resources: they will not be used).
    refused = 3,  ///< A connection was refused (wrong uid, bad or missing hello, too many waiting,
                  ///< on_consumer_join failed).
  };
  kind what = kind::joined;        ///< What happened.
  std::uint64_t subscriber = 0;    ///< The publisher's id for the subscriber (0 for refused ones).
  subscriber_role role = subscriber_role::observer;  ///< The role it was granted.
  peer_credentials peer;           ///< Who it was (pid, uid, gid).
  std::string client_name;         ///< The name it gave in its hello (may be empty; any bytes: the
                                   ///< publisher's own log escapes them, escape them before printing).
  std::string reason;              ///< Why it left or was refused (empty for joined).
  std::optional<std::uint64_t> last_frame;  ///< The last announced frame when it happened.
};

/// A resource made for one consumer when it joins (publisher_options::on_consumer_join).
/// Ownership: the holder owns the fd; the publisher sends it to that consumer only.
struct consumer_semaphore {
  semaphore_description description;  ///< Its name (unique among the published resources) and kind.
  os::shareable_handle fd;            ///< Its opaque fd (Windows: NT handle).
};

/// The resources made for one joining consumer.
/// Ownership: owns every fd (the publisher closes them once queued to the consumer's socket).
struct consumer_resources {
  std::vector<consumer_semaphore> semaphores;  ///< Sent to that consumer only, before its welcome.
};

/// What publisher_options::on_consumer_join is told about a joiner granted the consumer role.
struct consumer_join {
  std::uint64_t subscriber = 0;             ///< The publisher's id for it (as in publisher_event).
  std::optional<std::uint64_t> last_frame;  ///< The last announced frame: the joiner consumes frames after it.
  /// False for the first call (outside the publisher's lock). True for the second call, made with the
  /// publisher's lock held when a frame was announced during the first: last_frame is then the final
  /// one, and the returned resources replace the first call's.
  bool again = false;
};

/// How a publisher listens and treats its subscribers.
struct publisher_options {
  listen_options listen;   ///< Where to listen and who may connect (same user by default, mode 0600).
  std::string publisher_name;  ///< Shown to subscribers (free text, <= max_name_size bytes).
  /// How long a new connection may take to say hello before it is dropped.
  std::chrono::milliseconds handshake_timeout{2000};
  /// How long a subscriber may read nothing while messages wait for it before it is dropped (its
  /// socket buffer full, its queue not draining). No producer call waits for it meanwhile.
  std::chrono::milliseconds send_timeout{1000};
  /// Called on the publisher's thread for every publisher_event. It must not call back into the
  /// publisher. Optional.
  std::function<void(const publisher_event&)> on_event;
  /// How many subscribers may hold the consumer role at once; a joiner past the limit is granted
  /// observer. 0 grants no one the consumer role.
  std::size_t max_consumers = 1;
  /// Called on the publisher's thread for every joiner granted the consumer role, before its state
  /// is queued: the returned resources are queued to that joiner only (after the shared state,
  /// before its welcome) and never kept for later joiners. The first call is made outside the
  /// publisher's lock (it may take milliseconds, e.g. to make a semaphore). If a frame was announced
  /// meanwhile, it is called once more with `again` set and the final last_frame, with the lock held:
  /// that call must be quick (no waiting) and its resources replace the first call's. It must not
  /// call back into the publisher. An error refuses the joiner (a `refused` event, and the joiner's
  /// connect fails with the callback's message). Optional: without it consumers get no resources
  /// of their own.
  std::function<result<consumer_resources>(const consumer_join&)> on_consumer_join;
};

/// Publishes resources to any number of subscriber processes over a listener (ipc/channel.hpp).
///
/// A thread owned by the publisher accepts connections, checks the peer (listener rules), reads the
/// subscriber's hello, queues it every current resource with its fds (a consumer also the resources
/// made for it by on_consumer_join) and then a welcome with the last frame, and watches every subscriber socket: a subscriber that closes, crashes or sends
/// anything malformed is dropped at once (its socket and nothing else is closed) and an event
/// reports it.
///
/// The producer never waits for a subscriber: the producer's calls (publish_*, update_buffer,
/// announce_frame) encode their message once and queue it to every subscriber under a lock that no
/// socket operation holds; the publisher's thread alone writes the sockets, without waiting
/// (non-blocking sends, poll for room; on Windows: named pipes, the thread waits on each pipe's
/// pending read and an event, and retries a full pipe every 10 ms). A subscriber that reads nothing for send_timeout while
/// messages wait for it (one that stopped reading, or a joiner that never reads its current state)
/// is dropped and logged once; the producer, the other subscribers and new connections never
/// notice. A subscriber with 256 messages waiting misses frame announcements (the timeline
/// semaphores still order its work); one with 65536 waiting is dropped at once.
///
/// Hostile connections are bounded: at most 256 connections wait for their hello (the oldest is
/// refused past that), each at most handshake_timeout; the first refusal is logged, later ones are
/// summed up in one line per 5 s. An accept that fails for want of fds or memory (EMFILE, ENFILE)
/// pauses accepting for 100 ms (logged once per episode) instead of spinning.
///
/// At most options.max_consumers subscribers hold the consumer role (subscriber_role::consumer) at
/// once; one more asking for it is granted observer. Each consumer may get resources of its own
/// (options.on_consumer_join). Subscribers joining late get the current state, never a history.
///
/// Thread-safe: producer calls may come from any thread (they are serialised).
/// Move-only; destruction sends goodbye to every subscriber, stops the thread and closes everything
/// (subscribers keep the fds they received, and with them the memory).
class publisher {
 public:
  /// Starts listening and the publisher's thread.
  /// Errors: as listener::listen; invalid_argument for a publisher_name longer than max_name_size;
  /// os_error when the thread's wake-up fd cannot be made.
  /// Ownership: the publisher owns its socket, socket file and thread.
  [[nodiscard]] static result<publisher> start(const publisher_options& options);

  /// An empty publisher.
  publisher() noexcept;
  publisher(const publisher&) = delete;
  publisher& operator=(const publisher&) = delete;
  /// Takes over `other`'s socket and thread; `other` becomes empty.
  publisher(publisher&& other) noexcept;
  /// Stops this publisher, then takes over `other`'s.
  publisher& operator=(publisher&& other) noexcept;
  /// stop().
  ~publisher();

  /// Publishes a new buffer: its description and one fd per chunk, in chunk order. Sent to every
  /// current subscriber now and to every later one on join.
  /// Errors: invalid_argument for an invalid description (ipc::check), a name already published, a
  /// number of fds other than the chunk count, or an empty fd; nothing is published then.
  /// Ownership: takes the fds; the publisher keeps them (and so the memory) until it is destroyed or
  /// the buffer shrinks past them.
  [[nodiscard]] result<void> publish_buffer(const buffer_description& description, std::vector<os::shareable_handle> chunk_fds);
  /// Announces that a published buffer grew or shrank. `description` is its new state (same name,
  /// generation larger than before, the chunks it kept unchanged); `new_chunk_fds` are the fds of the
  /// chunks past the ones it had (none for a shrink or a size change within the chunks).
  /// Errors: invalid_argument for an unknown name, a description that changes kept chunks, does not
  /// bump the generation or does not match the number of new fds; nothing changes then.
  /// Ownership: takes the new fds; fds of chunks dropped by a shrink are closed.
  [[nodiscard]] result<void> update_buffer(const buffer_description& description, std::vector<os::shareable_handle> new_chunk_fds);
  /// Publishes a timeline semaphore.
  /// Errors: invalid_argument for a bad or already published name or an empty fd.
  /// Ownership: takes `fd`; every subscriber receives its own descriptor for the same semaphore.
  [[nodiscard]] result<void> publish_semaphore(const semaphore_description& description, os::shareable_handle fd);
  /// Announces that frame `frame` was produced (the producer's timeline value for it is enqueued).
  /// Frames must increase. A subscriber with 256 messages waiting misses this announcement.
  /// Errors: invalid_argument when `frame` is not larger than the last one.
  [[nodiscard]] result<void> announce_frame(std::uint64_t frame);

  /// The buffer published under `name`, if any (a copy of its current description).
  [[nodiscard]] std::optional<buffer_description> find_buffer(const std::string& name) const;
  /// The number of subscribers that said hello and are still connected (joined, not yet left).
  [[nodiscard]] std::size_t subscriber_count() const;
  /// True while a subscriber holds the consumer role.
  [[nodiscard]] bool has_consumer() const;
  /// The number of subscribers that hold the consumer role.
  [[nodiscard]] std::size_t consumer_count() const;
  /// The last announced frame, if any.
  [[nodiscard]] std::optional<std::uint64_t> last_frame() const;
  /// The socket file's path / the pipe's name on Windows (what subscribers connect to).
  [[nodiscard]] const std::string& path() const noexcept;
  /// True when started and not stopped.
  [[nodiscard]] bool valid() const noexcept { return impl_ != nullptr; }
  /// Sends what is queued and goodbye to every subscriber (waiting at most min(send_timeout,
  /// 250 ms) for all of them together), stops the thread, closes every socket and fd, removes the
  /// socket file. The publisher becomes empty.
  void stop() noexcept;

 private:
  struct impl;
  explicit publisher(std::unique_ptr<impl> state) noexcept;
  std::unique_ptr<impl> impl_;
};

}  // namespace membridge::ipc
