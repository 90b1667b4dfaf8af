// Windows: one connected end of a named pipe (message mode, overlapped I/O); handles travel by
// DuplicateHandle into the verified client process (docs/protocol.md, "Windows transport").
#include "../detail/channel_platform.hpp"

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

namespace detail {

const char* const handle_noun = "handles";
const char* const handle_noun_one = "handle";

result<void> check_platform_send(const channel_platform* platform, std::size_t handle_count) {
  if (handle_count > 0 && (platform == nullptr || !platform->server_side))
    return error(errc::invalid_argument, "channel::send",
                 "a client's channel sends no handles (only the listener's side does)");
  return ok();
}

result<std::unique_ptr<channel_platform>> new_channel_state(os::unique_handle peer_process, bool server_side) {
  auto p = std::make_unique<channel_platform>();
  p->peer_process = std::move(peer_process);
  p->server_side = server_side;
  MEMBRIDGE_TRY_ASSIGN(p->read_event, new_event());
  MEMBRIDGE_TRY_ASSIGN(p->write_event, new_event());
  return p;
}

DWORD arm_read(HANDLE pipe, channel_platform& p) {
  if (p.reading) return 0;
  if (!p.read_buffer) p.read_buffer = std::make_unique_for_overwrite<std::byte[]>(receive_buffer_size);
  p.read_ov = overlapped_with(p.read_event.get());
  if (::ReadFile(pipe, p.read_buffer.get(), static_cast<DWORD>(receive_buffer_size), nullptr, &p.read_ov) == 0) {
    const DWORD e = ::GetLastError();
    // ERROR_MORE_DATA: done at once with the first part of a longer message (the event is set).
    if (e != ERROR_IO_PENDING && e != ERROR_MORE_DATA) return e;
  }
  p.reading = true;
  return 0;
}

}  // namespace detail

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
  MEMBRIDGE_TRY_ASSIGN(auto state, detail::new_channel_state(os::unique_handle(), false));
  return channel(std::move(pipe), std::move(peer), std::move(state));
}

void channel::end() noexcept {
  if (ended_.exchange(true, std::memory_order_acq_rel)) return;
  // Wakes a send or receive waiting in another thread; the handle stays until close().
  if (handle_.valid()) (void)::CancelIoEx(handle_.get(), nullptr);
}

void channel::close() noexcept {
  if (handle_.valid() && platform_ && platform_->reading) {
    // The pending read writes into the buffer: cancel it and wait. A message it read meanwhile is
    // taken as receive would (its handles owned, then closed with it).
    (void)::CancelIoEx(handle_.get(), &platform_->read_ov);
    (void)::WaitForSingleObject(platform_->read_event.get(), INFINITE);
    (void)take_read();
  }
  // CloseHandle keeps what this side wrote readable by the peer (then it sees ERROR_BROKEN_PIPE);
  // DisconnectNamedPipe would discard it.
  release();
}

error channel::peer_gone(const char* call, std::uint32_t win32_error) {
  peer_closed_.store(true, std::memory_order_release);
  error e = error::from_win32(win32_error, call, "the peer closed");
  return error::from_native(errc::protocol_error, error_source::win32, win32_error, std::string(e.native_name()), call,
                            "the peer closed");
}

result<void> channel::send(message_type type, std::span<const std::byte> payload,
                           std::span<const os::borrowed_handle> handles, milliseconds timeout) {
  constexpr const char* call = "channel::send";
  MEMBRIDGE_TRY(check_send(type, payload.size(), handles));
  detail::channel_platform& p = *platform_;

  // Duplicate each handle into the client; from here on every failure closes them there again.
  std::vector<std::uint64_t> remote;
  remote.reserve(handles.size());
  for (const os::borrowed_handle h : handles) {
    HANDLE in_peer = nullptr;
    if (::DuplicateHandle(::GetCurrentProcess(), h.get(), p.peer_process.get(), &in_peer, 0, FALSE,
                          DUPLICATE_SAME_ACCESS) == 0) {
      const DWORD e = ::GetLastError();
      close_in_peer(p.peer_process.get(), remote);
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

  OVERLAPPED ov = overlapped_with(p.write_event.get());
  const BOOL started = ::WriteFile(handle_.get(), bytes.data(), static_cast<DWORD>(bytes.size()), nullptr, &ov);
  const detail::io_result done = detail::finish_io(handle_.get(), ov, started, timeout);
  if (done.error == 0 && done.bytes == bytes.size()) return ok();
  close_in_peer(p.peer_process.get(), remote);
  if (done.error == 0) return error(errc::internal, call, "short write on a message-mode pipe");
  if (detail::is_pipe_gone(done.error)) return peer_gone(call, done.error);
  if (done.error == ERROR_TIMEOUT) {
    if (ended_.load(std::memory_order_acquire)) return error(errc::protocol_error, call, "the channel ended");
    return error(errc::timeout, call, timeout.count() <= 0 ? "the pipe did not take the message at once"
                                                           : "the pipe did not take the message within the timeout");
  }
  return error::from_win32(done.error, "WriteFile", "channel::send");
}

result<message> channel::receive(milliseconds timeout, std::chrono::microseconds) {
  constexpr const char* call = "channel::receive";
  if (!valid()) return error(errc::invalid_argument, call, "the channel is closed");
  // A read left pending by an earlier receive that timed out is the one waited for now.
  if (const DWORD e = detail::arm_read(handle_.get(), *platform_); e != 0) return take_result(e, 0);
  const auto ms = static_cast<DWORD>(std::clamp<long long>(timeout.count(), 0, INT_MAX));
  if (::WaitForSingleObject(platform_->read_event.get(), ms) != WAIT_OBJECT_0) {
    if (ended_.load(std::memory_order_acquire)) return error(errc::protocol_error, call, "the channel ended");
    return error(errc::timeout, call, "no message within the timeout");
  }
  return take_read();
}

result<message> channel::take_read() {
  detail::channel_platform& p = *platform_;
  DWORD bytes = 0;
  DWORD e = 0;
  if (::GetOverlappedResult(handle_.get(), &p.read_ov, &bytes, FALSE) == 0) e = ::GetLastError();
  p.reading = false;
  return take_result(e == ERROR_OPERATION_ABORTED ? static_cast<DWORD>(ERROR_TIMEOUT) : e, bytes);
}

result<message> channel::take_result(std::uint32_t win32_error, std::uint32_t bytes_read) {
  constexpr const char* call = "channel::receive";
  detail::channel_platform& p = *platform_;
  std::byte* const buffer = p.read_buffer.get();
  detail::io_result done{win32_error, bytes_read};
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
      OVERLAPPED ov = overlapped_with(p.read_event.get());
      const BOOL started = ::ReadFile(handle_.get(), buffer, static_cast<DWORD>(receive_buffer_size), nullptr, &ov);
      done = detail::finish_io(handle_.get(), ov, started, milliseconds(1000));
      total += done.bytes;
    }
    return fail("a message of more than " + std::to_string(total) + " bytes, larger than the largest valid one (" +
                std::to_string(receive_buffer_size - 1) + ")");
  }
  if (done.error != 0) return error::from_win32(done.error, "ReadFile", "channel::receive");

  const auto bytes = std::span<const std::byte>(buffer, done.bytes);
  auto split = split_handle_table(bytes);
  if (!split) {
    end();
    return std::move(split).error().add_context(call);
  }
  if (p.server_side && !split->handle_values.empty())
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
