// membridge/ipc/channel.hpp: the ipc transport, one set of names on every platform
// (ipc::channel, ipc::listener, ipc::listen_options, ipc::peer_credentials, ipc::endpoint_for):
// a Unix domain socket (SOCK_SEQPACKET, fds as SCM_RIGHTS, SO_PEERCRED) on Linux; a named pipe
// (message mode, overlapped I/O, handles moved by DuplicateHandle, the client's token user SID
// checked) on Windows. Both carry the same framed messages (ipc/wire.hpp), checked by the same
// validator; docs/protocol.md describes both. Only what the platforms name differently (who a peer
// is, where a listener listens) is declared per platform below; the implementations live in
// src/ipc/posix/ and src/ipc/win32/.
//
// Windows: handles travel by DuplicateHandle: the listener's side (the publisher) opens the
// verified client process and duplicates each handle into it; the message carries the values
// (docs/protocol.md, "Windows transport"). So only the listener's side sends handles; a client's
// receive owns every handle value of a message before it checks anything, and closes them all when
// it refuses it.
#pragma once

#include <membridge/core/result.hpp>
#include <membridge/ipc/wire.hpp>
#include <membridge/os/shareable_handle.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace membridge::ipc {

namespace detail {
struct channel_platform;   // per-platform state of a channel (src/ipc/<platform>/)
struct listener_platform;  // per-platform state of a listener
class wait_set;            // the publisher thread's wait on many channels (src/ipc/detail/wait_set.hpp)
}  // namespace detail

#if defined(_WIN32)

/// Who is at the other end of a connected pipe, as the system reports it: the process id
/// (GetNamedPipeClientProcessId / GetNamedPipeServerProcessId) and that process's token user SID.
struct peer_credentials {
  std::int32_t pid = -1;  ///< The peer's process id.
  std::string user_sid;   ///< Its token's user SID as text ("S-1-5-21-...").
};

/// The user SID of this process's token as text ("S-1-5-21-..."). Errors: the Win32 error of
/// OpenProcessToken / GetTokenInformation / ConvertSidToStringSid.
[[nodiscard]] result<std::string> current_user_sid();

/// The pipe a listener named `name` creates and subscribers connect to:
/// `\\.\pipe\membridge-<this user's SID>-<name>` (one namespace per user). Creates nothing.
/// Errors: invalid_argument for a name with characters other than letters, digits, '-', '_', '.';
/// the Win32 error of reading this process's SID.
[[nodiscard]] result<std::string> pipe_name_for(const std::string& name);

/// Where a publisher named `name` listens, on this platform: pipe_name_for(name).
[[nodiscard]] inline result<std::string> endpoint_for(const std::string& name) { return pipe_name_for(name); }

/// Where and for whom a listener listens.
struct listen_options {
  /// The pipe's name: the pipe is pipe_name_for(name). Letters, digits, '-', '_' and '.' only.
  std::string name;
  /// The user SIDs (text) whose processes may connect. Empty (the default): only this process's
  /// user. The pipe's DACL grants this user alone in any case, so another user's process is
  /// refused by the system when it opens the pipe; this check is the second line (and what a test
  /// can exercise, giving a SID that is not the caller's: Wine runs every process as one user).
  std::vector<std::string> allowed_sids;
  /// Bytes of each pipe instance's in and out buffers (a hint to the system).
  std::uint32_t buffer_size = 64 * 1024;
};

#else

