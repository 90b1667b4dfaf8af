// membridge/ipc/subscriber.hpp: the other end of a publisher: receives the published buffers and
// semaphores (descriptions + fds), follows growth and frames, and notices when the publisher goes.
#pragma once

#include <membridge/core/result.hpp>
#include <membridge/ipc/channel.hpp>
#include <membridge/ipc/resource.hpp>
#include <membridge/os/shareable_handle.hpp>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace membridge::ipc {

/// Where to connect and as what.
struct subscriber_options {
  /// The publisher's name, turned into an endpoint by ipc::endpoint_for(name): on Linux the socket
  /// `$XDG_RUNTIME_DIR/membridge/NAME.sock`, on Windows the named pipe `membridge-SID-NAME` (SID: the
  /// current user's) in the local pipe namespace.
  std::string name;
  std::string path;   ///< An explicit socket path (Windows: pipe name); overrides `name`.
  subscriber_role role = subscriber_role::observer;  ///< The role asked for (consumer may be refused).
  std::string client_name;  ///< Shown to the publisher (free text, <= max_name_size bytes).
  /// How long connecting, the handshake and the initial state may take together.
  std::chrono::milliseconds timeout{5000};
  /// How long each wait for a handshake message checks without sleeping first (busy, yielding):
  /// the publisher answers within microseconds, and a thread woken from a sleep can take tens of
  /// them on a VM. 0: sleep at once. Costs up to this much CPU time per message, at connect only.
  std::chrono::microseconds handshake_spin{200};
};

/// A buffer as received: the publisher's description and one fd per chunk.
/// Ownership: the subscriber owns the fds; importers borrow them (membridge's imports duplicate).
struct received_buffer {
  buffer_description description;  ///< The current state.
  std::vector<os::shareable_handle> fds;   ///< fds[i] is chunk i's (same order as description.chunks).
};

/// A timeline semaphore as received.
/// Ownership: the subscriber owns the fd; importers borrow it.
struct received_semaphore {
  semaphore_description description;  ///< What it is.
  os::shareable_handle fd;            ///< Its opaque fd (Windows: NT handle).
};

/// Something the publisher told the subscriber (or that it went away).
struct subscriber_event {
  /// What happened.
  enum class kind : std::uint8_t {
    buffer_added = 1,     ///< A new buffer (after connect: published later than the join).
    buffer_changed = 2,   ///< A buffer grew or shrank (its new state is in buffer(name)).
    semaphore_added = 3,  ///< A new semaphore.
    frame = 4,            ///< A frame was announced (number in `frame`).
    disconnected = 5,     ///< The publisher said goodbye or went away; `reason` says which.
  };
  kind what = kind::frame;      ///< What happened.
  std::string name;             ///< The resource's name (buffer and semaphore events).
  std::uint64_t frame = 0;      ///< The frame number (frame events).
  std::uint64_t generation = 0; ///< The buffer's generation (buffer events).
  std::string reason;           ///< Why the publisher went (disconnected).
};

/// A connection to a publisher and the state it published.
///
/// connect() returns after the publisher sent its whole current state (every buffer and semaphore
/// with its fds, then the welcome with the last frame). Later changes arrive through next_event().
/// Every message is checked (wire header, payload fields, fd counts, chunk layout, generations, the
/// order of a buffer's header and its `chunks` messages, and the kind of every received fd: a
/// directory, socket, pipe, block device, memory device such as /dev/zero or an O_PATH fd is no
/// memory or semaphore handle): a malformed one closes the connection with errc::protocol_error,
/// keeping what was received before.
///
/// When the publisher goes away (goodbye, crash, kill -9) next_event() reports `disconnected` once;
/// every fd received so far stays open, so memory imported from them stays valid. Connect a new
/// subscriber to reach a publisher that came back.
///
/// Move-only; not thread-safe. Destruction says goodbye and closes the socket and received fds
/// (imports made from them stay valid: they hold their own references).
class subscriber {
 public:
  /// Connects, says hello and receives the current state.
  /// Errors: as channel::connect (os_error ENOENT / ECONNREFUSED when no publisher listens);
  /// protocol_error for a refused connection or a malformed answer; timeout.
  /// Ownership: the subscriber owns its socket and every fd it receives.
  [[nodiscard]] static result<subscriber> connect(const subscriber_options& options);

