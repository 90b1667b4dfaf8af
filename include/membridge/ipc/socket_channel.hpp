// membridge/ipc/socket_channel.hpp: the Linux transport: a Unix domain socket (SOCK_SEQPACKET)
// channel that carries framed messages (ipc/wire.hpp) with fds (SCM_RIGHTS), and a listener that
// checks who connects. Declared on POSIX only (empty on Windows: see pipe_channel.hpp); include
// <membridge/ipc/channel.hpp>, which picks the platform's transport.
#pragma once

#if !defined(_WIN32)

#include <membridge/core/result.hpp>
#include <membridge/ipc/wire.hpp>
#include <membridge/os/borrowed_fd.hpp>
#include <membridge/os/unique_fd.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace membridge::ipc {

/// Who is at the other end of a connected socket, as the kernel recorded it when the connection
/// was made (SO_PEERCRED): effective uid and gid at connect() / socketpair() time.
struct peer_credentials {
  std::int32_t pid = -1;   ///< The peer's process id (in this process's pid namespace; 0 if unknown).
  std::uint32_t uid = 0;   ///< The peer's effective user id.
  std::uint32_t gid = 0;   ///< The peer's effective group id.
};

/// One connected end of a channel: sends and receives whole messages (header + payload in one
/// SOCK_SEQPACKET datagram, fds as SCM_RIGHTS).
///
/// Errors and the channel's state:
/// - A malformed message (bad header field, wrong size, fd count mismatch, truncated data or fds)
///   gives errc::protocol_error and **ends the channel** (valid() becomes false): a peer that sent
///   garbage is not trusted further. Every fd that came with it is closed.
/// - A peer that went away (EOF / POLLHUP on receive) gives errc::protocol_error with the context
///   "the peer closed", ends the channel and sets peer_closed(), so callers can tell an orderly end
///   from garbage without reading messages. A send that finds the peer gone (EPIPE / ECONNRESET)
///   gives the same error and sets peer_closed(), but what the peer sent before it closed (a
///   goodbye, say) can still be received; the receive that reaches its end ends the channel.
/// - A timeout gives errc::timeout and leaves the channel usable.
/// - send() / receive() on an ended, closed or moved-from channel give errc::invalid_argument.
/// An ended channel shuts its socket down (the peer sees EOF at once, a call waiting in another
/// thread wakes) but keeps the descriptor until close(), the destructor or a move-assignment
/// releases it, so a send and a receive running in two threads never see the descriptor closed or
/// reused under them.
/// Every socket is close-on-exec and non-blocking (waits are done with poll and the timeout).
/// Move-only. Thread-safety: one thread may send while another receives (at most one call of each
/// at a time); close(), moves and destruction need both to have returned.
class channel {
 public:
  /// An empty channel (valid() is false).
  channel() noexcept = default;

  /// Connects to a listener's socket at `path`, waiting up to `timeout` when the listener's backlog
  /// is full. Errors: invalid_argument for an empty or too long path (sun_path holds 107 bytes),
  /// os_error with the errno for a failed connect (ENOENT: no socket; ECONNREFUSED: nobody listens;
  /// EACCES: the socket file's mode does not let this user connect), timeout.
  /// The listener may still refuse this process after the connection is made (wrong uid): the
  /// first receive() then reports the peer closed.
  /// Ownership: the returned channel owns its socket.
  [[nodiscard]] static result<channel> connect(const std::string& path, std::chrono::milliseconds timeout);

  /// Two connected channels (socketpair), for tests and for handing one end to a child process.
  /// Errors: os_error (e.g. EMFILE).
  /// Ownership: each channel owns its socket.
  [[nodiscard]] static result<std::pair<channel, channel>> pair();

  /// Adopts a connected AF_UNIX SOCK_SEQPACKET socket (e.g. one inherited from a parent process).
  /// Sets close-on-exec and non-blocking and reads the peer's credentials.
  /// Errors: invalid_argument when `socket` is empty, not a socket, or not a connected AF_UNIX
  /// SOCK_SEQPACKET socket (it is closed then); os_error otherwise.
  /// Ownership: takes `socket`; on error it is closed.
  [[nodiscard]] static result<channel> from_native(os::unique_fd socket);

