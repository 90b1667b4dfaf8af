// membridge/ipc/pipe_channel.hpp: the Windows transport: a named pipe (message mode, overlapped
// I/O) that carries framed messages (ipc/wire.hpp) with NT handles, and a listener that checks who
// connects (the client's token user SID). Declared on Windows only (empty elsewhere: see
// socket_channel.hpp); include <membridge/ipc/channel.hpp>, which picks the platform's transport.
//
// Handles travel by DuplicateHandle: the listener's side (the publisher) opens the verified client
// process and duplicates each handle into it; the message carries the values (docs/protocol.md,
// "Windows transport"). So only the listener's side sends handles; a client's receive owns every
// handle value of a message before it checks anything, and closes them all when it refuses it.
#pragma once

#if defined(_WIN32)

#include <membridge/core/result.hpp>
#include <membridge/ipc/wire.hpp>
#include <membridge/os/unique_handle.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace membridge::ipc {

/// Who is at the other end of a connected pipe, as the system reports it: the process id
/// (GetNamedPipeClientProcessId / GetNamedPipeServerProcessId) and that process's token user SID.
struct peer_credentials {
  std::int32_t pid = -1;  ///< The peer's process id.
  std::string user_sid;   ///< Its token's user SID as text ("S-1-5-21-...").
};

/// The user SID of this process's token as text ("S-1-5-21-..."). Errors: the Win32 error of
/// OpenProcessToken / GetTokenInformation / ConvertSidToStringSid.
[[nodiscard]] result<std::string> current_user_sid();

/// One connected end of a named pipe: sends and receives whole messages (header + payload + handle
/// table in one pipe message).
///
/// Errors and the channel's state are those of the Linux channel (socket_channel.hpp): a malformed
/// message gives errc::protocol_error and ends the channel (every handle that came with it is
/// closed); a peer that went away (ERROR_BROKEN_PIPE, ERROR_NO_DATA, ERROR_PIPE_NOT_CONNECTED) gives
/// protocol_error "the peer closed" and sets peer_closed(); a timeout gives errc::timeout and leaves
/// the channel usable (the pending I/O is cancelled; one that completed meanwhile counts).
/// Handles: only a listener's channel sends them (invalid_argument on a client's), duplicated into
/// the verified client process; when the send fails they are closed there again, so a failed send
/// leaks nothing on either side. A listener's channel refuses any received message that claims
/// handles (their values would name the client's handles, not its own) without touching them.
/// Move-only. Thread-safety: one thread may send while another receives (each has its own
/// OVERLAPPED and event); close(), moves and destruction need both to have returned.
class channel {
 public:
  /// An empty channel (valid() is false).
  channel() noexcept = default;

  /// Connects to the pipe `pipe_name` (pipe_name_for(name) gives the publisher's), waiting up to
  /// `timeout` while every instance is busy, then checks the server: its process's token user SID
  /// must be this process's (a pipe squatted by another user is refused).
  /// Errors: invalid_argument for an empty name; os_error (Win32) for a failed CreateFile
  /// (ERROR_FILE_NOT_FOUND: nobody listens; ERROR_ACCESS_DENIED: the pipe's DACL refuses this user);
  /// protocol_error for a server of another user; timeout.
  /// Ownership: the returned channel owns its pipe handle.
  [[nodiscard]] static result<channel> connect(const std::string& pipe_name, std::chrono::milliseconds timeout);

  channel(const channel&) = delete;
  channel& operator=(const channel&) = delete;
  /// Takes over `other`'s pipe; `other` becomes empty.
  channel(channel&& other) noexcept;
  /// Closes this channel's pipe (as close() does), then takes over `other`'s.
  channel& operator=(channel&& other) noexcept;
  /// Closes the pipe as close() does.
  ~channel() { close(); }

  /// Sends `m` as one pipe message, waiting up to `timeout` for the pipe to take it.
  /// Errors: invalid_argument for an empty channel, a message ipc::validate_outgoing refuses or
  /// handles on a client's channel (nothing is sent); timeout; protocol_error "the peer closed";
  /// os_error (Win32) for other failures.
  /// Ownership: `m` keeps its handles; the peer receives new handles to the same objects.
  [[nodiscard]] result<void> send(const message& m, std::chrono::milliseconds timeout);

  /// As send(m, timeout) for a message given in parts, with borrowed handles. A timeout of 0 waits
  /// for nothing: a write the pipe does not complete at once gives errc::timeout.
  /// Ownership: `handles` stay the caller's; the peer receives new handles to the same objects.
  [[nodiscard]] result<void> send(message_type type, std::span<const std::byte> payload,
                                  std::span<const os::borrowed_handle> handles, std::chrono::milliseconds timeout);

  /// Receives one message, waiting up to `timeout` for it. On a client's channel every handle
  /// value of the message's table is owned before anything else is checked
  /// (ipc::split_handle_table, then ipc::decode_header).
  /// Errors: timeout (channel usable); protocol_error for a malformed message or a closed peer
  /// (the channel ends; received handles are closed); invalid_argument for an empty channel;
  /// os_error (Win32) for other failures.
  /// Ownership: the returned message owns its handles.
  [[nodiscard]] result<message> receive(std::chrono::milliseconds timeout);