/// Who is at the other end of a connected socket, as the kernel recorded it when the connection
/// was made (SO_PEERCRED): effective uid and gid at connect() / socketpair() time.
struct peer_credentials {
  std::int32_t pid = -1;   ///< The peer's process id (in this process's pid namespace; 0 if unknown).
  std::uint32_t uid = 0;   ///< The peer's effective user id.
  std::uint32_t gid = 0;   ///< The peer's effective group id.
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

#endif

/// One connected end of a channel: sends and receives whole messages (Linux: header + payload in
/// one SOCK_SEQPACKET datagram, fds as SCM_RIGHTS; Windows: header + payload + handle table in one
/// pipe message).
///
/// Errors and the channel's state:
/// - A malformed message (bad header field, wrong size, fd / handle count mismatch, truncated data
///   or fds, a handle table that cannot be trusted) gives errc::protocol_error and **ends the
///   channel** (valid() becomes false): a peer that sent garbage is not trusted further. Every fd or
///   handle that came with it is closed.
/// - A peer that went away (Linux: EOF / POLLHUP; Windows: ERROR_BROKEN_PIPE, ERROR_NO_DATA,
///   ERROR_PIPE_NOT_CONNECTED) gives errc::protocol_error with the context "the peer closed", ends
///   the channel on receive and sets peer_closed(), so callers can tell an orderly end from garbage
///   without reading messages. A send that finds the peer gone gives the same error and sets
///   peer_closed(), but what the peer sent before it closed (a goodbye, say) can still be received.
/// - A timeout gives errc::timeout and leaves the channel usable (Windows: a receive that timed out
///   leaves its read pending, and the next receive takes what it read; a send that timed out is
///   cancelled and never arrives).
/// - send() / receive() on an ended, closed or moved-from channel give errc::invalid_argument.
/// An ended channel wakes a call waiting in another thread (Linux: shuts its socket down, the peer
/// sees EOF at once) but keeps its descriptor / handle until close(), the destructor or a
/// move-assignment releases it, so a send and a receive running in two threads never see it closed
/// or reused under them.
/// Linux: every socket is close-on-exec and non-blocking (waits are done with poll and the timeout).
/// Windows: only a listener's channel sends handles (invalid_argument on a client's), duplicated
/// into the verified client process; when the send fails they are closed there again, so a failed
/// send leaks nothing on either side. A listener's channel refuses any received message that claims
/// handles (their values would name the client's handles, not its own) without touching them.
/// Move-only. Thread-safety: one thread may send while another receives (at most one call of each
/// at a time); close(), moves and destruction need both to have returned.
class channel {
 public:
  /// An empty channel (valid() is false).
  channel() noexcept;

  /// Connects to a listener at `endpoint` (endpoint_for(name) gives a publisher's).
  /// Linux: a socket path; waits up to `timeout` when the listener's backlog is full. Errors:
  /// invalid_argument for an empty or too long path (sun_path holds 107 bytes), os_error with the
  /// errno for a failed connect (ENOENT: no socket; ECONNREFUSED: nobody listens; EACCES: the
  /// socket file's mode does not let this user connect), timeout. The listener may still refuse
  /// this process after the connection is made (wrong uid): the first receive() then reports the
  /// peer closed.
  /// Windows: a pipe name; waits up to `timeout` while every instance is busy, then checks the
  /// server: its process's token user SID must be this process's (a pipe squatted by another user
  /// is refused). Errors: invalid_argument for an empty name; os_error (Win32) for a failed
  /// CreateFile (ERROR_FILE_NOT_FOUND: nobody listens; ERROR_ACCESS_DENIED: the pipe's DACL refuses
  /// this user); protocol_error for a server of another user; timeout.
  /// Ownership: the returned channel owns its socket / pipe handle.
  [[nodiscard]] static result<channel> connect(const std::string& endpoint, std::chrono::milliseconds timeout);

#if !defined(_WIN32)
  /// Two connected channels (socketpair), for tests and for handing one end to a child process.
  /// Linux only. Errors: os_error (e.g. EMFILE).
  /// Ownership: each channel owns its socket.
  [[nodiscard]] static result<std::pair<channel, channel>> pair();

  /// Adopts a connected AF_UNIX SOCK_SEQPACKET socket (e.g. one inherited from a parent process).
  /// Linux only. Sets close-on-exec and non-blocking and reads the peer's credentials.
  /// Errors: invalid_argument when `socket` is empty, not a socket, or not a connected AF_UNIX
  /// SOCK_SEQPACKET socket (it is closed then); os_error otherwise.
  /// Ownership: takes `socket`; on error it is closed.
  [[nodiscard]] static result<channel> from_native(os::unique_fd socket);
#endif

  channel(const channel&) = delete;
  channel& operator=(const channel&) = delete;
  /// Takes over `other`'s socket / pipe; `other` becomes empty.
  channel(channel&& other) noexcept;
  /// Closes this channel (as close() does), then takes over `other`'s socket / pipe.
  channel& operator=(channel&& other) noexcept;
  /// Closes the channel as close() does.
  ~channel();

