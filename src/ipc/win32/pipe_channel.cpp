// Windows: one connected end of a named pipe (message mode, overlapped I/O); handles travel by
// DuplicateHandle into the verified client process (docs/protocol.md, "Windows transport").
#include "pipe_detail.hpp"

#include <algorithm>
#include <array>
#include <memory>
#include <utility>

namespace membridge::ipc {

namespace {

using std::chrono::milliseconds;

/// The largest pipe message: header, payload, a full handle table, +1 to detect an oversize one.
constexpr std::size_t receive_buffer_size = header_size + max_payload_size + max_fds_per_message * handle_value_size + 1;

OVERLAPPED overlapped_with(HANDLE event) {
  OVERLAPPED ov{};
  ov.hEvent = event;
  (void)::ResetEvent(event);
  return ov;
}

/// Closes handles this process duplicated into `process` (a send that did not reach the peer).
void close_in_peer(HANDLE process, std::span<const std::uint64_t> values) {
  for (const std::uint64_t v : values)
    (void)::DuplicateHandle(process, detail::handle_from_value(v), nullptr, nullptr, 0, FALSE, DUPLICATE_CLOSE_SOURCE);
}

}  // namespace

channel::channel(os::unique_handle pipe, os::unique_handle peer_process, peer_credentials peer, bool server_side) noexcept
    : pipe_(std::move(pipe)), peer_process_(std::move(peer_process)), peer_(std::move(peer)), server_side_(server_side) {}

result<channel> channel::connect(const std::string& pipe_name, milliseconds timeout) {
  constexpr const char* call = "channel::connect";
  if (pipe_name.empty()) return error(errc::invalid_argument, call, "empty pipe name");
  const auto deadline = std::chrono::steady_clock::now() + std::clamp(timeout, milliseconds(0), milliseconds(INT_MAX));
  os::unique_handle pipe;
  for (;;) {
    // SECURITY_IDENTIFICATION: the server may learn who we are, never act as us.
    pipe = os::unique_handle(::CreateFileA(pipe_name.c_str(), GENERIC_READ | GENERIC_WRITE, 0, nullptr, OPEN_EXISTING,
                                           FILE_FLAG_OVERLAPPED | SECURITY_SQOS_PRESENT | SECURITY_IDENTIFICATION,
                                           nullptr));
    if (pipe.valid()) break;
    const DWORD e = ::GetLastError();
    if (e != ERROR_PIPE_BUSY) return error::from_win32(e, "CreateFileA", pipe_name);
    const auto left = std::chrono::duration_cast<milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return error(errc::timeout, call, "every instance of " + pipe_name + " stayed busy");
    (void)::WaitNamedPipeA(pipe_name.c_str(), static_cast<DWORD>(std::min<long long>(left.count(), 50)));
  }
  DWORD mode = PIPE_READMODE_MESSAGE;
  if (::SetNamedPipeHandleState(pipe.get(), &mode, nullptr, nullptr) == 0)
    return error::from_win32(::GetLastError(), "SetNamedPipeHandleState", "PIPE_READMODE_MESSAGE");

  // Whoever serves the name must be this user (another user's process could have created it first).
  ULONG server_pid = 0;
  if (::GetNamedPipeServerProcessId(pipe.get(), &server_pid) == 0)
    return error::from_win32(::GetLastError(), "GetNamedPipeServerProcessId", pipe_name);
  os::unique_handle server;
  MEMBRIDGE_TRY_ASSIGN(peer_credentials peer,
                       detail::identify_process(server_pid, PROCESS_QUERY_LIMITED_INFORMATION, server)
                           .with_context("identifying the server of " + pipe_name));
  MEMBRIDGE_TRY_ASSIGN(const std::string own, current_user_sid());
  if (peer.user_sid != own)
    return error(errc::protocol_error, call,
                 "the server of " + pipe_name + " (pid " + std::to_string(peer.pid) + ") runs as " + peer.user_sid +
                     ", not as this user " + own);
  channel out(std::move(pipe), os::unique_handle(), std::move(peer), false);
  MEMBRIDGE_TRY_ASSIGN(out.read_event_, detail::new_event());
  MEMBRIDGE_TRY_ASSIGN(out.write_event_, detail::new_event());
  return out;
}

channel::channel(channel&& other) noexcept
    : pipe_(std::move(other.pipe_)),
      peer_process_(std::move(other.peer_process_)),
      read_event_(std::move(other.read_event_)),
      write_event_(std::move(other.write_event_)),
      peer_(std::move(other.peer_)),
      server_side_(other.server_side_),
      ended_(other.ended_.load(std::memory_order_acquire)),
      peer_closed_(other.peer_closed_.load(std::memory_order_acquire)) {
  other.ended_.store(false, std::memory_order_release);
  other.peer_closed_.store(false, std::memory_order_release);
}

channel& channel::operator=(channel&& other) noexcept {
  if (this != &other) {
    close();
    pipe_ = std::move(other.pipe_);
    peer_process_ = std::move(other.peer_process_);
    read_event_ = std::move(other.read_event_);
    write_event_ = std::move(other.write_event_);
    peer_ = std::move(other.peer_);
    server_side_ = other.server_side_;
    ended_.store(other.ended_.load(std::memory_order_acquire), std::memory_order_release);
    peer_closed_.store(other.peer_closed_.load(std::memory_order_acquire), std::memory_order_release);
    other.ended_.store(false, std::memory_order_release);
    other.peer_closed_.store(false, std::memory_order_release);
  }
  return *this;
}

void channel::end() noexcept {
  if (ended_.exchange(true, std::memory_order_acq_rel)) return;
  // Wakes a send or receive waiting in another thread; the handle stays until close().
  if (pipe_.valid()) (void)::CancelIoEx(pipe_.get(), nullptr);
}

void channel::close() noexcept {
  // CloseHandle keeps what this side wrote readable by the peer (then it sees ERROR_BROKEN_PIPE);
  // DisconnectNamedPipe would discard it.
  pipe_.reset();
  peer_process_.reset();
  read_event_.reset();
  write_event_.reset();
  ended_.store(false, std::memory_order_release);
}

error channel::peer_gone(const char* call, std::uint32_t win32_error) {
  peer_closed_.store(true, std::memory_order_release);
  error e = error::from_win32(win32_error, call, "the peer closed");
  return error::from_native(errc::protocol_error, error_source::win32, win32_error, std::string(e.native_name()), call,
                            "the peer closed");
}

result<void> channel::send(const message& m, milliseconds timeout) {
  MEMBRIDGE_TRY(validate_outgoing(m).with_context("channel::send"));
  std::array<os::borrowed_handle, max_fds_per_message> handles{};
  for (std::size_t i = 0; i < m.fds.size(); ++i) handles[i] = m.fds[i].borrow();
  return send(m.type, m.payload, std::span(handles.data(), m.fds.size()), timeout);
}

result<void> channel::send(message_type type, std::span<const std::byte> payload,
                           std::span<const os::borrowed_handle> handles, milliseconds timeout) {
  constexpr const char* call = "channel::send";
  if (!valid()) return error(errc::invalid_argument, call, "the channel is closed");
  if (peer_closed()) return error(errc::protocol_error, call, "the peer closed");
  if (payload.size() > max_payload_size)
    return error(errc::invalid_argument, call,
                 "payload of " + std::to_string(payload.size()) + " bytes exceeds the cap of " +
                     std::to_string(max_payload_size));
  if (handles.size() > max_fds_per_message)
    return error(errc::invalid_argument, call,
                 std::to_string(handles.size()) + " handles exceed the cap of " + std::to_string(max_fds_per_message));
  if (to_string(type) == "unknown")
    return error(errc::invalid_argument, call, "unknown message type " + std::to_string(static_cast<int>(type)));
  if (!handles.empty() && !server_side_)
    return error(errc::invalid_argument, call, "a client's channel sends no handles (only the listener's side does)");
  for (const os::borrowed_handle h : handles)
    if (!h.valid()) return error(errc::invalid_argument, call, "the message carries an invalid handle");

  // Duplicate each handle into the client; from here on every failure closes them there again.
  std::vector<std::uint64_t> remote;
  remote.reserve(handles.size());
  for (const os::borrowed_handle h : handles) {
    HANDLE in_peer = nullptr;
    if (::DuplicateHandle(::GetCurrentProcess(), h.get(), peer_process_.get(), &in_peer, 0, FALSE,
                          DUPLICATE_SAME_ACCESS) == 0) {
      const DWORD e = ::GetLastError();
      close_in_peer(peer_process_.get(), remote);
      return error::from_win32(e, "DuplicateHandle", "into the client process " + std::to_string(peer_.pid));
    }
    remote.push_back(detail::handle_value(in_peer));
  }

  message_header header;
  header.type = type;
  header.payload_size = static_cast<std::uint32_t>(payload.size());
  header.fd_count = static_cast<std::uint16_t>(handles.size());
  const auto head = encode_header(header);
  const auto table = encode_handle_table(remote);
  std::vector<std::byte> bytes;
  bytes.reserve(head.size() + payload.size() + table.size());
  bytes.insert(bytes.end(), head.begin(), head.end());
  bytes.insert(bytes.end(), payload.begin(), payload.end());
  bytes.insert(bytes.end(), table.begin(), table.end());

  OVERLAPPED ov = overlapped_with(write_event_.get());
  const BOOL started = ::WriteFile(pipe_.get(), bytes.data(), static_cast<DWORD>(bytes.size()), nullptr, &ov);
  const detail::io_result done = detail::finish_io(pipe_.get(), ov, started, timeout);
  if (done.error == 0 && done.bytes == bytes.size()) return ok();
  close_in_peer(peer_process_.get(), remote);
  if (done.error == 0) return error(errc::internal, call, "short write on a message-mode pipe");
  if (detail::is_pipe_gone(done.error)) return peer_gone(call, done.error);
  if (done.error == ERROR_TIMEOUT) {
    if (ended_.load(std::memory_order_acquire)) return error(errc::protocol_error, call, "the channel ended");
    return error(errc::timeout, call, timeout.count() <= 0 ? "the pipe did not take the message at once"
                                                           : "the pipe did not take the message within the timeout");
  }
  return error::from_win32(done.error, "WriteFile", "channel::send");
}

result<message> channel::receive(milliseconds timeout, std::chrono::microseconds) { return receive(timeout); }

result<message> channel::receive(milliseconds timeout) {
  constexpr const char* call = "channel::receive";
  if (!valid()) return error(errc::invalid_argument, call, "the channel is closed");
  const auto buffer = std::make_unique_for_overwrite<std::byte[]>(receive_buffer_size);
  OVERLAPPED ov = overlapped_with(read_event_.get());
  BOOL started = ::ReadFile(pipe_.get(), buffer.get(), static_cast<DWORD>(receive_buffer_size), nullptr, &ov);
  detail::io_result done = detail::finish_io(pipe_.get(), ov, started, timeout);
  if (detail::is_pipe_gone(done.error)) {
    end();
    return peer_gone(call, done.error);
  }
  if (done.error == ERROR_TIMEOUT) {
    if (ended_.load(std::memory_order_acquire)) return error(errc::protocol_error, call, "the channel ended");
    return error(errc::timeout, call, "no message within the timeout");
  }
  auto fail = [&](std::string context) -> error {
    end();
    return error(errc::protocol_error, call, std::move(context));
  };
  if (done.error == ERROR_MORE_DATA) {
    // Larger than any valid message: read the rest (its handle values cannot be trusted) and refuse.
    std::size_t total = done.bytes;
    while (done.error == ERROR_MORE_DATA) {
      ov = overlapped_with(read_event_.get());
      started = ::ReadFile(pipe_.get(), buffer.get(), static_cast<DWORD>(receive_buffer_size), nullptr, &ov);
      done = detail::finish_io(pipe_.get(), ov, started, milliseconds(1000));
      total += done.bytes;
    }
    return fail("a message of more than " + std::to_string(total) + " bytes, larger than the largest valid one (" +
                std::to_string(receive_buffer_size - 1) + ")");
  }
  if (done.error != 0) return error::from_win32(done.error, "ReadFile", "channel::receive");

  const auto bytes = std::span<const std::byte>(buffer.get(), done.bytes);
  auto split = split_handle_table(bytes);
  if (!split) {
    end();
    return std::move(split).error().add_context(call);
  }
  if (server_side_ && !split->handle_values.empty())
    return fail("a client sent " + std::to_string(split->handle_values.size()) +
                " handle values (they would name its own handles; only the publisher sends handles)");

  // Own every distinct handle value before checking anything else, so none can leak.
  std::vector<os::shareable_handle> handles;
  std::vector<std::uint64_t> seen;
  bool repeated = false;
  for (const std::uint64_t v : split->handle_values) {
    if (std::find(seen.begin(), seen.end(), v) != seen.end()) {
      repeated = true;  // closing a value twice could close a handle the process opened meanwhile
      continue;
    }
    seen.push_back(v);
    handles.emplace_back(detail::handle_from_value(v));
  }
  if (repeated) return fail("the handle table names one handle twice");
  for (std::size_t i = 0; i < handles.size(); ++i) {
    DWORD flags = 0;
    if (!handles[i].valid() || ::GetHandleInformation(handles[i].get(), &flags) == 0) {
      (void)handles[i].release();  // names nothing open in this process: nothing to close
      return fail("handle " + std::to_string(i) + " of the table (value " + std::to_string(seen[i]) +
                  ") names no open handle in this process");
    }
  }
  auto header = decode_header(split->message, handles.size());
  if (!header) {
    end();
    return std::move(header).error().add_context(call);
  }
  message out;
  out.type = header->type;
  out.payload.assign(split->message.begin() + static_cast<std::ptrdiff_t>(header_size), split->message.end());
  out.fds = std::move(handles);
  return out;
}

}  // namespace membridge::ipc
