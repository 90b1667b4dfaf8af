// Windows: dynamic_library over LoadLibraryExA, GetProcAddress and FreeLibrary.
#include <membridge/core/log.hpp>
#include <membridge/os/dynamic_library.hpp>

#include <windows.h>

namespace membridge::os {

result<dynamic_library> dynamic_library::open(const std::string& name) {
  if (name.empty()) return error(errc::invalid_argument, "dynamic_library::open", "empty library name");
  // The default search order, without the current directory when a plain name is given
  // (LOAD_LIBRARY_SEARCH_DEFAULT_DIRS: the application's directory, System32, added directories).
  const bool has_path = name.find_first_of("/\\") != std::string::npos;
  HMODULE module = ::LoadLibraryExA(name.c_str(), nullptr, has_path ? 0 : LOAD_LIBRARY_SEARCH_DEFAULT_DIRS);
  if (module == nullptr) {
    const DWORD code = ::GetLastError();
    error e = error::from_win32(code, "LoadLibraryExA", "loading " + name);
    return error::from_native(errc::driver_unavailable, error_source::win32, code, std::string(e.native_name()),
                              "LoadLibraryExA", "loading " + name);
  }
  return dynamic_library(reinterpret_cast<void*>(module), name);
}

void dynamic_library::reset() noexcept {
  if (handle_ == nullptr) return;
  if (::FreeLibrary(reinterpret_cast<HMODULE>(handle_)) == 0)
    log(log_level::warning, error::from_win32(::GetLastError(), "FreeLibrary", "closing " + name_).message());
  handle_ = nullptr;
  name_.clear();
}

result<void*> dynamic_library::symbol(const std::string& symbol_name) const {
  if (handle_ == nullptr) return error(errc::invalid_argument, "dynamic_library::symbol", "no library is open");
  FARPROC address = ::GetProcAddress(reinterpret_cast<HMODULE>(handle_), symbol_name.c_str());
  if (address == nullptr) {
    const DWORD code = ::GetLastError();
    const error named = error::from_win32(code, "GetProcAddress");
    return error::from_native(errc::driver_unavailable, error_source::win32, code, std::string(named.native_name()),
                              "GetProcAddress", "looking up " + symbol_name + " in " + name_);
  }
  return reinterpret_cast<void*>(address);
}

}  // namespace membridge::os
