// POSIX: dynamic_library over dlopen, dlsym and dlclose.
#include <membridge/core/log.hpp>
#include <membridge/os/dynamic_library.hpp>

#include <dlfcn.h>

namespace membridge::os {

namespace {

std::string last_dl_error() {
  const char* text = ::dlerror();
  return text != nullptr ? text : "unknown loader error";
}

}  // namespace

result<dynamic_library> dynamic_library::open(const std::string& name) {
  if (name.empty()) return error(errc::invalid_argument, "dynamic_library::open", "empty library name");
  ::dlerror();  // clear a stale message
  void* handle = ::dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr)
    return error::from_native(errc::driver_unavailable, error_source::loader, 0, last_dl_error(), "dlopen",
                              "loading " + name);
  return dynamic_library(handle, name);
}

void dynamic_library::reset() noexcept {
  if (handle_ == nullptr) return;
  ::dlerror();
  if (::dlclose(handle_) != 0) {
    log(log_level::warning, error::from_native(errc::os_error, error_source::loader, 0, last_dl_error(), "dlclose",
                                               "closing " + name_)
                                .message());
  }
  handle_ = nullptr;
  name_.clear();
}

result<void*> dynamic_library::symbol(const std::string& symbol_name) const {
  if (handle_ == nullptr) return error(errc::invalid_argument, "dynamic_library::symbol", "no library is open");
  ::dlerror();
  void* address = ::dlsym(handle_, symbol_name.c_str());
  if (address == nullptr)
    return error::from_native(errc::driver_unavailable, error_source::loader, 0, last_dl_error(), "dlsym",
                              "looking up " + symbol_name + " in " + name_);
  return address;
}

}  // namespace membridge::os