  /// Sends `m` as one message, waiting up to `timeout` for the transport to take it.
  /// Errors: invalid_argument for an empty channel or a message ipc::validate_outgoing refuses
  /// (nothing is sent; Windows: also handles on a client's channel); timeout (the channel stays
  /// usable); protocol_error "the peer closed" (peer_closed() set); os_error for other failures.
  /// Ownership: `m` keeps its fds / handles; the peer receives new ones for the same objects.
  [[nodiscard]] result<void> send(const message& m, std::chrono::milliseconds timeout);

  /// As send(m, timeout) for a message given in parts, with borrowed fds / handles (several
  /// channels can send one encoded message without copying it or duplicating its fds). A timeout of
  /// 0 never waits: a full socket buffer or pipe gives errc::timeout at once.
  /// Ownership: `fds` stay the caller's; the peer receives new ones for the same objects.
  [[nodiscard]] result<void> send(message_type type, std::span<const std::byte> payload,
                                  std::span<const os::borrowed_shareable_handle> fds,
                                  std::chrono::milliseconds timeout);

  /// Receives one message, waiting up to `timeout` for it.
  /// Every received fd / handle is owned (Linux: close-on-exec, MSG_CMSG_CLOEXEC; Windows: every
  /// distinct value of the handle table, ipc::split_handle_table) before anything else is read;
  /// then truncation and every header field are checked (ipc::decode_header).
  /// Errors: timeout (channel usable); protocol_error for a malformed message or a closed peer
  /// (the channel ends, received fds are closed); invalid_argument for an empty channel; os_error
  /// for other failures.
  /// Ownership: the returned message owns its fds / handles.
  [[nodiscard]] result<message> receive(std::chrono::milliseconds timeout);

  /// As receive(timeout), but first checks for the message without sleeping for up to `spin`
  /// (busy, yielding the CPU between checks), then sleeps as receive() does. For a reply expected
  /// within microseconds (the handshake): a thread woken from poll() on a VM can take tens of
  /// microseconds. Costs up to `spin` of CPU time per call. Windows: `spin` is not used (an
  /// overlapped wait wakes at once).
  [[nodiscard]] result<message> receive(std::chrono::milliseconds timeout, std::chrono::microseconds spin);

  /// The peer's credentials as checked when the connection was made (pair(): this process).
  [[nodiscard]] const peer_credentials& peer() const noexcept { return peer_; }

  /// True when a socket / pipe is held and the channel has not ended (no protocol error, no end of
  /// the peer's messages received).
  [[nodiscard]] bool valid() const noexcept { return handle_.valid() && !ended_.load(std::memory_order_acquire); }

  /// True after send() / receive() noticed that the peer went away.
  [[nodiscard]] bool peer_closed() const noexcept { return peer_closed_.load(std::memory_order_acquire); }

  /// The socket / pipe handle (empty when the channel is closed or has ended).
  /// Ownership: still owned by the channel; do not close it.
  [[nodiscard]] os::borrowed_shareable_handle native() const noexcept {
    return valid() ? os::borrowed_shareable_handle(handle_) : os::borrowed_shareable_handle();
  }

  /// Closes the channel now (also after it ended); it becomes empty. Not to be called while
  /// another thread sends or receives. The peer still receives everything this side sent before
  /// closing, then the end (Linux: messages the peer sent and this side did not read are discarded
  /// first, their fds closed, since closing with unread messages would make the kernel report
  /// ECONNRESET to the peer ahead of them; Windows: a read left pending is cancelled, and a message
  /// it had read is refused as receive would, its handles closed).
  void close() noexcept;

 private:
  friend class listener;
  friend class detail::wait_set;
  channel(os::shareable_handle handle, peer_credentials peer, std::unique_ptr<detail::channel_platform> platform) noexcept;

  // Ends the channel (a protocol error, the peer's end): wakes calls waiting in another thread,
  // keeps the handle.
  void end() noexcept;
  // Releases the socket / pipe and the platform state (after the platform's close steps).
  void release() noexcept;
  // The checks every send makes before touching the transport (invalid_argument / protocol_error).
  [[nodiscard]] result<void> check_send(message_type type, std::size_t payload_size,
                                        std::span<const os::borrowed_shareable_handle> fds) const;
#if defined(_WIN32)
  // Takes the result of the pending read, then as take_result.
  [[nodiscard]] result<message> take_read();
  // Turns a read's outcome (Win32 error, bytes in the read buffer) into a message or an error.
  [[nodiscard]] result<message> take_result(std::uint32_t win32_error, std::uint32_t bytes);
  // The peer went away: a protocol_error that says so, peer_closed() set.
  [[nodiscard]] error peer_gone(const char* call, std::uint32_t win32_error);
#endif