  channel(const channel&) = delete;
  channel& operator=(const channel&) = delete;
  /// Takes over `other`'s socket; `other` becomes empty.
  channel(channel&& other) noexcept;
  /// Closes this channel's socket (if any, as close() does), then takes over `other`'s.
  channel& operator=(channel&& other) noexcept;
  /// Closes the socket as close() does; the peer sees EOF after every message sent before.
  ~channel() { close(); }

  /// Sends `m` as one datagram, waiting up to `timeout` for room in the socket buffer.
  /// Errors: invalid_argument for an empty channel or a message ipc::validate_outgoing refuses
  /// (nothing is sent); timeout (the channel stays usable); protocol_error "the peer closed"
  /// (channel closed, peer_closed() set); os_error for other failures.
  /// Ownership: `m` keeps its fds; the peer receives new descriptors for the same open files.
  [[nodiscard]] result<void> send(const message& m, std::chrono::milliseconds timeout);

  /// As send(m, timeout) for a message given in parts, with borrowed fds (several channels can
  /// send one encoded message without copying it or duplicating its fds). A timeout of 0 never
  /// waits: a full socket buffer gives errc::timeout at once.
  /// Ownership: `fds` stay the caller's; the peer receives new descriptors for the same open files.
  [[nodiscard]] result<void> send(message_type type, std::span<const std::byte> payload,
                                  std::span<const os::borrowed_fd> fds, std::chrono::milliseconds timeout);

  /// Receives one message, waiting up to `timeout` for it.
  /// Every received fd is owned (close-on-exec, MSG_CMSG_CLOEXEC) before anything else is read;
  /// then MSG_TRUNC / MSG_CTRUNC and every header field are checked (ipc::decode_header).
  /// Errors: timeout (channel usable); protocol_error for a malformed message or a closed peer
  /// (the channel is closed, received fds are closed); invalid_argument for an empty channel;
  /// os_error for other failures.
  /// Ownership: the returned message owns its fds.
  [[nodiscard]] result<message> receive(std::chrono::milliseconds timeout);

  /// As receive(timeout), but first checks for the message without sleeping for up to `spin`
  /// (busy, yielding the CPU between checks), then sleeps as receive() does. For a reply expected
  /// within microseconds (the handshake): a thread woken from poll() on a VM can take tens of
  /// microseconds. Costs up to `spin` of CPU time per call.
  [[nodiscard]] result<message> receive(std::chrono::milliseconds timeout, std::chrono::microseconds spin);

  /// The peer's credentials as recorded when the connection was made (for pair(): this process).
  [[nodiscard]] const peer_credentials& peer() const noexcept { return peer_; }

  /// True when a socket is held and the channel has not ended (no protocol error, no end of the
  /// peer's messages received).
  [[nodiscard]] bool valid() const noexcept { return socket_.valid() && !ended_.load(std::memory_order_acquire); }

  /// True after send() / receive() noticed that the peer went away.
  [[nodiscard]] bool peer_closed() const noexcept { return peer_closed_.load(std::memory_order_acquire); }

  /// The socket (empty when the channel is closed or has ended).
  /// Ownership: still owned by the channel; do not close it.
  [[nodiscard]] os::borrowed_fd native() const noexcept { return valid() ? os::borrowed_fd(socket_) : os::borrowed_fd(); }

  /// Closes the socket now (also after the channel ended); the channel becomes empty. Not to be
  /// called while another thread sends or receives. Messages the peer sent and this side did
  /// not read are discarded first (their fds closed), so the peer still receives everything this
  /// side sent before closing, then EOF (closing with unread messages would otherwise make the
  /// kernel report ECONNRESET to the peer ahead of them).
  void close() noexcept;

 private:
  channel(os::unique_fd socket, peer_credentials peer) noexcept : socket_(std::move(socket)), peer_(peer) {}
  friend class listener;

  // Ends the channel (a protocol error, the peer's end): shuts the socket down, keeps the fd.
  void end() noexcept;

  os::unique_fd socket_;
  peer_credentials peer_;
  std::atomic<bool> ended_{false};
  std::atomic<bool> peer_closed_{false};
};