  /// An empty subscriber.
  subscriber() noexcept = default;
  subscriber(const subscriber&) = delete;
  subscriber& operator=(const subscriber&) = delete;
  /// Takes over `other`'s connection and state; `other` becomes empty.
  subscriber(subscriber&& other) noexcept = default;
  /// Closes this connection, then takes over `other`'s.
  subscriber& operator=(subscriber&& other) noexcept;
  /// Says goodbye (if connected) and closes.
  ~subscriber();

  /// Waits up to `timeout` for the next event and applies it to the state first (a buffer event's
  /// new chunks are in buffer(name) when it returns). Buffer updates that span several messages are
  /// reported once, when complete.
  /// Errors: timeout (nothing happened); protocol_error for a malformed message (the connection is
  /// closed; a `disconnected` event is not reported then); invalid_argument after disconnection.
  [[nodiscard]] result<subscriber_event> next_event(std::chrono::milliseconds timeout);

  /// The buffer named `name`, or nullptr. Ownership: owned by the subscriber; valid until the next
  /// next_event() call changes it.
  [[nodiscard]] const received_buffer* buffer(std::string_view name) const noexcept;
  /// The semaphore named `name`, or nullptr. Ownership: owned by the subscriber.
  [[nodiscard]] const received_semaphore* semaphore(std::string_view name) const noexcept;
  /// Names of every buffer received, in publication order.
  [[nodiscard]] std::vector<std::string> buffer_names() const;
  /// The last frame announced (at join or since), if any.
  [[nodiscard]] std::optional<std::uint64_t> last_frame() const noexcept { return last_frame_; }
  /// The last frame announced before this subscriber joined. A consumer must only signal frames
  /// after it (the producer counted earlier ones as consumed).
  [[nodiscard]] std::optional<std::uint64_t> frame_at_join() const noexcept { return frame_at_join_; }
  /// The role the publisher granted (consumer only if no other consumer was attached).
  [[nodiscard]] subscriber_role role() const noexcept { return role_; }
  /// The publisher's name from its welcome.
  [[nodiscard]] const std::string& publisher_name() const noexcept { return publisher_name_; }
  /// The publisher's credentials (pid, uid, gid) as the kernel recorded them.
  [[nodiscard]] const peer_credentials& publisher() const noexcept { return channel_.peer(); }
  /// True while connected.
  [[nodiscard]] bool connected() const noexcept { return channel_.valid(); }
  /// The socket, to wait on it together with other fds (readable: call next_event()).
  /// Ownership: owned by the subscriber.
  [[nodiscard]] os::borrowed_shareable_handle native() const noexcept { return channel_.native(); }
  /// Says goodbye and closes the connection; received state and fds stay.
  void disconnect() noexcept;

 private:
  struct pending_buffer {
    buffer_description description;   // chunks: the kept ones, then those received so far
    std::size_t chunk_count = 0;      // chunks it has when complete
    std::size_t kept = 0;             // chunks kept from the committed state
    std::vector<os::shareable_handle> fds;   // fds of the chunks after the kept ones, received so far
    bool is_new = false;
  };
  [[nodiscard]] result<std::optional<subscriber_event>> apply(message m);
  [[nodiscard]] result<std::optional<subscriber_event>> apply_header(message m, bool is_new);
  [[nodiscard]] result<std::optional<subscriber_event>> apply_chunks(message m);
  [[nodiscard]] result<std::optional<subscriber_event>> commit();
  [[nodiscard]] result<std::optional<subscriber_event>> apply_semaphore(message m);
  [[nodiscard]] bool name_taken(const std::string& name) const noexcept;

  channel channel_;
  std::vector<received_buffer> buffers_;
  std::vector<received_semaphore> semaphores_;
  std::optional<pending_buffer> pending_;  // the buffer whose chunks are arriving
  std::optional<std::uint64_t> last_frame_;
  std::optional<std::uint64_t> frame_at_join_;
  subscriber_role role_ = subscriber_role::observer;
  std::string publisher_name_;
};

}  // namespace membridge::ipc
