// Windows: which handles can be memory or semaphore handles (detail::handle_fd_problem).
#include "../detail/payload.hpp"

#include <windows.h>
#include <winternl.h>

#include <array>
#include <string>

namespace membridge::ipc::detail {

namespace {

/// The object type of `h` ("Section", "Event", "File"...), empty when it cannot be queried.
/// NtQueryObject(ObjectTypeInformation) from ntdll, looked up at run time (Wine 8 has it).
/// GetFileType cannot tell: it answers FILE_TYPE_DISK for a section under Wine.
std::wstring object_type(HANDLE h) {
  using query_fn = LONG(WINAPI*)(HANDLE, OBJECT_INFORMATION_CLASS, PVOID, ULONG, PULONG);
  static const auto query = reinterpret_cast<query_fn>(
      reinterpret_cast<void*>(::GetProcAddress(::GetModuleHandleA("ntdll.dll"), "NtQueryObject")));
  if (query == nullptr) return {};
  alignas(8) std::array<std::byte, 1024> buffer{};
  ULONG size = 0;
  if (query(h, ObjectTypeInformation, buffer.data(), static_cast<ULONG>(buffer.size()), &size) != 0) return {};
  const auto* info = reinterpret_cast<const PUBLIC_OBJECT_TYPE_INFORMATION*>(buffer.data());
  return std::wstring(info->TypeName.Buffer, info->TypeName.Length / sizeof(wchar_t));
}

}  // namespace

std::string handle_fd_problem(os::borrowed_shareable_handle fd) {
  DWORD flags = 0;
  if (!fd.valid() || ::GetHandleInformation(fd.get(), &flags) == 0) return "a value that names no open handle";
  // Memory (a section, a driver's allocation object) and semaphores are none of these.
  const std::wstring type = object_type(fd.get());
  if (type == L"File") return "a file, pipe or device";
  if (type == L"Process" || type == L"Thread" || type == L"Token") return "a process, thread or token";
  if (type == L"Key" || type == L"Directory" || type == L"SymbolicLink") return "a registry key or object directory";
  if (type == L"Desktop" || type == L"WindowStation") return "a desktop or window station";
  return {};
}

std::string handle_fd_problem(const os::shareable_handle& fd) { return handle_fd_problem(fd.borrow()); }

}  // namespace membridge::ipc::detail
