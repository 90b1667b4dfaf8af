// membridge/os/unique_handle.hpp: an owned and a borrowed Windows NT HANDLE, the Windows
// counterparts of unique_fd and borrowed_fd. Declared on Windows only (empty elsewhere).
#pragma once

#if defined(_WIN32)

#include <membridge/core/result.hpp>

#include <utility>

namespace membridge::os {

class unique_handle;

/// A Windows HANDLE value without <windows.h> in public headers (HANDLE is `void*`).
using native_handle = void*;

/// A HANDLE that is not owned: valid only while its owner keeps it open. Null and
/// INVALID_HANDLE_VALUE both mean "no handle".
class borrowed_handle {
 public:
  /// No handle.
  constexpr borrowed_handle() noexcept = default;
  /// Views `handle`. Ownership: borrowed; the owner keeps it open meanwhile.
  constexpr explicit borrowed_handle(native_handle handle) noexcept : handle_(handle) {}
  /// Views `handle` (the spelling borrowed_fd uses). Ownership: borrowed; the owner keeps it open.
  [[nodiscard]] static constexpr borrowed_handle from_native(native_handle handle) noexcept {
    return borrowed_handle(handle);
  }
  /// Views the handle held by `owner` (no handle if `owner` is empty).
  /// Ownership: `owner` keeps owning it and must outlive this view.
  borrowed_handle(const unique_handle& owner) noexcept;  // NOLINT(google-explicit-constructor)
  /// Viewing a temporary owner would dangle at once.
  borrowed_handle(unique_handle&&) = delete;
  /// The handle. Ownership: not transferred.
  [[nodiscard]] constexpr native_handle get() const noexcept { return handle_; }
  /// True unless null or INVALID_HANDLE_VALUE.
  [[nodiscard]] bool valid() const noexcept;
  /// A new handle to the same object (DuplicateHandle in this process, same access, not inheritable).
  /// Errors: invalid_argument for no handle or a closed one (ERROR_INVALID_HANDLE); the Win32 error.
  /// Ownership: this view is untouched; the caller owns the returned handle.
  [[nodiscard]] result<unique_handle> duplicate() const;

 private:
  native_handle handle_ = nullptr;
};

/// An owned HANDLE, closed (CloseHandle) on destruction. Move-only.
class unique_handle {
 public:
  /// No handle.
  unique_handle() noexcept = default;
  /// Takes ownership of `handle` (null or INVALID_HANDLE_VALUE: no handle).
  /// Ownership: the object owns `handle` from now on.
  explicit unique_handle(native_handle handle) noexcept;
  /// Takes ownership of `handle` (the spelling unique_fd uses).
  /// Ownership: the object owns `handle` from now on.
  [[nodiscard]] static unique_handle from_native(native_handle handle) noexcept { return unique_handle(handle); }
  unique_handle(const unique_handle&) = delete;
  unique_handle& operator=(const unique_handle&) = delete;
  /// Takes over `other`'s handle; `other` becomes empty.
  unique_handle(unique_handle&& other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}
  /// Closes the held handle, then takes over `other`'s.
  unique_handle& operator=(unique_handle&& other) noexcept;
  /// Closes the handle (a failing CloseHandle goes to the log sink).
  ~unique_handle();

  /// A duplicate (DuplicateHandle in this process, same access, not inheritable) of `handle`.
  /// Errors: invalid_argument for no handle; the Win32 error of DuplicateHandle.
  /// Ownership: borrows `handle`; the result is a new handle the caller owns.
  [[nodiscard]] static result<unique_handle> duplicate(borrowed_handle handle);

  /// True when a handle is held.
  [[nodiscard]] bool valid() const noexcept { return handle_ != nullptr; }
  /// The handle. Ownership: stays with this object.
  [[nodiscard]] native_handle get() const noexcept { return handle_; }
  /// A borrowed view of the handle. Ownership: valid while this object holds it.
  [[nodiscard]] borrowed_handle borrow() const noexcept { return borrowed_handle(handle_); }
  /// Gives the handle up without closing it. Ownership: the caller owns the returned handle.
  [[nodiscard]] native_handle release() noexcept { return std::exchange(handle_, nullptr); }
  /// Closes the held handle (if any) and becomes empty.
  void reset() noexcept;

 private:
  native_handle handle_ = nullptr;
};

inline borrowed_handle::borrowed_handle(const unique_handle& owner) noexcept : handle_(owner.get()) {}

}  // namespace membridge::os

#endif  // _WIN32
