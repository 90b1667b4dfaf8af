// Windows: the named-pipe server: one instance always waits for a client (ConnectNamedPipe,
// overlapped); each connected client is identified by its process's token user SID.
#include "pipe_detail.hpp"

#include <algorithm>
#include <memory>
#include <utility>

namespace membridge::ipc {

namespace {

using std::chrono::milliseconds;

}  // namespace

result<listener> listener::listen(const listen_options& options) {
  constexpr const char* call = "listener::listen";
  if (options.buffer_size == 0) return error(errc::invalid_argument, call, "buffer_size must be positive");
  listener out;
  out.platform_ = std::make_unique<detail::listener_platform>();
  detail::listener_platform& p = *out.platform_;
  MEMBRIDGE_TRY_ASSIGN(out.path_, pipe_name_for(options.name).with_context(call));
  MEMBRIDGE_TRY_ASSIGN(p.own_sid, current_user_sid());
  p.allowed_sids = options.allowed_sids;
  p.buffer_size = options.buffer_size;
  MEMBRIDGE_TRY_ASSIGN(p.connect_event, detail::new_event());
  MEMBRIDGE_TRY(out.wait_for_client(true).with_context(call));
  return out;
}

result<void> listener::wait_for_client(bool first) {
  detail::listener_platform& p = *platform_;
  MEMBRIDGE_TRY_ASSIGN(const auto security, detail::user_only_security::create(p.own_sid));
  SECURITY_ATTRIBUTES sa = security.attributes();
  // FIRST_PIPE_INSTANCE: fail if the name exists already (squatting); REJECT_REMOTE_CLIENTS: local only.
  const DWORD open_mode = PIPE_ACCESS_DUPLEX | FILE_FLAG_OVERLAPPED | (first ? FILE_FLAG_FIRST_PIPE_INSTANCE : 0);
  handle_ = os::unique_handle(::CreateNamedPipeA(path_.c_str(), open_mode,
                                               PIPE_TYPE_MESSAGE | PIPE_READMODE_MESSAGE | PIPE_WAIT |
                                                   PIPE_REJECT_REMOTE_CLIENTS,
                                               PIPE_UNLIMITED_INSTANCES, p.buffer_size, p.buffer_size, 0, &sa));
  if (!handle_.valid()) return error::from_win32(::GetLastError(), "CreateNamedPipeA", path_);
  p.overlapped = OVERLAPPED{};
  p.overlapped.hEvent = p.connect_event.get();
  (void)::ResetEvent(p.connect_event.get());
  p.connected = false;
  if (::ConnectNamedPipe(handle_.get(), &p.overlapped) != 0) return ok();  // completed: the event is set
  const DWORD e = ::GetLastError();
  if (e == ERROR_IO_PENDING) return ok();
  if (e == ERROR_PIPE_CONNECTED) {  // a client connected between create and connect
    p.connected = true;
    (void)::SetEvent(p.connect_event.get());
    return ok();
  }
  handle_.reset();
  return error::from_win32(e, "ConnectNamedPipe", path_);
}

os::borrowed_handle listener::native() const noexcept {
  return platform_ ? platform_->connect_event.borrow() : os::borrowed_handle();
}

void listener::reset() noexcept {
  if (handle_.valid() && platform_) {
    // The pending ConnectNamedPipe writes into the OVERLAPPED: cancel it and wait before freeing.
    DWORD ignored = 0;
    (void)::CancelIoEx(handle_.get(), &platform_->overlapped);
    (void)::GetOverlappedResult(handle_.get(), &platform_->overlapped, &ignored, TRUE);
  }
  handle_.reset();
  platform_.reset();
  path_.clear();
}

result<channel> listener::accept(milliseconds timeout) {
  constexpr const char* call = "listener::accept";
  if (!handle_.valid()) return error(errc::invalid_argument, call, "the listener is closed");
  detail::listener_platform& p = *platform_;
  if (!p.connected) {
    const auto ms = static_cast<DWORD>(std::clamp<long long>(timeout.count(), 0, INT_MAX));
    if (::WaitForSingleObject(p.connect_event.get(), ms) != WAIT_OBJECT_0)
      return error(errc::timeout, call, "no connection within the timeout on " + path_);
    DWORD ignored = 0;
    if (::GetOverlappedResult(handle_.get(), &p.overlapped, &ignored, FALSE) == 0) {
      const DWORD e = ::GetLastError();
      // The client went away before it was accepted: drop the instance, wait for the next.
      (void)::DisconnectNamedPipe(handle_.get());
      MEMBRIDGE_TRY(wait_for_client(false));
      return error::from_win32(e, "ConnectNamedPipe", "a client left before it was accepted on " + path_);
    }
  }
  // Hand the connected instance out; a new one waits for the next client from now on.
  os::unique_handle connected = std::move(handle_);
  MEMBRIDGE_TRY(wait_for_client(false));

  ULONG pid = 0;
  if (::GetNamedPipeClientProcessId(connected.get(), &pid) == 0) {
    const DWORD e = ::GetLastError();
    (void)::DisconnectNamedPipe(connected.get());
    return error::from_win32(e, "GetNamedPipeClientProcessId", path_);
  }
  os::unique_handle process;
  auto peer = detail::identify_process(pid, PROCESS_DUP_HANDLE | PROCESS_QUERY_LIMITED_INFORMATION, process);
  if (!peer) {
    (void)::DisconnectNamedPipe(connected.get());
    return error(errc::protocol_error, call,
                 "refused a client (pid " + std::to_string(pid) + ") that could not be identified: " +
                     peer.error().message());
  }
  const bool allowed = p.allowed_sids.empty() ? peer->user_sid == p.own_sid
                                              : std::find(p.allowed_sids.begin(), p.allowed_sids.end(),
                                                          peer->user_sid) != p.allowed_sids.end();
  if (!allowed) {
    (void)::DisconnectNamedPipe(connected.get());  // the client sees the pipe broken
    return error(errc::protocol_error, call,
                 "refused a client (pid " + std::to_string(peer->pid) + ", SID " + peer->user_sid +
                     "): SID not allowed on " + path_);
  }
  MEMBRIDGE_TRY_ASSIGN(auto state, detail::new_channel_state(std::move(process), true));
  return channel(std::move(connected), std::move(*peer), std::move(state));
}

}  // namespace membridge::ipc
