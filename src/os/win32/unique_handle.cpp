// Windows: unique_handle and borrowed_handle over CloseHandle and DuplicateHandle.
#include <membridge/core/log.hpp>
#include <membridge/os/unique_handle.hpp>

#include <windows.h>

namespace membridge::os {

namespace {

bool is_handle(native_handle h) noexcept { return h != nullptr && h != INVALID_HANDLE_VALUE; }

}  // namespace

bool borrowed_handle::valid() const noexcept { return is_handle(handle_); }

result<unique_handle> borrowed_handle::duplicate() const { return unique_handle::duplicate(*this); }

unique_handle::unique_handle(native_handle handle) noexcept : handle_(is_handle(handle) ? handle : nullptr) {}

unique_handle& unique_handle::operator=(unique_handle&& other) noexcept {
  if (this != &other) {
    reset();
    handle_ = std::exchange(other.handle_, nullptr);
  }
  return *this;
}

unique_handle::~unique_handle() { reset(); }

void unique_handle::reset() noexcept {
  if (handle_ == nullptr) return;
  if (::CloseHandle(handle_) == 0)
    log(log_level::warning, error::from_win32(::GetLastError(), "CloseHandle", "closing a handle").message());
  handle_ = nullptr;
}

result<unique_handle> unique_handle::duplicate(borrowed_handle handle) {
  if (!handle.valid()) return error(errc::invalid_argument, "unique_handle::duplicate", "no handle");
  HANDLE copy = nullptr;
  const HANDLE self = ::GetCurrentProcess();
  if (::DuplicateHandle(self, handle.get(), self, &copy, 0, FALSE, DUPLICATE_SAME_ACCESS) == 0)
    return error::from_win32(::GetLastError(), "DuplicateHandle", "duplicating a handle in this process");
  return unique_handle(copy);
}

}  // namespace membridge::os