  os::shareable_handle handle_;
  peer_credentials peer_;
  std::unique_ptr<detail::channel_platform> platform_;  // Windows: events, pending I/O; Linux: none
  std::atomic<bool> ended_{false};
  std::atomic<bool> peer_closed_{false};
};

/// A listener: Linux: a listening AF_UNIX SOCK_SEQPACKET socket bound to a path (the destructor
/// removes the socket file it created, if it is still the same file); Windows: a named pipe server
/// that keeps one instance waiting for a client (ConnectNamedPipe, overlapped), each instance with a
/// DACL that grants this user only and rejects remote clients (the first is created with
/// FILE_FLAG_FIRST_PIPE_INSTANCE so a name another process already serves is refused; Wine 8 does
/// not enforce that flag; clients check the server's SID anyway). Move-only.
class listener {
 public:
  /// An empty listener.
  listener() noexcept;

  /// Starts listening.
  /// Linux: binds and listens. The socket file gets exactly `options.mode` (set on the socket
  /// before bind, so it is never wider, then chmod'ed and checked with stat). A socket file already
  /// at the path is removed only if nobody listens on it (connect gives ECONNREFUSED); a live one
  /// gives os_error EADDRINUSE, a non-socket file invalid_argument. Errors: invalid_argument (no
  /// path and no usable name, XDG_RUNTIME_DIR unset or not absolute, path too long, mode outside
  /// 0777); os_error for failed system calls.
  /// Windows: creates the first pipe instance and starts waiting for a client. Errors:
  /// invalid_argument (unusable name); os_error (Win32: ERROR_ACCESS_DENIED or ERROR_PIPE_BUSY when
  /// another process serves the name, other CreateNamedPipe failures).
  /// Ownership: the listener owns its socket and socket file / pipe instance and event.
  [[nodiscard]] static result<listener> listen(const listen_options& options);

  listener(const listener&) = delete;
  listener& operator=(const listener&) = delete;
  /// Takes over `other`'s socket / pipe instance; `other` becomes empty.
  listener(listener&& other) noexcept;
  /// Closes this listener's (Linux: unlinks its socket file), then takes over `other`'s.
  listener& operator=(listener&& other) noexcept;
  /// Closes the socket and unlinks the socket file if it is still the one this listener bound /
  /// cancels the wait and closes the waiting pipe instance (connected channels stay open).
  ~listener();

  /// Accepts one connection within `timeout` and checks the peer: Linux: its SO_PEERCRED uid
  /// against the allowed uids; Windows: GetNamedPipeClientProcessId, OpenProcess and its token's
  /// user SID against the allowed SIDs. A refused peer's connection is closed at once (it sees EOF /
  /// the pipe broken) and accept returns errc::protocol_error naming its pid and uid / SID; the
  /// listener stays usable either way.
  /// Errors: timeout; protocol_error (refused peer); invalid_argument (empty listener); os_error.
  /// Ownership: the returned channel owns the accepted socket / connected instance (Windows: and a
  /// handle to the client process).
  [[nodiscard]] result<channel> accept(std::chrono::milliseconds timeout);

  /// The socket file's path / the pipe's full name (in Windows' pipe namespace, `\\.\pipe\` + name).
  [[nodiscard]] const std::string& path() const noexcept { return path_; }
  /// True when a socket / pipe instance is held.
  [[nodiscard]] bool valid() const noexcept { return handle_.valid(); }
  /// What to wait on for a connection, with other handles: the listening socket (poll it for
  /// POLLIN) / the event that is signalled when a client connected.
  /// Ownership: still owned by the listener; do not close it.
  [[nodiscard]] os::borrowed_shareable_handle native() const noexcept;

 private:
  void reset() noexcept;
#if defined(_WIN32)
  // Creates the next waiting instance and starts ConnectNamedPipe on it.
  result<void> wait_for_client(bool first);
#endif

  os::shareable_handle handle_;  // the listening socket / the pipe instance waiting for a client
  std::string path_;
  std::unique_ptr<detail::listener_platform> platform_;
};

}  // namespace membridge::ipc
