// Windows: gl::context::adopt_current_wgl, the WGL context current on this thread with entry points
// from opengl32.dll (wglGetProcAddress, and the DLL's own exports for GL 1.0/1.1).
#include "wgl.hpp"

namespace membridge::gl {

namespace detail {

proc_loader wgl_loader(const wgl_entry_points& wgl, proc_loader fallback) {
  const auto get = wgl.GetProcAddress;
  return [get, fallback = std::move(fallback)](const char* name) -> proc {
    const auto p = reinterpret_cast<proc>(get(name));
    const auto value = reinterpret_cast<std::intptr_t>(p);
    const bool missing = value == 0 || value == 1 || value == 2 || value == 3 || value == -1;
    return missing ? fallback(name) : p;
  };
}

result<context> adopt_wgl(const wgl_entry_points& wgl, const proc_loader& fallback, const adopt_options& options,
                          os::dynamic_library library) {
  constexpr const char* call = "gl::context::adopt_current_wgl";
  if (wgl.GetCurrentContext == nullptr || wgl.GetProcAddress == nullptr)
    return error(errc::driver_unavailable, call, "wglGetCurrentContext or wglGetProcAddress is missing");
  if (wgl.GetCurrentContext() == nullptr)
    return error(errc::invalid_argument, call,
                 "no WGL context is current on this thread (wglGetCurrentContext answered null): make the "
                 "engine's context current first");
  return adopt_current(wgl_loader(wgl, fallback), options, std::move(library));
}

}  // namespace detail

result<context> context::adopt_current_wgl(const adopt_options& options) {
  constexpr const char* call = "gl::context::adopt_current_wgl";
  MEMBRIDGE_TRY_ASSIGN(auto opengl32, os::dynamic_library::open("opengl32.dll").with_context(call));
  MEMBRIDGE_TRY_ASSIGN(void* get_current, opengl32.symbol("wglGetCurrentContext").with_context(call));
  MEMBRIDGE_TRY_ASSIGN(void* get_proc, opengl32.symbol("wglGetProcAddress").with_context(call));
  detail::wgl_entry_points wgl;
  wgl.GetCurrentContext = reinterpret_cast<decltype(wgl.GetCurrentContext)>(get_current);
  wgl.GetProcAddress = reinterpret_cast<decltype(wgl.GetProcAddress)>(get_proc);
  // GL 1.0/1.1 functions: opengl32.dll's exports. The module handle stays valid: `opengl32` (one
  // reference on the DLL) moves into the context's state.
  const HMODULE module = ::GetModuleHandleW(L"opengl32.dll");
  if (module == nullptr) return error::from_win32(::GetLastError(), "GetModuleHandleW", "opengl32.dll");
  const auto fallback = [module](const char* name) -> proc {
    return reinterpret_cast<proc>(::GetProcAddress(module, name));
  };
  return detail::adopt_wgl(wgl, fallback, options, std::move(opengl32));
}

}  // namespace membridge::gl
