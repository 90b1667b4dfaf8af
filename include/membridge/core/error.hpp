// membridge/core/error.hpp: categorised errors that say which call failed, why, and where.
#pragma once

#include <cstdint>
#include <source_location>
#include <string>
#include <string_view>

namespace membridge {

/// What kind of failure an error is. Callers branch on this, never on message text.
enum class errc : std::uint8_t {
  invalid_argument = 1,  ///< The caller passed something unusable (size 0, range exceeded, wrong state).
  unsupported,           ///< The device, driver or platform lacks a needed feature.
  driver_unavailable,    ///< No usable driver: library missing, too old, stub, or no device.
  out_of_memory,         ///< Device/host memory or a reserved address range is exhausted.
  device_lost,           ///< The GPU faulted or was lost; the context is unusable.
  os_error,              ///< A system call failed (errno in native_code()).
  protocol_error,        ///< A peer sent something malformed.
  timeout,               ///< A wait ran out of time.
  internal,              ///< A bug or an unexpected driver answer; please report it.
};

/// The API an error came from; selects how native_code() is read.
enum class error_source : std::uint8_t {
  membridge = 0,  ///< Raised by membridge's own checks; native_code() is 0.
  os,             ///< POSIX / libc; native_code() is errno.
  cuda,           ///< CUDA driver API; native_code() is a CUresult.
  vulkan,         ///< Vulkan; native_code() is a VkResult.
  gl,             ///< OpenGL / EGL; native_code() is a GLenum or EGLint.
  loader,         ///< dlopen/dlsym; native_code() is 0 and native_name() holds dlerror().
  win32,          ///< The Win32 API; native_code() is a GetLastError() value (ERROR_*).
};

/// Short name of a category, e.g. "out_of_memory".
[[nodiscard]] std::string_view to_string(errc code) noexcept;
/// Short name of a source API, e.g. "cuda".
[[nodiscard]] std::string_view to_string(error_source source) noexcept;

/// An error: category, source API, native code and its name, the failing call, added context and the
/// source location where membridge detected it.
///
/// message() reads like
/// `vmm_allocation.cpp:88 cuMemCreate: CUDA_ERROR_OUT_OF_MEMORY (2): growing to 4 GiB on device 0`.
/// Errors are values: cheap to move, copyable, never thrown.
class error {
 public:
  /// An error raised by membridge's own checks (no native code).
  /// `call` names the operation (e.g. "growable_buffer::grow"); `context` says what was being done.
  error(errc code, std::string call, std::string context = {},
        std::source_location where = std::source_location::current());

  /// An error reported by an underlying API.
  /// `native_code` is the API's own status (CUresult, VkResult, errno...), `native_name` its name
  /// (e.g. "CUDA_ERROR_OUT_OF_MEMORY" or "EBADF: Bad file descriptor").
  [[nodiscard]] static error from_native(errc code, error_source source, std::int64_t native_code,
                                         std::string native_name, std::string call,
                                         std::string context = {},
                                         std::source_location where = std::source_location::current());

  /// An error from `errno` after a failed system call `call`.
  [[nodiscard]] static error from_errno(int errno_value, std::string call, std::string context = {},
                                        std::source_location where = std::source_location::current());
  /// An error from a Win32 call's GetLastError() value, named ("ERROR_ACCESS_DENIED") and
  /// categorised: ERROR_NOT_ENOUGH_MEMORY / ERROR_OUTOFMEMORY / too many open files -> out_of_memory;
  /// ERROR_INVALID_PARAMETER / ERROR_INVALID_HANDLE -> invalid_argument; WAIT_TIMEOUT /
  /// ERROR_SEM_TIMEOUT / ERROR_TIMEOUT -> timeout; ERROR_NOT_SUPPORTED / ERROR_CALL_NOT_IMPLEMENTED ->
  /// unsupported; the rest (access denied, not found, pipe errors, unknown codes) -> os_error.
  /// Available on every platform (the codes are plain numbers), so it is tested on Linux too.
  [[nodiscard]] static error from_win32(std::uint32_t last_error, std::string call, std::string context = {},
                                        std::source_location where = std::source_location::current());

  /// The category to branch on.
  [[nodiscard]] errc code() const noexcept { return code_; }
  /// The API the failure came from.
  [[nodiscard]] error_source source() const noexcept { return source_; }
  /// The API's own status code (0 for membridge-raised errors).
  [[nodiscard]] std::int64_t native_code() const noexcept { return native_code_; }
  /// The name of the native code, empty for membridge-raised errors.
  [[nodiscard]] std::string_view native_name() const noexcept { return native_name_; }
  /// The call or operation that failed.
  [[nodiscard]] std::string_view call() const noexcept { return call_; }
  /// Context added where the error was raised and on the way up, innermost first, joined by ": ".
  [[nodiscard]] std::string_view context() const noexcept { return context_; }
  /// Where membridge detected the failure.
  [[nodiscard]] const std::source_location& where() const noexcept { return where_; }

  /// Appends outer context (what the caller was doing). Returns *this for chaining.
  error& add_context(std::string_view outer) &;
  /// Appends outer context and returns the error by value, for `return std::move(e).add_context(..)`.
  [[nodiscard]] error&& add_context(std::string_view outer) &&;

  /// One readable line: `file:line call: NATIVE_NAME (code): context`, or for membridge-raised errors
  /// `file:line call: category: context`.
  [[nodiscard]] std::string message() const;

 private:
  errc code_;
  error_source source_ = error_source::membridge;
  std::int64_t native_code_ = 0;
  std::string native_name_;
  std::string call_;
  std::string context_;
  std::source_location where_;
};

}  // namespace membridge
