// Windows: user SIDs of processes, pipe names per user, the current-user DACL, overlapped waits.
#include "pipe_detail.hpp"

#include <membridge/core/log.hpp>

#include <sddl.h>

#include <algorithm>
#include <climits>
#include <vector>

namespace membridge::ipc {

namespace {

bool valid_name(const std::string& name) {
  if (name.empty() || name == "." || name == "..") return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_' ||
           c == '.';
  });
}

}  // namespace

namespace detail {

result<std::string> process_user_sid(HANDLE process) {
  HANDLE raw_token = nullptr;
  if (::OpenProcessToken(process, TOKEN_QUERY, &raw_token) == 0)
    return error::from_win32(::GetLastError(), "OpenProcessToken");
  const os::unique_handle token(raw_token);
  DWORD size = 0;
  (void)::GetTokenInformation(token.get(), TokenUser, nullptr, 0, &size);
  if (size == 0) return error::from_win32(::GetLastError(), "GetTokenInformation", "TokenUser size");
  std::vector<std::byte> buffer(size);
  if (::GetTokenInformation(token.get(), TokenUser, buffer.data(), size, &size) == 0)
    return error::from_win32(::GetLastError(), "GetTokenInformation", "TokenUser");
  const auto* user = reinterpret_cast<const TOKEN_USER*>(buffer.data());
  LPSTR text = nullptr;
  if (::ConvertSidToStringSidA(user->User.Sid, &text) == 0)
    return error::from_win32(::GetLastError(), "ConvertSidToStringSidA");
  std::string out(text);
  ::LocalFree(text);
  return out;
}

result<peer_credentials> identify_process(DWORD pid, DWORD access, os::unique_handle& process) {
  process = os::unique_handle(::OpenProcess(access, FALSE, pid));
  if (!process.valid()) return error::from_win32(::GetLastError(), "OpenProcess", "process " + std::to_string(pid));
  MEMBRIDGE_TRY_ASSIGN(std::string sid,
                       process_user_sid(process.get()).with_context("process " + std::to_string(pid)));
  return peer_credentials{static_cast<std::int32_t>(pid), std::move(sid)};
}

result<user_only_security> user_only_security::create(const std::string& sid) {
  // Protected DACL (no inherited entries), one entry: generic all for `sid`.
  const std::string sddl = "D:P(A;;GA;;;" + sid + ")";
  PSECURITY_DESCRIPTOR d = nullptr;
  if (::ConvertStringSecurityDescriptorToSecurityDescriptorA(sddl.c_str(), SDDL_REVISION_1, &d, nullptr) == 0) {
    const DWORD e = ::GetLastError();
    if (e == ERROR_INVALID_SID || e == ERROR_INVALID_PARAMETER)
      return error(errc::invalid_argument, "user_only_security", "not a SID: '" + sid + "'");
    return error::from_win32(e, "ConvertStringSecurityDescriptorToSecurityDescriptorA", sddl);
  }
  return user_only_security(d);
}

user_only_security::~user_only_security() {
  if (descriptor_ != nullptr) ::LocalFree(descriptor_);
}

SECURITY_ATTRIBUTES user_only_security::attributes() const noexcept {
  SECURITY_ATTRIBUTES sa{};
  sa.nLength = sizeof sa;
  sa.lpSecurityDescriptor = descriptor_;
  sa.bInheritHandle = FALSE;
  return sa;
}

result<os::unique_handle> new_event() {
  os::unique_handle e(::CreateEventA(nullptr, TRUE, FALSE, nullptr));
  if (!e.valid()) return error::from_win32(::GetLastError(), "CreateEventA");
  return e;
}

io_result finish_io(HANDLE file, OVERLAPPED& ov, BOOL started, std::chrono::milliseconds timeout) {
  DWORD bytes = 0;
  if (started == 0) {
    const DWORD e = ::GetLastError();
    if (e != ERROR_IO_PENDING && e != ERROR_MORE_DATA) return {e, 0};
    if (e == ERROR_IO_PENDING) {
      const auto ms = static_cast<DWORD>(std::clamp<long long>(timeout.count(), 0, INT_MAX));
      if (::WaitForSingleObject(ov.hEvent, ms) != WAIT_OBJECT_0) (void)::CancelIoEx(file, &ov);
    }
  }
  if (::GetOverlappedResult(file, &ov, &bytes, TRUE) != 0) return {0, bytes};
  const DWORD e = ::GetLastError();
  return {e == ERROR_OPERATION_ABORTED ? static_cast<DWORD>(ERROR_TIMEOUT) : e, bytes};
}

bool is_pipe_gone(DWORD e) noexcept {
  return e == ERROR_BROKEN_PIPE || e == ERROR_NO_DATA || e == ERROR_PIPE_NOT_CONNECTED;
}

}  // namespace detail

result<std::string> current_user_sid() { return detail::process_user_sid(::GetCurrentProcess()); }

result<std::string> pipe_name_for(const std::string& name) {
  if (!valid_name(name))
    return error(errc::invalid_argument, "ipc::pipe_name_for",
                 "no usable pipe name (letters, digits, '-', '_', '.'): '" + name + "'");
  MEMBRIDGE_TRY_ASSIGN(const std::string sid, current_user_sid());
  return "\\\\.\\pipe\\membridge-" + sid + "-" + name;
}

}  // namespace membridge::ipc