/// The socket path a listener named `name` (and given no explicit path) binds, and subscribers
/// connect to: `$XDG_RUNTIME_DIR/membridge/<name>.sock`. Creates nothing.
/// Errors: invalid_argument for a name with characters other than letters, digits, '-', '_', '.',
/// or an unset or relative XDG_RUNTIME_DIR.
[[nodiscard]] result<std::string> socket_path_for(const std::string& name);

/// Where a publisher named `name` listens, on this platform: socket_path_for(name).
[[nodiscard]] inline result<std::string> endpoint_for(const std::string& name) { return socket_path_for(name); }

/// Where and for whom a listener listens.
struct listen_options {
  /// The socket's name: the socket is `$XDG_RUNTIME_DIR/membridge/<name>.sock` (the directory is
  /// created with mode 0700 if missing; an existing one must be a directory owned by this user and
  /// not writable by group or others). Letters, digits, '-', '_' and '.' only. Ignored when `path`
  /// is set.
  std::string name;
  /// An explicit socket path (its directory must exist). Overrides `name`.
  std::string path;
  /// The uids that may connect. Empty (the default): only this process's effective uid. Not empty:
  /// exactly these uids (list your own uid too if you want it).
  std::vector<std::uint32_t> allowed_uids;
  /// Permission bits of the socket file. connect() needs write permission on it, so the default
  /// 0600 already keeps other users out at the file level; the uid check in accept() is the second
  /// line. Widen it (e.g. 0666) only together with allowed_uids.
  std::uint32_t mode = 0600;
  /// The listen() backlog.
  int backlog = 16;
};

/// A listening AF_UNIX SOCK_SEQPACKET socket bound to a path. Move-only; the destructor removes the
/// socket file it created (if it is still the same file).
class listener {
 public:
  /// An empty listener.
  listener() noexcept = default;

  /// Binds and listens. The socket file gets exactly `options.mode` (set on the socket before bind,
  /// so it is never wider, then chmod'ed and checked with stat). A socket file already at the path
  /// is removed only if nobody listens on it (connect gives ECONNREFUSED); a live one gives os_error
  /// EADDRINUSE, a non-socket file invalid_argument.
  /// Errors: invalid_argument (no path and no usable name, XDG_RUNTIME_DIR unset or not absolute,
  /// path too long, mode outside 0777); os_error for failed system calls.
  /// Ownership: the listener owns its socket and the socket file it created.
  [[nodiscard]] static result<listener> listen(const listen_options& options);

  listener(const listener&) = delete;
  listener& operator=(const listener&) = delete;
  /// Takes over `other`'s socket and socket file; `other` becomes empty.
  listener(listener&& other) noexcept;
  /// Closes/unlinks this listener's, then takes over `other`'s.
  listener& operator=(listener&& other) noexcept;
  /// Closes the socket and unlinks the socket file if it is still the one this listener bound.
  ~listener();

  /// Accepts one connection within `timeout` and checks the peer's SO_PEERCRED uid against the
  /// allowed uids. A refused peer's connection is closed at once (it sees EOF) and accept returns
  /// errc::protocol_error naming its pid and uid; the listener stays usable.
  /// Errors: timeout; protocol_error (refused peer); invalid_argument (empty listener); os_error.
  /// Ownership: the returned channel owns the accepted socket.
  [[nodiscard]] result<channel> accept(std::chrono::milliseconds timeout);

  /// The socket file's path.
  [[nodiscard]] const std::string& path() const noexcept { return path_; }
  /// True when a socket is held.
  [[nodiscard]] bool valid() const noexcept { return socket_.valid(); }
  /// The listening socket (e.g. to poll it with other fds).
  /// Ownership: still owned by the listener; do not close it.
  [[nodiscard]] os::borrowed_fd native() const noexcept { return socket_; }

 private:
  void reset() noexcept;

  os::unique_fd socket_;
  std::string path_;
  std::vector<std::uint32_t> allowed_uids_;
  std::uint64_t file_dev_ = 0;
  std::uint64_t file_ino_ = 0;
};

}  // namespace membridge::ipc

#endif  // !defined(_WIN32)
