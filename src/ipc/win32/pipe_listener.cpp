// Windows: the named-pipe server: one instance always waits for a client (ConnectNamedPipe,
// overlapped); each connected client is identified by its process's token user SID.
#include "pipe_detail.hpp"

#include <algorithm>
#include <memory>
#include <utility>

namespace membridge::ipc {

namespace {

using std::chrono::milliseconds;

OVERLAPPED& overlapped_of(void* p) { return *static_cast<OVERLAPPED*>(p); }

}  // namespace

result<listener> listener::listen(const listen_options& options) {
  constexpr const char* call = "listener::listen";
  if (options.buffer_size == 0) return error(errc::invalid_argument, call, "buffer_size must be positive");
  listener out;
  MEMBRIDGE_TRY_ASSIGN(out.path_, pipe_name_for(options.name).with_context(call));
  MEMBRIDGE_TRY_ASSIGN(out.own_sid_, current_user_sid());
  out.allowed_sids_ = options.allowed_sids;
  out.buffer_size_ = options.buffer_size;
  MEMBRIDGE_TRY_ASSIGN(out.connect_event_, detail::new_event());
  out.overlapped_ = new OVERLAPPED{};
  MEMBRIDGE_TRY(out.wait_for_client(true).with_context(call));
  return out;
}

result<void> listener::wait_for_client(bool first) {
  MEMBRIDGE_TRY_ASSIGN(const auto security, detail::user_only_security::create(own_sid_));
  SECURITY_ATTRIBUTES sa = security.attributes();
  // FIRST_PIPE_INSTANCE: fail if the name exists already (squatting); REJECT_REMOTE_CLIENTS: local only.
  const DWORD open_mode = PIPE_ACCESS_DUPLEX | FILE_FLAG_OVERLAPPED | (first ? FILE_FLAG_FIRST_PIPE_INSTANCE : 0);
  pipe_ = os::unique_handle(::CreateNamedPipeA(path_.c_str(), open_mode,
                                               PIPE_TYPE_MESSAGE | PIPE_READMODE_MESSAGE | PIPE_WAIT |
                                                   PIPE_REJECT_REMOTE_CLIENTS,
                                               PIPE_UNLIMITED_INSTANCES, buffer_size_, buffer_size_, 0, &sa));
  if (!pipe_.valid()) return error::from_win32(::GetLastError(), "CreateNamedPipeA", path_);
  OVERLAPPED& ov = overlapped_of(overlapped_);
  ov = OVERLAPPED{};
  ov.hEvent = connect_event_.get();
  (void)::ResetEvent(connect_event_.get());
  connected_ = false;
  if (::ConnectNamedPipe(pipe_.get(), &ov) != 0) return ok();  // completed: the event is set
  const DWORD e = ::GetLastError();
  if (e == ERROR_IO_PENDING) return ok();
  if (e == ERROR_PIPE_CONNECTED) {  // a client connected between create and connect
    connected_ = true;
    (void)::SetEvent(connect_event_.get());
    return ok();
  }
  pipe_.reset();
  return error::from_win32(e, "ConnectNamedPipe", path_);
}

listener::listener(listener&& other) noexcept
    : pipe_(std::move(other.pipe_)),
      connect_event_(std::move(other.connect_event_)),
      overlapped_(std::exchange(other.overlapped_, nullptr)),
      connected_(std::exchange(other.connected_, false)),
      path_(std::move(other.path_)),
      own_sid_(std::move(other.own_sid_)),
      allowed_sids_(std::move(other.allowed_sids_)),
      buffer_size_(other.buffer_size_) {}

listener& listener::operator=(listener&& other) noexcept {
  if (this != &other) {
    reset();
    pipe_ = std::move(other.pipe_);
    connect_event_ = std::move(other.connect_event_);
    overlapped_ = std::exchange(other.overlapped_, nullptr);
    connected_ = std::exchange(other.connected_, false);
    path_ = std::move(other.path_);
    own_sid_ = std::move(other.own_sid_);
    allowed_sids_ = std::move(other.allowed_sids_);
    buffer_size_ = other.buffer_size_;
  }
  return *this;
}

void listener::reset() noexcept {
  if (pipe_.valid() && overlapped_ != nullptr) {
    // The pending ConnectNamedPipe writes into the OVERLAPPED: cancel it and wait before freeing.
    DWORD ignored = 0;
    (void)::CancelIoEx(pipe_.get(), &overlapped_of(overlapped_));
    (void)::GetOverlappedResult(pipe_.get(), &overlapped_of(overlapped_), &ignored, TRUE);
  }
  pipe_.reset();
  connect_event_.reset();
  delete static_cast<OVERLAPPED*>(overlapped_);
  overlapped_ = nullptr;
  connected_ = false;
  path_.clear();
}

result<channel> listener::accept(milliseconds timeout) {
  constexpr const char* call = "listener::accept";
  if (!pipe_.valid()) return error(errc::invalid_argument, call, "the listener is closed");
  if (!connected_) {
    const auto ms = static_cast<DWORD>(std::clamp<long long>(timeout.count(), 0, INT_MAX));
    if (::WaitForSingleObject(connect_event_.get(), ms) != WAIT_OBJECT_0)
      return error(errc::timeout, call, "no connection within the timeout on " + path_);
    DWORD ignored = 0;
    if (::GetOverlappedResult(pipe_.get(), &overlapped_of(overlapped_), &ignored, FALSE) == 0) {
      const DWORD e = ::GetLastError();
      // The client went away before it was accepted: drop the instance, wait for the next.
      (void)::DisconnectNamedPipe(pipe_.get());
      MEMBRIDGE_TRY(wait_for_client(false));
      return error::from_win32(e, "ConnectNamedPipe", "a client left before it was accepted on " + path_);
    }
  }
  // Hand the connected instance out; a new one waits for the next client from now on.
  os::unique_handle connected = std::move(pipe_);
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
  const bool allowed = allowed_sids_.empty() ? peer->user_sid == own_sid_
                                             : std::find(allowed_sids_.begin(), allowed_sids_.end(), peer->user_sid) !=
                                                   allowed_sids_.end();
  if (!allowed) {
    (void)::DisconnectNamedPipe(connected.get());  // the client sees the pipe broken
    return error(errc::protocol_error, call,
                 "refused a client (pid " + std::to_string(peer->pid) + ", SID " + peer->user_sid +
                     "): SID not allowed on " + path_);
  }
  channel out(std::move(connected), std::move(process), std::move(*peer), true);
  MEMBRIDGE_TRY_ASSIGN(out.read_event_, detail::new_event());
  MEMBRIDGE_TRY_ASSIGN(out.write_event_, detail::new_event());
  return out;
}

}  // namespace membridge::ipc
