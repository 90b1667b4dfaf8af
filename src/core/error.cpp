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
  if (const char* short_name = strerrorname_np(value)) name = short_name;
  else name = "errno " + std::to_string(value);
  name += ": ";
  name += strerrordesc_np(value) ? strerrordesc_np(value) : "unknown error";
  return name;
}

std::string_view basename(std::string_view path) noexcept {
  const auto slash = path.find_last_of("/\\");
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

}  // namespace

error error::from_errno(int errno_value, std::string call, std::string context, std::source_location where) {
  return from_native(category_of_errno(errno_value), error_source::os, errno_value, errno_name(errno_value),
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
