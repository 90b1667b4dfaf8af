#include <membridge/core/error.hpp>

#include <cstring>
#include <string>
#include <utility>

namespace membridge {

std::string_view to_string(errc code) noexcept {
  switch (code) {
    case errc::invalid_argument: return "invalid_argument";
    case errc::unsupported: return "unsupported";
    case errc::driver_unavailable: return "driver_unavailable";
    case errc::out_of_memory: return "out_of_memory";
    case errc::device_lost: return "device_lost";
    case errc::os_error: return "os_error";
    case errc::protocol_error: return "protocol_error";
    case errc::timeout: return "timeout";
    case errc::internal: return "internal";
  }
  return "unknown";
}

std::string_view to_string(error_source source) noexcept {
  switch (source) {
    case error_source::membridge: return "membridge";
    case error_source::os: return "os";
    case error_source::cuda: return "cuda";
    case error_source::vulkan: return "vulkan";
    case error_source::gl: return "gl";
    case error_source::loader: return "loader";
    case error_source::win32: return "win32";
  }
  return "unknown";
}

error::error(errc code, std::string call, std::string context, std::source_location where)
    : code_(code), call_(std::move(call)), context_(std::move(context)), where_(where) {}

error error::from_native(errc code, error_source source, std::int64_t native_code, std::string native_name,
                         std::string call, std::string context, std::source_location where) {
  error e(code, std::move(call), std::move(context), where);
  e.source_ = source;
  e.native_code_ = native_code;
  e.native_name_ = std::move(native_name);
  return e;
}

namespace {

errc category_of_errno(int value) noexcept {
  switch (value) {
    case ENOMEM:
    case ENOSPC:
    case EMFILE:
    case ENFILE: return errc::out_of_memory;
    case EINVAL:
    case EBADF: return errc::invalid_argument;
    case ETIMEDOUT:
    case EAGAIN: return errc::timeout;
    case ENOSYS:
    case EOPNOTSUPP: return errc::unsupported;
    default: return errc::os_error;
  }
}

std::string errno_name(int value) {
  std::string name;
#if defined(__GLIBC__)
  if (const char* short_name = strerrorname_np(value)) name = short_name;
  else name = "errno " + std::to_string(value);
  name += ": ";
  name += strerrordesc_np(value) ? strerrordesc_np(value) : "unknown error";
#else
  name = "errno " + std::to_string(value) + ": " + std::strerror(value);
#endif
  return name;
}

/// A Win32 error code's name and category (winerror.h values; the common ones membridge meets).
struct win32_code {
  std::uint32_t value;
  const char* name;
  errc category;
};
constexpr win32_code win32_codes[] = {
    {0, "ERROR_SUCCESS", errc::internal},
    {1, "ERROR_INVALID_FUNCTION", errc::unsupported},
    {2, "ERROR_FILE_NOT_FOUND", errc::os_error},
    {3, "ERROR_PATH_NOT_FOUND", errc::os_error},
    {4, "ERROR_TOO_MANY_OPEN_FILES", errc::out_of_memory},
    {5, "ERROR_ACCESS_DENIED", errc::os_error},
    {6, "ERROR_INVALID_HANDLE", errc::invalid_argument},
    {8, "ERROR_NOT_ENOUGH_MEMORY", errc::out_of_memory},
    {14, "ERROR_OUTOFMEMORY", errc::out_of_memory},
    {50, "ERROR_NOT_SUPPORTED", errc::unsupported},
    {87, "ERROR_INVALID_PARAMETER", errc::invalid_argument},
    {109, "ERROR_BROKEN_PIPE", errc::os_error},
    {120, "ERROR_CALL_NOT_IMPLEMENTED", errc::unsupported},
    {121, "ERROR_SEM_TIMEOUT", errc::timeout},
    {122, "ERROR_INSUFFICIENT_BUFFER", errc::invalid_argument},
    {126, "ERROR_MOD_NOT_FOUND", errc::os_error},
    {127, "ERROR_PROC_NOT_FOUND", errc::os_error},
    {183, "ERROR_ALREADY_EXISTS", errc::os_error},
    {193, "ERROR_BAD_EXE_FORMAT", errc::os_error},
    {231, "ERROR_PIPE_BUSY", errc::os_error},
    {232, "ERROR_NO_DATA", errc::os_error},
    {233, "ERROR_PIPE_NOT_CONNECTED", errc::os_error},
    {234, "ERROR_MORE_DATA", errc::protocol_error},
    {258, "WAIT_TIMEOUT", errc::timeout},
    {535, "ERROR_PIPE_CONNECTED", errc::os_error},
    {995, "ERROR_OPERATION_ABORTED", errc::os_error},
    {997, "ERROR_IO_PENDING", errc::os_error},
    {1450, "ERROR_NO_SYSTEM_RESOURCES", errc::out_of_memory},
    {1460, "ERROR_TIMEOUT", errc::timeout},
};

std::string_view basename(std::string_view path) noexcept {
  const auto slash = path.find_last_of("/\\");
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

}  // namespace

error error::from_errno(int errno_value, std::string call, std::string context, std::source_location where) {
  return from_native(category_of_errno(errno_value), error_source::os, errno_value, errno_name(errno_value),
                     std::move(call), std::move(context), where);
}

error error::from_win32(std::uint32_t last_error, std::string call, std::string context, std::source_location where) {
  for (const win32_code& c : win32_codes)
    if (c.value == last_error) return from_native(c.category, error_source::win32, last_error, c.name, std::move(call),
                                                  std::move(context), where);
  return from_native(errc::os_error, error_source::win32, last_error, "Win32 error " + std::to_string(last_error),
                     std::move(call), std::move(context), where);
}

error& error::add_context(std::string_view outer) & {
  if (outer.empty()) return *this;
  if (!context_.empty()) context_ += ": ";
  context_ += outer;
  return *this;
}

error&& error::add_context(std::string_view outer) && { return std::move(add_context(outer)); }

std::string error::message() const {
  std::string out;
  out += basename(where_.file_name());
  out += ':';
  out += std::to_string(where_.line());
  out += ' ';
  out += call_;
  out += ": ";
  if (source_ == error_source::membridge) {
    out += to_string(code_);
  } else {
    out += native_name_;
    if (source_ != error_source::loader) {
      out += " (";
      out += std::to_string(native_code_);
      out += ')';
    }
  }
  if (!context_.empty()) {
    out += ": ";
    out += context_;
  }
  return out;
}

}  // namespace membridge