  /// As receive(timeout); `spin` is accepted for the Linux signature and not used (an overlapped
  /// wait wakes at once on Windows).
  [[nodiscard]] result<message> receive(std::chrono::milliseconds timeout, std::chrono::microseconds spin);

  /// The peer's process id and user SID as checked when the connection was made.
  [[nodiscard]] const peer_credentials& peer() const noexcept { return peer_; }

  /// True when a pipe is held and the channel has not ended.
  [[nodiscard]] bool valid() const noexcept { return pipe_.valid() && !ended_.load(std::memory_order_acquire); }

  /// True after send() / receive() noticed that the peer went away.
  [[nodiscard]] bool peer_closed() const noexcept { return peer_closed_.load(std::memory_order_acquire); }

  /// The pipe handle (empty when the channel is closed or has ended).
  /// Ownership: still owned by the channel; do not close it.
  [[nodiscard]] os::borrowed_handle native() const noexcept { return valid() ? pipe_.borrow() : os::borrowed_handle(); }

  /// Closes the pipe now; the channel becomes empty. What this side wrote before stays readable by
  /// the peer, then it sees the pipe broken.
  void close() noexcept;

 private:
  friend class listener;
  channel(os::unique_handle pipe, os::unique_handle peer_process, peer_credentials peer, bool server_side) noexcept;

  // Ends the channel (a protocol error, the peer's end): cancels this side's pending I/O.
  void end() noexcept;
  // The peer went away: a protocol_error that says so, peer_closed() set.
  error peer_gone(const char* call, std::uint32_t win32_error);

  os::unique_handle pipe_;
  os::unique_handle peer_process_;  // listener side: the client process, PROCESS_DUP_HANDLE
  os::unique_handle read_event_;
  os::unique_handle write_event_;
  peer_credentials peer_;
  bool server_side_ = false;
  std::atomic<bool> ended_{false};
  std::atomic<bool> peer_closed_{false};
};

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

/// A named pipe server: it keeps one instance waiting for a client (ConnectNamedPipe, overlapped)
/// and hands each verified connection out as a channel. Every instance has a DACL that grants this
/// user only and rejects remote clients; the first is created with FILE_FLAG_FIRST_PIPE_INSTANCE so
/// a name another process already serves is refused (Wine 8 does not enforce that flag; clients
/// check the server's SID anyway). Move-only.
class listener {
 public:
  /// An empty listener.
  listener() noexcept = default;

  /// Creates the first pipe instance and starts waiting for a client.
  /// Errors: invalid_argument (unusable name); os_error (Win32: ERROR_ACCESS_DENIED or
  /// ERROR_PIPE_BUSY when another process serves the name, other CreateNamedPipe failures).
  /// Ownership: the listener owns its pipe instance and event.
  [[nodiscard]] static result<listener> listen(const listen_options& options);

  listener(const listener&) = delete;
  listener& operator=(const listener&) = delete;
  /// Takes over `other`'s pipe instance; `other` becomes empty.
  listener(listener&& other) noexcept;
  /// Closes this listener's instance, then takes over `other`'s.
  listener& operator=(listener&& other) noexcept;
  /// Cancels the wait and closes the waiting instance (connected channels stay open).
  ~listener() { reset(); }

  /// Accepts one connection within `timeout`, identifies the client (GetNamedPipeClientProcessId,
  /// OpenProcess, its token's user SID) and checks the SID against the allowed ones. A refused
  /// client is disconnected at once (it sees the pipe broken) and accept returns
  /// errc::protocol_error naming its pid and SID; the listener stays usable either way (a new
  /// instance waits for the next client).
  /// Errors: timeout; protocol_error (refused client); invalid_argument (empty listener); os_error.
  /// Ownership: the returned channel owns the connected instance and a handle to the client process.
  [[nodiscard]] result<channel> accept(std::chrono::milliseconds timeout);

  /// The pipe's full name (\\.\pipe\...).
  [[nodiscard]] const std::string& path() const noexcept { return path_; }
  /// True when a pipe instance is held.
  [[nodiscard]] bool valid() const noexcept { return pipe_.valid(); }
  /// The event that is signalled when a client connected (to wait on it with other handles).
  /// Ownership: still owned by the listener; do not close it.
  [[nodiscard]] os::borrowed_handle native() const noexcept { return connect_event_.borrow(); }

 private:
  // Creates the next waiting instance and starts ConnectNamedPipe on it.
  result<void> wait_for_client(bool first);
  void reset() noexcept;

  os::unique_handle pipe_;           // the instance waiting for a client
  os::unique_handle connect_event_;  // its OVERLAPPED event
  void* overlapped_ = nullptr;       // an OVERLAPPED (owned; <windows.h> stays out of this header)
  bool connected_ = false;           // ConnectNamedPipe completed at once (ERROR_PIPE_CONNECTED)
  std::string path_;
  std::string own_sid_;
  std::vector<std::string> allowed_sids_;
  std::uint32_t buffer_size_ = 0;
};

}  // namespace membridge::ipc

#endif  // defined(_WIN32)
