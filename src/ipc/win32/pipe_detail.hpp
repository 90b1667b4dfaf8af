// Private (Windows): what the named-pipe channel and listener share: their state beyond the pipe
// handle, user SIDs of processes, the current-user security descriptor, overlapped I/O with a
// timeout.
#pragma once

#include <membridge/core/result.hpp>
#include <membridge/ipc/channel.hpp>
#include <membridge/os/unique_handle.hpp>

#include <windows.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace membridge::ipc::detail {

/// A pipe channel's state beyond its pipe handle. Heap-allocated, so the OVERLAPPED of a pending
/// read keeps its address when the channel moves.
struct channel_platform {
  os::unique_handle peer_process;  // listener side: the client process, PROCESS_DUP_HANDLE
  os::unique_handle read_event;    // manual-reset: set when the pending read completed
  os::unique_handle write_event;
  bool server_side = false;
  // A read that a receive started and did not take yet (it timed out): the next receive takes it,
  // and the publisher's thread waits on read_event meanwhile.
  OVERLAPPED read_ov{};
  std::unique_ptr<std::byte[]> read_buffer;
  bool reading = false;
};

/// A pipe listener's state beyond the instance waiting for a client. Heap-allocated: the pending
/// ConnectNamedPipe writes into `overlapped`.
struct listener_platform {
  os::unique_handle connect_event;  // the OVERLAPPED event of the waiting instance
  OVERLAPPED overlapped{};
  bool connected = false;           // ConnectNamedPipe completed at once (ERROR_PIPE_CONNECTED)
  std::string own_sid;
  std::vector<std::string> allowed_sids;
  std::uint32_t buffer_size = 0;
};

/// The user SID of `process`'s token as text. Errors: the Win32 error of OpenProcessToken,
/// GetTokenInformation or ConvertSidToStringSid.
/// Ownership: borrows `process` (it needs PROCESS_QUERY_LIMITED_INFORMATION).
[[nodiscard]] result<std::string> process_user_sid(HANDLE process);

/// Opens process `pid` with `access` and reads its user SID.
/// Errors: the Win32 error of OpenProcess (e.g. ERROR_INVALID_PARAMETER: it exited) or of
/// process_user_sid. Ownership: `process` receives a new handle the caller owns.
[[nodiscard]] result<peer_credentials> identify_process(DWORD pid, DWORD access, os::unique_handle& process);

/// A security descriptor whose DACL grants `sid` (text) all access and nobody else anything.
/// Ownership: owns the LocalAlloc'ed descriptor; attributes() points into it.
class user_only_security {
 public:
  /// Errors: invalid_argument for a SID the system does not parse; the Win32 error otherwise.
  [[nodiscard]] static result<user_only_security> create(const std::string& sid);
  user_only_security(const user_only_security&) = delete;
  user_only_security& operator=(const user_only_security&) = delete;
  /// Takes over `other`'s descriptor.
  user_only_security(user_only_security&& other) noexcept : descriptor_(other.descriptor_) { other.descriptor_ = nullptr; }
  user_only_security& operator=(user_only_security&&) = delete;
  /// Frees the descriptor.
  ~user_only_security();
  /// SECURITY_ATTRIBUTES for CreateNamedPipe (not inheritable). Valid while this object lives.
  [[nodiscard]] SECURITY_ATTRIBUTES attributes() const noexcept;

 private:
  explicit user_only_security(PSECURITY_DESCRIPTOR d) noexcept : descriptor_(d) {}
  PSECURITY_DESCRIPTOR descriptor_ = nullptr;
};

/// A manual-reset, unsignalled, unnamed event. Errors: the Win32 error of CreateEvent.
[[nodiscard]] result<os::unique_handle> new_event();

/// How an overlapped operation ended: error 0 (done), ERROR_TIMEOUT (cancelled after the timeout,
/// nothing transferred), ERROR_MORE_DATA (a message-mode read got the first `bytes` of a longer
/// message), or the operation's Win32 error.
struct io_result {
  DWORD error = 0;
  DWORD bytes = 0;
};

/// Finishes an overlapped ReadFile / WriteFile / ConnectNamedPipe on `file` that returned
/// `started`: waits up to `timeout` for `ov.hEvent`, then cancels it and takes its final result
/// (an operation that completed while it was being cancelled counts as done).
[[nodiscard]] io_result finish_io(HANDLE file, OVERLAPPED& ov, BOOL started, std::chrono::milliseconds timeout);

/// A channel's state with its two events. Errors: the Win32 error of CreateEvent.
/// Ownership: takes `peer_process` (the client process on a listener's side, else empty).
[[nodiscard]] result<std::unique_ptr<channel_platform>> new_channel_state(os::unique_handle peer_process, bool server_side);

/// Makes sure a read is pending on `pipe` (into p.read_buffer, p.read_ov; its completion sets
/// p.read_event): starts one unless p.reading. Returns 0, or the Win32 error of a ReadFile that
/// failed at once (nothing pending then).
[[nodiscard]] DWORD arm_read(HANDLE pipe, channel_platform& p);

/// True for the Win32 errors that mean the other end of a pipe is gone.
[[nodiscard]] bool is_pipe_gone(DWORD error) noexcept;

/// A HANDLE as the u64 value the handle table carries, and back.
[[nodiscard]] inline std::uint64_t handle_value(HANDLE h) noexcept { return static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(h)); }
[[nodiscard]] inline HANDLE handle_from_value(std::uint64_t v) noexcept { return reinterpret_cast<HANDLE>(static_cast<std::uintptr_t>(v)); }

}  // namespace membridge::ipc::detail
